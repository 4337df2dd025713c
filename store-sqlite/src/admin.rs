//! Operator actions and queries: retry, cancel, bulk actions (run now moves
//! only a queued job's scheduled time, as waking a schedule key does), pruning in
//! batches, and reservation reconciliation (searching is `search.rs`).

use duraq_core::driver::transitions::{operator_cancel, operator_retry};
use duraq_core::inspect::{BulkAction, BulkBatch, PruneRequest};
use duraq_core::{Job, JobStatus, Result};
use rusqlite::params;

use crate::error::SqlResult;
use crate::ownership::{persist_transition, Reservation};
use crate::rows::{load_job, require_job};
use crate::tx::Tx;

/// Operator retry of a terminal job; it takes its schedule key back if free,
/// and gives back the dependents its end cancelled.
pub(crate) fn retry_job(tx: &mut Tx<'_>, id: &str) -> Result<Job> {
    let mut job = require_job(tx.conn, id)?;
    let from = job.status;
    operator_retry(&mut job, tx.now)?;
    persist_transition(tx, from, &job, Reservation::Unknown)?;
    if let Some(key) = &job.schedule_key {
        tx.conn
            .prepare_cached("INSERT INTO duraq_schedule_keys (key, job_id) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING")
            .db()?
            .execute(params![key, job.id])
            .db()?;
    }
    crate::dependencies::reopen_dependents(tx, &job.id)?;
    Ok(job)
}

/// Operator cancel of a queued or handed-off job; returns the row and the
/// status it had (a `handed_off` one's worker is told).
pub(crate) fn cancel_job(tx: &mut Tx<'_>, id: &str) -> Result<(Job, JobStatus)> {
    let mut job = require_job(tx.conn, id)?;
    let from = job.status;
    operator_cancel(&mut job, tx.now)?;
    persist_transition(tx, from, &job, Reservation::Unknown)?;
    Ok((job, from))
}

/// `action` on each of `ids` it applies to; returns the tally and the ids of
/// running jobs it cancelled (their workers are told after the commit).
pub(crate) fn act_on_jobs(
    tx: &mut Tx<'_>,
    action: BulkAction,
    ids: &[String],
) -> Result<(BulkBatch, Vec<String>)> {
    let mut batch = BulkBatch::default();
    let mut stopped = Vec::new();
    let mut deleted: Vec<&str> = Vec::new();
    for id in ids {
        let Some(job) = load_job(tx.conn, id)? else {
            batch.missing += 1;
            continue;
        };
        if !action.changes(&job, tx.now) {
            batch.skipped += 1;
            continue;
        }
        match action {
            BulkAction::Retry => {
                retry_job(tx, id)?;
            }
            BulkAction::Cancel => {
                if cancel_job(tx, id)?.1 == JobStatus::HandedOff {
                    stopped.push(id.clone());
                }
            }
            BulkAction::Delete => {
                tx.conn
                    .prepare_cached("DELETE FROM duraq_jobs WHERE id = ?1")
                    .db()?
                    .execute([id])
                    .db()?;
                let depends_on = (!job.depends_on.is_empty())
                    .then(|| crate::rows::json_text(&job.depends_on))
                    .transpose()?;
                crate::dependencies::delete_edges(tx.conn, id, depends_on.as_deref())?;
                tx.removed(&job.queue, job.status);
                deleted.push(id);
            }
            BulkAction::RunNow => {
                tx.conn
                    .prepare_cached("UPDATE duraq_jobs SET scheduled_at_ms = ?2 WHERE id = ?1")
                    .db()?
                    .execute(params![id, tx.now])
                    .db()?;
                tx.signal_work();
            }
        }
        batch.changed += 1;
    }
    crate::progress::delete_for(tx.conn, &deleted)?;
    crate::steps::delete_for(tx.conn, &deleted)?;
    crate::signals::delete_for(tx.conn, &deleted)?;
    Ok((batch, stopped))
}

/// The terminal time the per-status terminal indexes are built on.
const TERMINAL_AT: &str =
    "COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms)";

/// Deletes one batch of prunable jobs (oldest terminal time first); returns how
/// many. Each terminal status is read through its own partial index
/// (`duraq_jobs_completed`, …), whose condition the query names literally so the
/// planner can prove it, so a batch costs the same however many old jobs wait.
pub(crate) fn prune_batch(tx: &mut Tx<'_>, req: &PruneRequest, now: i64) -> Result<u64> {
    let cutoff = |status| req.cutoff_ms(status, now);
    let batch = req.batch_size.max(1);
    let categories = [
        (JobStatus::Completed, cutoff(JobStatus::Completed)),
        (JobStatus::Failed, cutoff(JobStatus::Failed)),
        (JobStatus::Orphaned, cutoff(JobStatus::Orphaned)),
        (JobStatus::Cancelled, cutoff(JobStatus::Cancelled)),
    ];
    let mut victims: Vec<(i64, String, JobStatus)> = Vec::new();
    for (status, cutoff) in categories {
        let Some(cutoff) = cutoff else { continue };
        // The status is one of four constants, never user input.
        let sql = format!(
            "SELECT {TERMINAL_AT}, id FROM duraq_jobs WHERE status = '{}' AND {TERMINAL_AT} < ?1 \
             ORDER BY {TERMINAL_AT}, id LIMIT ?2",
            status.as_str()
        );
        let mut stmt = tx.conn.prepare_cached(&sql).db()?;
        let rows = stmt
            .query_map(params![cutoff, batch as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, status))
            })
            .db()?;
        for row in rows {
            victims.push(row.db()?);
        }
    }
    victims.sort_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
    victims.truncate(batch);
    let victims: Vec<(&str, JobStatus)> = victims.iter().map(|v| (v.1.as_str(), v.2)).collect();
    delete_jobs(tx, &victims)?;
    Ok(victims.len() as u64)
}

/// Deletes finished jobs, each in the status it has, with what only they
/// used: their dependency edges, release backlog entries, progress and log
/// lines. Pruning and an ephemeral job's completion both delete this way.
pub(crate) fn delete_jobs(tx: &mut Tx<'_>, jobs: &[(&str, JobStatus)]) -> Result<()> {
    let mut delete = tx
        .conn
        .prepare_cached("DELETE FROM duraq_jobs WHERE id = ?1 RETURNING queue, depends_on")
        .db()?;
    for (id, status) in jobs {
        let (queue, depends_on): (String, Option<String>) = delete
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?;
        crate::dependencies::delete_edges(tx.conn, id, depends_on.as_deref())?;
        tx.removed(&queue, *status);
    }
    let ids: Vec<&str> = jobs.iter().map(|(id, _)| *id).collect();
    crate::progress::delete_for(tx.conn, &ids)?;
    crate::steps::delete_for(tx.conn, &ids)?;
    crate::signals::delete_for(tx.conn, &ids)
}

/// Sets every reservation count to the cost of the handed-off jobs holding its key.
pub(crate) fn reconcile(tx: &mut Tx<'_>) -> Result<u64> {
    let changed = tx
        .conn
        .prepare_cached(
            "WITH held AS (SELECT c.key, (SELECT COALESCE(SUM(j.cost), 0) FROM duraq_jobs AS j \
             WHERE j.status = 'handed_off' AND j.reservation_key = c.key) AS n \
             FROM duraq_concurrency AS c) \
             UPDATE duraq_concurrency AS c SET active_count = held.n FROM held \
             WHERE held.key = c.key AND c.active_count != held.n",
        )
        .db()?
        .execute([])
        .db()?;
    Ok(changed as u64)
}
