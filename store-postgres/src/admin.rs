//! Operator actions and queries: retry, cancel, pruning in batches, and
//! reservation reconciliation (bulk actions are `bulk.rs`, searching is
//! `search.rs`).
//!
//! Retry and cancel load the row `FOR UPDATE`, apply the shared transition from
//! `duraq_core::driver::transitions`, and then give back what the job held
//! ([`crate::ownership`]). A cancel settles the job's dependents (through
//! [`Tx::finished`]); a retry gives back the dependents its end cancelled
//! ([`crate::dependencies::reopen_dependents`]). Pruning deletes the jobs'
//! dependency edges in the same statement.

use duraq_core::driver::transitions::{operator_cancel, operator_retry};
use duraq_core::inspect::PruneRequest;
use duraq_core::{Error, Job, JobStatus, Result};

use crate::dependencies::reopen_dependents;
use crate::dependencies::DELETE_EDGES_WITH_JOBS;
use crate::ownership::{claim_ownership_if_free, give_back_held, lock_key};
use crate::rows::{lock_job, save_jobs, Loaded};
use crate::tx::Tx;

/// Operator retry of a terminal job; it takes its key back if the key is free.
pub(crate) async fn retry_job(tx: &mut Tx<'_>, id: &str) -> Result<Job> {
    let key: Option<String> = tx
        .db
        .query_opt(
            "SELECT schedule_key FROM {s}.duraq_jobs WHERE id = $1",
            &[&id],
        )
        .await?
        .ok_or_else(|| Error::job_not_found(id))?
        .get(0);
    if let Some(key) = &key {
        lock_key(&tx.db, key).await?;
    }
    let Loaded {
        mut job,
        has_dependents,
        ..
    } = lock_job(&tx.db, id)
        .await?
        .ok_or_else(|| Error::job_not_found(id))?;
    let from = job.status;
    operator_retry(&mut job, tx.now)?;
    tx.change.moved(&job.queue, from, JobStatus::Queued);
    save_jobs(&tx.db, &[(&job, None)]).await?;
    if let Some(key) = &job.schedule_key {
        claim_ownership_if_free(&tx.db, key, &job.id).await?;
    }
    if has_dependents {
        reopen_dependents(&tx.db, tx.now, vec![job.id.clone()], &mut tx.change).await?;
    }
    tx.work = true;
    Ok(job)
}

/// Operator cancel of a queued or handed-off job; returns the row and the
/// status it had (a `handed_off` one's worker must be told).
pub(crate) async fn cancel_job(tx: &mut Tx<'_>, id: &str) -> Result<(Job, JobStatus)> {
    let loaded = lock_job(&tx.db, id)
        .await?
        .ok_or_else(|| Error::job_not_found(id))?;
    cancel_loaded(tx, loaded).await
}

/// Cancels a locked row (see [`cancel_job`]).
pub(crate) async fn cancel_loaded(tx: &mut Tx<'_>, loaded: Loaded) -> Result<(Job, JobStatus)> {
    let Loaded {
        mut job,
        reservation,
        has_dependents,
    } = loaded;
    let from = job.status;
    operator_cancel(&mut job, tx.now)?;
    tx.change.moved(&job.queue, from, JobStatus::Cancelled);
    give_back_held(tx, from, &job, reservation.as_deref(), has_dependents).await?;
    save_jobs(&tx.db, &[(&job, None)]).await?;
    Ok((job, from))
}

/// Deletes one batch of prunable jobs, oldest first; returns how many.
pub(crate) async fn prune_batch(tx: &mut Tx<'_>, req: &PruneRequest, now: i64) -> Result<u64> {
    let cutoff = |status| req.cutoff_ms(status, now);
    let limit = req.batch_size.max(1) as i64;
    // The jobs' progress and log lines go in the same statement.
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH doomed AS (SELECT id FROM {{s}}.duraq_jobs WHERE \
             (status = 'completed' AND completed_at_ms < $1) OR (status = 'failed' AND failed_at_ms < $2) \
             OR (status = 'orphaned' AND orphaned_at_ms < $2) OR (status = 'cancelled' AND cancelled_at_ms < $3) \
             ORDER BY COALESCE(completed_at_ms, failed_at_ms, orphaned_at_ms, cancelled_at_ms), id COLLATE \"C\" \
             LIMIT $4 FOR UPDATE SKIP LOCKED), \
             gone AS (DELETE FROM {{s}}.duraq_jobs AS j USING doomed WHERE j.id = doomed.id \
             RETURNING j.id, j.status, j.queue, j.depends_on), {}, {} SELECT status, queue FROM gone",
            crate::progress::DELETE_WITH_JOBS,
            DELETE_EDGES_WITH_JOBS
        )
    });
    let rows = tx
        .db
        .query(
            sql,
            &[
                &cutoff(JobStatus::Completed),
                &cutoff(JobStatus::Failed),
                &cutoff(JobStatus::Cancelled),
                &limit,
            ],
        )
        .await?;
    for row in &rows {
        let status: String = row.get(0);
        let queue: String = row.get(1);
        tx.change.removed(&queue, status.parse()?);
    }
    Ok(rows.len() as u64)
}

/// Sets each key's reservation count to its handed-off jobs; returns keys changed.
pub(crate) async fn reconcile(tx: &mut Tx<'_>) -> Result<u64> {
    tx.db
        .batch(
            &tx.db
                .names
                .sql("LOCK TABLE {s}.duraq_concurrency IN SHARE ROW EXCLUSIVE MODE"),
        )
        .await?;
    tx.db
        .execute(
            "WITH actual AS (SELECT c.concurrency_key, \
             (SELECT COALESCE(sum(j.cost), 0)::int8 FROM {s}.duraq_jobs AS j \
             WHERE j.status = 'handed_off' AND j.reservation_key = c.concurrency_key) AS n \
             FROM {s}.duraq_concurrency AS c) \
             UPDATE {s}.duraq_concurrency AS c SET active = actual.n FROM actual \
             WHERE actual.concurrency_key = c.concurrency_key AND c.active <> actual.n",
            &[],
        )
        .await
}
