//! Rate limits in PostgreSQL (`docs/queues.md`): the SQL behind core's
//! [`RateWindow`]. Claims of one key take turns on the key's row in
//! `duraq_rate_limits` (`FOR UPDATE SKIP LOCKED`): a claim that finds the row
//! locked by another claim leaves that key's jobs for its next round instead of
//! waiting, so two claims holding different keys can never deadlock. The
//! holder then reads the log in a later statement, whose snapshot includes every
//! start that earlier holders committed before they let go of the row.

use duraq_core::driver::{rate_log_horizon, RateWindow};
use duraq_core::{RateLimit, Result};

use crate::backend::db::Db;

/// Takes the key's turn and reads the newest `limit.max` starts of its log, or
/// `None` when another claim holds the key right now.
pub(crate) async fn lock_window(db: &Db<'_>, limit: &RateLimit) -> Result<Option<RateWindow>> {
    let locked = db
        .query_opt(
            "SELECT 1::int8 FROM {s}.duraq_rate_limits WHERE rate_key = $1 FOR UPDATE SKIP LOCKED",
            &[&limit.key],
        )
        .await?;
    if locked.is_none() {
        return Ok(None);
    }
    let rows = db
        .query(
            "SELECT at_ms FROM {s}.duraq_rate_starts WHERE rate_key = $1 ORDER BY at_ms DESC LIMIT $2",
            &[&limit.key, &limit.max],
        )
        .await?;
    Ok(Some(RateWindow::new(
        rows.iter().map(|r| r.get(0)).collect(),
    )))
}

/// Logs the starts of a claim (one entry per started job) and forgets each
/// key's starts that no claim can need any more.
pub(crate) async fn log_starts(db: &Db<'_>, started: &[RateLimit], now: i64) -> Result<()> {
    if started.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = started.iter().map(|l| l.key.as_str()).collect();
    let horizons: Vec<i64> = started.iter().map(|l| rate_log_horizon(l, now)).collect();
    db.execute(
        "WITH logged AS (INSERT INTO {s}.duraq_rate_starts (rate_key, at_ms) \
         SELECT k, $3 FROM unnest($1::text[]) AS k) \
         DELETE FROM {s}.duraq_rate_starts AS r USING unnest($1::text[], $2::int8[]) AS h(k, horizon) \
         WHERE r.rate_key = h.k AND r.at_ms <= h.horizon",
        &[&keys, &horizons, &now],
    )
    .await?;
    Ok(())
}
