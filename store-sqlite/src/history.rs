//! Throughput history (`docs/history.md`): the outcome totals kept on
//! `duraq_queue_counts` (added there by [`crate::counts::apply_change`]) and the
//! per-minute samples of `duraq_history`, keyed by (minute, queue).
//!
//! Sampling is one `INSERT … SELECT` from the queue rows, guarded by "this minute
//! has no sample yet", so the first sampler of a minute wins whatever the number
//! of processes (SQLite's one writer makes the check and the insert atomic), and
//! one `DELETE` of samples older than the retention through the primary key.
//! Neither touches a count, so the revision stays.

use duraq_core::driver::{history_baseline, history_cutoff};
use duraq_core::inspect::{history_minute, HistorySample, OutcomeTotals, QueueTotals};
use duraq_core::Result;
use rusqlite::{params, Connection, Row};

use crate::error::SqlResult;
use crate::tx::Tx;

fn totals_at(row: &Row<'_>, first: usize) -> rusqlite::Result<OutcomeTotals> {
    let mut a = [0i64; 6];
    for (i, slot) in a.iter_mut().enumerate() {
        *slot = row.get(first + i)?;
    }
    Ok(OutcomeTotals::from_array(a))
}

/// Every queue's totals, by name (byte order).
pub(crate) fn outcome_totals(conn: &Connection) -> Result<Vec<QueueTotals>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT queue, enqueued_total, completed_total, failed_total, retried_total, \
             cancelled_total, orphaned_total FROM duraq_queue_counts ORDER BY queue",
        )
        .db()?;
    let rows = stmt
        .query_map([], |r| {
            Ok(QueueTotals {
                queue: r.get(0)?,
                totals: totals_at(r, 1)?,
            })
        })
        .db()?;
    rows.map(|r| r.db()).collect()
}

/// Samples every queue for the minute of `tx.now` unless it has samples, and
/// deletes samples older than the retention; `true` if this call sampled. The
/// first sample ever comes after a zero baseline ([`history_baseline`]).
pub(crate) fn record(tx: &mut Tx<'_>) -> Result<bool> {
    let minute = history_minute(tx.now);
    let (sampled, oldest): (bool, Option<i64>) = tx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM duraq_history), (SELECT min(created_at_ms) FROM duraq_jobs)",
        )
        .db()?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?;
    if !sampled {
        tx.conn
            .prepare_cached(
                "INSERT INTO duraq_history (minute_ms, queue, enqueued, completed, failed, retried, \
                 cancelled, orphaned) SELECT ?1, queue, 0, 0, 0, 0, 0, 0 FROM duraq_queue_counts",
            )
            .db()?
            .execute([history_baseline(minute, oldest)])
            .db()?;
    }
    tx.conn
        .prepare_cached("DELETE FROM duraq_history WHERE minute_ms < ?1")
        .db()?
        .execute([history_cutoff(tx.now)])
        .db()?;
    let inserted = tx
        .conn
        .prepare_cached(
            "INSERT INTO duraq_history (minute_ms, queue, enqueued, completed, failed, retried, \
             cancelled, orphaned) SELECT ?1, queue, enqueued_total, completed_total, failed_total, \
             retried_total, cancelled_total, orphaned_total FROM duraq_queue_counts \
             WHERE NOT EXISTS (SELECT 1 FROM duraq_history WHERE minute_ms = ?1) \
             ON CONFLICT (minute_ms, queue) DO NOTHING",
        )
        .db()?
        .execute(params![minute])
        .db()?;
    Ok(inserted > 0)
}

/// Samples of minutes from `since_ms` on, by minute then queue.
pub(crate) fn since(conn: &Connection, since_ms: i64) -> Result<Vec<HistorySample>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT minute_ms, queue, enqueued, completed, failed, retried, cancelled, orphaned \
             FROM duraq_history WHERE minute_ms >= ?1 ORDER BY minute_ms, queue",
        )
        .db()?;
    let rows = stmt
        .query_map([since_ms], |r| {
            Ok(HistorySample {
                minute_ms: r.get(0)?,
                queue: r.get(1)?,
                totals: totals_at(r, 2)?,
            })
        })
        .db()?;
    rows.map(|r| r.db()).collect()
}
