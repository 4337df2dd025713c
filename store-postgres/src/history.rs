//! Throughput history (`docs/history.md`): the outcome totals kept on
//! `duraq_queue_count_shards` (added there by the same upsert that adds the
//! per-queue deltas, [`crate::counts`]) and the per-minute samples of
//! `duraq_history`, keyed by (minute, queue).
//!
//! Sampling is one `INSERT … SELECT` summing each queue's shard rows, guarded by
//! "this minute has no sample yet" and `ON CONFLICT DO NOTHING`: two samplers of
//! one minute racing both pass the guard, and the second one's rows wait on the
//! first's keys and are dropped, so the first sampler of a minute wins. Old
//! samples go with one `DELETE` through the primary key. Neither touches a
//! count row, so the revision stays and no hot row is written.

use crate::backend::row::Row;
use duraq_core::driver::{history_baseline, history_cutoff};
use duraq_core::inspect::{history_minute, HistorySample, OutcomeTotals, QueueTotals};
use duraq_core::Result;

use crate::backend::db::Db;
use crate::tx::Tx;

fn totals_at(row: &Row, first: usize) -> OutcomeTotals {
    OutcomeTotals::from_array(std::array::from_fn(|i| row.get(first + i)))
}

/// Every queue's totals (summed over its shard rows), by name (byte order).
pub(crate) async fn outcome_totals(db: &Db<'_>) -> Result<Vec<QueueTotals>> {
    let rows = db
        .query(
            "SELECT queue, sum(enqueued_total)::int8, sum(completed_total)::int8, \
             sum(failed_total)::int8, sum(retried_total)::int8, sum(cancelled_total)::int8, \
             sum(orphaned_total)::int8 FROM {s}.duraq_queue_count_shards GROUP BY queue \
             ORDER BY queue COLLATE \"C\"",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| QueueTotals {
            queue: r.get(0),
            totals: totals_at(r, 1),
        })
        .collect())
}

/// Samples every queue for the minute of `tx.now` unless it has samples, and
/// deletes samples older than the retention; `true` if this call sampled. The
/// first sample ever comes after a zero baseline ([`history_baseline`]).
pub(crate) async fn record(tx: &mut Tx<'_>) -> Result<bool> {
    let minute = history_minute(tx.now);
    let row = tx
        .db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM {s}.duraq_history), \
             (SELECT min(created_at_ms) FROM {s}.duraq_jobs)",
            &[],
        )
        .await?;
    let (sampled, oldest): (bool, Option<i64>) = (row.get(0), row.get(1));
    if !sampled {
        tx.db
            .execute(
                "INSERT INTO {s}.duraq_history (minute_ms, queue, enqueued, completed, failed, \
                 retried, cancelled, orphaned) SELECT DISTINCT $1::int8, queue, 0, 0, 0, 0, 0, 0 \
                 FROM {s}.duraq_queue_count_shards ON CONFLICT (minute_ms, queue) DO NOTHING",
                &[&history_baseline(minute, oldest)],
            )
            .await?;
    }
    tx.db
        .execute(
            "DELETE FROM {s}.duraq_history WHERE minute_ms < $1",
            &[&history_cutoff(tx.now)],
        )
        .await?;
    let inserted = tx
        .db
        .execute(
            "INSERT INTO {s}.duraq_history (minute_ms, queue, enqueued, completed, failed, \
             retried, cancelled, orphaned) SELECT $1::int8, queue, sum(enqueued_total)::int8, \
             sum(completed_total)::int8, sum(failed_total)::int8, sum(retried_total)::int8, \
             sum(cancelled_total)::int8, sum(orphaned_total)::int8 \
             FROM {s}.duraq_queue_count_shards \
             WHERE NOT EXISTS (SELECT 1 FROM {s}.duraq_history WHERE minute_ms = $1::int8) \
             GROUP BY queue ON CONFLICT (minute_ms, queue) DO NOTHING",
            &[&minute],
        )
        .await?;
    Ok(inserted > 0)
}

/// Samples of minutes from `since_ms` on, by minute then queue.
pub(crate) async fn since(db: &Db<'_>, since_ms: i64) -> Result<Vec<HistorySample>> {
    let rows = db
        .query(
            "SELECT minute_ms, queue, enqueued, completed, failed, retried, cancelled, orphaned \
             FROM {s}.duraq_history WHERE minute_ms >= $1 ORDER BY minute_ms, queue COLLATE \"C\"",
            &[&since_ms],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| HistorySample {
            minute_ms: r.get(0),
            queue: r.get(1),
            totals: totals_at(r, 2),
        })
        .collect())
}
