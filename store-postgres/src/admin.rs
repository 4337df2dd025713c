//! Operator actions and queries: retry, cancel, bulk actions, pruning in
//! batches, and reservation reconciliation (searching is `search.rs`).
//!
//! Retry and cancel load the row `FOR UPDATE`, apply the shared transition from
//! `duraq_core::transitions`, and then give back what the job held
//! ([`crate::ownership`]).

use duraq_core::transitions::{operator_cancel, operator_retry};
use duraq_core::{BulkAction, BulkBatch, Error, ErrorCode, Job, JobStatus, PruneRequest, Result};

use crate::ownership::{
    after_leaving_handoff, claim_ownership_if_free, lock_key, release_owners, release_reservations,
};
use crate::rows::{loaded_from_row, lock_job, save_jobs, Loaded, JOB_COLUMNS};
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
    let Loaded { mut job, .. } = lock_job(&tx.db, id)
        .await?
        .ok_or_else(|| Error::job_not_found(id))?;
    let from = job.status;
    operator_retry(&mut job, tx.now)?;
    tx.change.moved(&job.queue, from, JobStatus::Queued);
    save_jobs(&tx.db, &[(&job, None)]).await?;
    if let Some(key) = &job.schedule_key {
        claim_ownership_if_free(&tx.db, key, &job.id).await?;
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
    } = loaded;
    let from = job.status;
    operator_cancel(&mut job, tx.now)?;
    tx.change.moved(&job.queue, from, JobStatus::Cancelled);
    after_leaving_handoff(&tx.db, &job, reservation.as_deref()).await?;
    save_jobs(&tx.db, &[(&job, None)]).await?;
    Ok((job, from))
}

/// `action` on each of `ids` it applies to; returns the tally and the ids of
/// running jobs it cancelled (their workers are told after the commit).
///
/// Set-based, a fixed number of statements per batch rather than several per
/// job (a batch of 500 went from about 430 ms to a few tens): the schedule keys
/// a retry takes back are locked first, in name order (the single-job path's
/// order, key before row), then every row in one `FOR UPDATE` read, each job
/// judged by core's transition, and the changed rows written back in one
/// statement. A job whose status forbids the action, also one that changed
/// since the caller read it, is skipped; an id with no row is missing.
pub(crate) async fn act_on_jobs(
    tx: &mut Tx<'_>,
    action: BulkAction,
    ids: &[String],
) -> Result<(BulkBatch, Vec<String>)> {
    let mut unique: Vec<&String> = ids.iter().collect();
    unique.sort();
    unique.dedup();
    if action == BulkAction::Delete {
        return delete_jobs(tx, &unique).await;
    }
    if action == BulkAction::Retry {
        let rows = tx
            .db
            .query(
                "SELECT DISTINCT schedule_key FROM {s}.duraq_jobs WHERE id = ANY($1) \
                 AND schedule_key IS NOT NULL ORDER BY schedule_key",
                &[&unique],
            )
            .await?;
        for row in &rows {
            lock_key(&tx.db, row.get::<_, &str>(0)).await?;
        }
    }
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE"
    );
    let rows = tx.db.query(&sql, &[&unique]).await?;
    let mut batch = BulkBatch {
        missing: (unique.len() - rows.len()) as u64,
        ..BulkBatch::default()
    };
    let mut changed: Vec<(Loaded, JobStatus)> = Vec::with_capacity(rows.len());
    for row in &rows {
        let Loaded {
            mut job,
            reservation,
        } = loaded_from_row(row)?;
        let from = job.status;
        let moved = action.applies_to(from)
            && moved_on(match action {
                BulkAction::Retry => operator_retry(&mut job, tx.now).map(|_| ()),
                _ => operator_cancel(&mut job, tx.now).map(|_| ()),
            })?;
        if !moved {
            batch.skipped += 1;
            continue;
        }
        tx.change.moved(&job.queue, from, job.status);
        changed.push((Loaded { job, reservation }, from));
    }
    batch.changed = changed.len() as u64;
    let saved: Vec<(&Job, Option<&str>)> = changed.iter().map(|(l, _)| (&l.job, None)).collect();
    save_jobs(&tx.db, &saved).await?;
    let mut stopped = Vec::new();
    match action {
        BulkAction::Retry => {
            for (Loaded { job, .. }, _) in &changed {
                if let Some(key) = &job.schedule_key {
                    claim_ownership_if_free(&tx.db, key, &job.id).await?;
                }
            }
            tx.work |= !changed.is_empty();
        }
        _ => {
            let reservations: Vec<String> = changed
                .iter()
                .filter_map(|(l, _)| l.reservation.clone())
                .collect();
            release_reservations(&tx.db, &reservations).await?;
            let (keys, owners): (Vec<String>, Vec<String>) = changed
                .iter()
                .filter_map(|(l, _)| Some((l.job.schedule_key.clone()?, l.job.id.clone())))
                .unzip();
            release_owners(&tx.db, &keys, &owners).await?;
            stopped = changed
                .iter()
                .filter(|(_, from)| *from == JobStatus::HandedOff)
                .map(|(l, _)| l.job.id.clone())
                .collect();
        }
    }
    Ok((batch, stopped))
}

/// The delete arm of [`act_on_jobs`]: one statement deletes the terminal jobs
/// among `ids`; the rest that still exist are skipped.
async fn delete_jobs(tx: &mut Tx<'_>, ids: &[&String]) -> Result<(BulkBatch, Vec<String>)> {
    // The job's progress and log lines go in the same statement.
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH gone AS (DELETE FROM {{s}}.duraq_jobs WHERE id = ANY($1) \
             AND status IN ('completed', 'failed', 'cancelled', 'orphaned') \
             RETURNING id, status, queue), {} SELECT status, queue FROM gone",
            crate::progress::DELETE_WITH_JOBS
        )
    });
    let rows = tx.db.query(sql, &[&ids]).await?;
    for row in &rows {
        tx.change
            .removed(row.get(1), row.get::<_, String>(0).parse()?);
    }
    let remaining: i64 = tx
        .db
        .query_one(
            "SELECT count(*) FROM {s}.duraq_jobs WHERE id = ANY($1)",
            &[&ids],
        )
        .await?
        .get(0);
    let batch = BulkBatch {
        changed: rows.len() as u64,
        skipped: remaining as u64,
        missing: (ids.len() - rows.len()) as u64 - remaining as u64,
    };
    Ok((batch, Vec::new()))
}

/// A single-job action's result in a batch: `false` when the job moved on
/// (gone, or its status now forbids the action) since it was read.
fn moved_on(result: Result<()>) -> Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::JobNotFound | ErrorCode::InvalidJobState
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
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
             RETURNING j.id, j.status, j.queue), {} SELECT status, queue FROM gone",
            crate::progress::DELETE_WITH_JOBS
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
            "WITH actual AS (SELECT c.concurrency_key, (SELECT count(*) FROM {s}.duraq_jobs AS j \
             WHERE j.status = 'handed_off' AND j.reservation_key = c.concurrency_key) AS n \
             FROM {s}.duraq_concurrency AS c) \
             UPDATE {s}.duraq_concurrency AS c SET active = actual.n FROM actual \
             WHERE actual.concurrency_key = c.concurrency_key AND c.active <> actual.n",
            &[],
        )
        .await
}
