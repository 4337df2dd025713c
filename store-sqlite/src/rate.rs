//! Rate limits in SQLite (`docs/queues.md`): the log of recent starts per key
//! that a claim reads into a [`RateWindow`] and appends to. The decision itself is
//! core's ([`RateWindow::try_start`]); this file is only its SQL. Claims run in the
//! one write transaction SQLite allows at a time, so no two claims ever decide on
//! the same window at once.

use duraq_core::driver::{rate_log_horizon, RateWindow};
use duraq_core::{RateLimit, Result};
use rusqlite::{params, Connection};

use crate::error::SqlResult;

/// The newest `limit.max` logged starts of the limit's key.
pub(crate) fn load_window(conn: &Connection, limit: &RateLimit) -> Result<RateWindow> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT at_ms FROM duraq_rate_starts WHERE key = ?1 ORDER BY at_ms DESC LIMIT ?2",
        )
        .db()?;
    let starts = stmt
        .query_map(params![limit.key, limit.max], |r| r.get(0))
        .db()?
        .collect::<rusqlite::Result<Vec<i64>>>()
        .db()?;
    Ok(RateWindow::new(starts))
}

/// Logs a start at `now` and forgets the key's starts that no claim can need.
pub(crate) fn log_start(conn: &Connection, limit: &RateLimit, now: i64) -> Result<()> {
    conn.prepare_cached("INSERT INTO duraq_rate_starts (key, at_ms) VALUES (?1, ?2)")
        .db()?
        .execute(params![limit.key, now])
        .db()?;
    conn.prepare_cached("DELETE FROM duraq_rate_starts WHERE key = ?1 AND at_ms <= ?2")
        .db()?
        .execute(params![limit.key, rate_log_horizon(limit, now)])
        .db()?;
    Ok(())
}
