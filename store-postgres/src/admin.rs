//! Everything that moves a job after its claim: fenced reports, recovery of lost
//! leases, operator retry and cancel, pruning and reservation reconciliation.
//!
//! Each loads the row `FOR UPDATE`, checks it (the lease for reports), applies the
//! shared transition from `duraq_core::transitions`, and then gives back what the
//! job held: its concurrency reservation when it leaves `handed_off`, and its
//! schedule key when it becomes terminal (only if the key still points at it).

use std::collections::HashMap;

use duraq_core::transitions::{apply_outcome, operator_cancel, operator_retry, recover_lost};
use duraq_core::{Error, Job, JobStatus, Lease, Outcome, PruneRequest, Result};

use crate::backend::db::Db;
use crate::claim::{release_reservation, release_reservations, BY_KEY_ONLY};
use crate::ownership::{claim_ownership_if_free, lock_key, release_owner, release_owners};
use crate::rows::{loaded_from_row, lock_job, save_jobs, Loaded, JOB_COLUMNS};
use crate::tx::Tx;

/// Gives back what a job that just left `handed_off` (or became terminal) held.
async fn after_leaving_handoff(db: &Db<'_>, job: &Job, reservation: Option<&str>) -> Result<()> {
    release_reservation(db, reservation).await?;
    if job.status.is_terminal() {
        release_owner(db, job.schedule_key.as_deref(), &job.id).await?;
    }
    Ok(())
}

/// Fenced reports, in order: each `false`, changing nothing, unless its lease
/// is current when its turn comes. All rows are locked in one statement (in id
/// order, so concurrent batches cannot deadlock on them), the transitions run in
/// memory, and reservations, schedule keys and rows are written back with one
/// statement each.
pub(crate) async fn report_many(
    tx: &mut Tx<'_>,
    reports: &[(Lease, Outcome)],
) -> Result<Vec<bool>> {
    if crate::complete::all_completions(reports) {
        return crate::complete::complete_many(tx, reports).await;
    }
    let mut ids: Vec<&str> = reports.iter().map(|(l, _)| l.job_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    // A report never reads `args`: they load as JSON null, not sent and parsed.
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        let columns = JOB_COLUMNS.replacen(", args,", ", 'null'::text,", 1);
        format!(
            "SELECT {columns} FROM {{s}}.duraq_jobs WHERE id = ANY($1) ORDER BY id COLLATE \"C\" FOR UPDATE"
        )
    });
    let mut loaded: HashMap<String, Loaded> = HashMap::with_capacity(ids.len());
    // Sent together (one round trip), the setting first (`biased`: polled in
    // this order), so it applies to the lookup.
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&ids];
    let (_, rows) = tokio::try_join!(
        biased;
        tx.db.execute(BY_KEY_ONLY, &[]),
        tx.db.query(sql, &params)
    )?;
    for row in rows {
        let l = loaded_from_row(&row)?;
        loaded.insert(l.job.id.clone(), l);
    }
    let mut applied = Vec::with_capacity(reports.len());
    let mut changed: Vec<&str> = Vec::new();
    let mut released: Vec<String> = Vec::new();
    let mut keys: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for (lease, outcome) in reports {
        let current = loaded.get_mut(&lease.job_id).filter(|l| {
            l.job.status == JobStatus::HandedOff
                && l.job.handoff_id.as_deref() == Some(lease.handoff_id.as_str())
        });
        let Some(Loaded { job, reservation }) = current else {
            applied.push(false);
            continue;
        };
        apply_outcome(job, outcome, tx.now);
        tx.change
            .moved(&job.queue, JobStatus::HandedOff, job.status);
        released.extend(reservation.take());
        if let (true, Some(key)) = (job.status.is_terminal(), &job.schedule_key) {
            keys.0.push(key.clone());
            keys.1.push(job.id.clone());
        }
        changed.push(lease.job_id.as_str());
        applied.push(true);
    }
    if changed.is_empty() {
        return Ok(applied);
    }
    release_reservations(&tx.db, &released).await?;
    release_owners(&tx.db, &keys.0, &keys.1).await?;
    changed.sort_unstable();
    changed.dedup();
    let rows: Vec<(&Job, Option<&str>)> =
        changed.iter().map(|id| (&loaded[*id].job, None)).collect();
    save_jobs(&tx.db, &rows).await?;
    tx.work = true;
    Ok(applied)
}

/// Recovers the leases of workers not heard from since `now - stale_after_ms`.
pub(crate) async fn recover_stale(tx: &mut Tx<'_>, stale_after_ms: i64) -> Result<Vec<String>> {
    let cutoff = tx.now.saturating_sub(stale_after_ms);
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs AS j WHERE j.status = 'handed_off' AND NOT EXISTS \
         (SELECT 1 FROM {{s}}.duraq_workers AS w WHERE w.worker_id = j.worker_id AND w.last_heartbeat_ms >= $1) \
         ORDER BY j.id COLLATE \"C\" FOR UPDATE OF j SKIP LOCKED"
    );
    let rows = tx.db.query(&sql, &[&cutoff]).await?;
    let mut lost = rows
        .iter()
        .map(loaded_from_row)
        .collect::<Result<Vec<_>>>()?;
    for Loaded { job, reservation } in &mut lost {
        recover_lost(job, tx.now);
        tx.change
            .moved(&job.queue, JobStatus::HandedOff, job.status);
        after_leaving_handoff(&tx.db, job, reservation.as_deref()).await?;
    }
    let saved: Vec<(&Job, Option<&str>)> = lost.iter().map(|l| (&l.job, None)).collect();
    save_jobs(&tx.db, &saved).await?;
    if !lost.is_empty() {
        tx.work = true;
    }
    let forget = duraq_core::worker_forget_cutoff_ms(tx.now, stale_after_ms);
    tx.db
        .execute(
            "DELETE FROM {s}.duraq_workers WHERE last_heartbeat_ms < $1",
            &[&forget],
        )
        .await?;
    let mut ids: Vec<String> = lost.into_iter().map(|l| l.job.id).collect();
    ids.sort_unstable();
    Ok(ids)
}

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

/// Deletes one batch of prunable jobs, oldest first; returns how many.
pub(crate) async fn prune_batch(tx: &mut Tx<'_>, req: &PruneRequest, now: i64) -> Result<u64> {
    let cutoff = |status| req.cutoff_ms(status, now);
    let limit = req.batch_size.max(1) as i64;
    let rows = tx
        .db
        .query(
            "WITH doomed AS (SELECT id FROM {s}.duraq_jobs WHERE \
             (status = 'completed' AND completed_at_ms < $1) OR (status = 'failed' AND failed_at_ms < $2) \
             OR (status = 'orphaned' AND orphaned_at_ms < $2) OR (status = 'cancelled' AND cancelled_at_ms < $3) \
             ORDER BY COALESCE(completed_at_ms, failed_at_ms, orphaned_at_ms, cancelled_at_ms), id COLLATE \"C\" \
             LIMIT $4 FOR UPDATE SKIP LOCKED) \
             DELETE FROM {s}.duraq_jobs AS j USING doomed WHERE j.id = doomed.id RETURNING j.status, j.queue",
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
