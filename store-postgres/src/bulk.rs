//! Bulk operator actions (`Operate::act_on_jobs`): retry, cancel, delete or
//! run now many jobs in one transaction, set-based while no job of the batch
//! has dependents, else one job at a time through the single-job paths of
//! [`crate::admin`] (see [`act_on_jobs`]). Deleting jobs deletes their
//! progress, log lines and dependency edges in the same statement; running
//! jobs now is one statement too, dependents or not (it moves only the
//! scheduled time, which no dependent reads).

use duraq_core::driver::transitions::{operator_cancel, operator_retry};
use duraq_core::driver::ChildNotice;
use duraq_core::inspect::{BulkAction, BulkBatch};
use duraq_core::{ErrorCode, Job, JobStatus, Result};

use crate::admin::{cancel_loaded, retry_job};
use crate::dependencies::reopen_dependents;
use crate::dependencies::DELETE_EDGES_WITH_JOBS;
use crate::ownership::{claim_ownership_if_free, lock_key, release_owners, release_reservations};
use crate::rows::{loaded_from_row, lock_job, save_jobs, Loaded, JOB_COLUMNS};
use crate::tx::Tx;

/// `action` on each of `ids` it applies to; returns the tally and the ids of
/// running jobs it cancelled (their workers are told after the commit).
///
/// Set-based, a fixed number of statements per batch rather than several per
/// job (a batch of 500 went from about 430 ms to a few tens): the schedule keys
/// a retry takes back are locked first, in name order (the single-job path's
/// order, key before row), then every row in one `FOR UPDATE` read, each job
/// judged by core's transition, and the changed rows written back in one
/// statement. A job whose status forbids the action, also one that changed
/// since the caller read it, is skipped; an id with no row is missing. A batch
/// holding a job with dependents takes [`act_one_by_one`] instead, after that
/// read (which locked every row): what one job does to its dependents changes
/// how the next job of the batch is judged.
pub(crate) async fn act_on_jobs(
    tx: &mut Tx<'_>,
    action: BulkAction,
    ids: &[String],
) -> Result<(BulkBatch, Vec<String>)> {
    let mut unique: Vec<&String> = ids.iter().collect();
    unique.sort();
    unique.dedup();
    match action {
        BulkAction::Delete => return delete_jobs(tx, &unique).await,
        BulkAction::RunNow => return run_now(tx, &unique).await,
        _ => {}
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
    let rows: Vec<Loaded> = rows.iter().map(loaded_from_row).collect::<Result<_>>()?;
    if rows.iter().any(|l| l.has_dependents) {
        return act_one_by_one(tx, action, ids).await;
    }
    let mut batch = BulkBatch {
        missing: (unique.len() - rows.len()) as u64,
        ..BulkBatch::default()
    };
    let mut changed: Vec<(Loaded, JobStatus)> = Vec::with_capacity(rows.len());
    for loaded in rows {
        let Loaded {
            mut job,
            reservation,
            has_dependents,
        } = loaded;
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
        changed.push((
            Loaded {
                job,
                reservation,
                has_dependents,
            },
            from,
        ));
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
            let retried: Vec<String> = changed
                .iter()
                .filter(|(l, _)| l.has_dependents)
                .map(|(l, _)| l.job.id.clone())
                .collect();
            if !retried.is_empty() {
                reopen_dependents(&tx.db, tx.now, retried, &mut tx.change).await?;
            }
            tx.work |= !changed.is_empty();
        }
        _ => {
            let reservations: Vec<(String, i64)> = changed
                .iter()
                .filter_map(|(l, _)| Some((l.reservation.clone()?, l.job.cost)))
                .collect();
            release_reservations(&tx.db, &reservations).await?;
            let (keys, owners): (Vec<String>, Vec<String>) = changed
                .iter()
                .filter_map(|(l, _)| Some((l.job.schedule_key.clone()?, l.job.id.clone())))
                .unzip();
            release_owners(&tx.db, &keys, &owners).await?;
            for (l, _) in changed.iter().filter(|(l, _)| l.has_dependents) {
                tx.finished(&l.job.id, l.job.status);
            }
            for notice in changed.iter().filter_map(|(l, _)| ChildNotice::of(&l.job)) {
                tx.child_finished(notice);
            }
            stopped = changed
                .iter()
                .filter(|(_, from)| *from == JobStatus::HandedOff)
                .map(|(l, _)| l.job.id.clone())
                .collect();
        }
    }
    Ok((batch, stopped))
}

/// [`act_on_jobs`] when a job of the batch has dependents: each job in the
/// caller's order (each id once) by the single-job path, its dependents settled
/// before the next is judged, so a job the batch cancelled down the graph, or
/// gave back, is judged as it is then, as one call per job would. The rows
/// are already locked, in id order.
async fn act_one_by_one(
    tx: &mut Tx<'_>,
    action: BulkAction,
    ids: &[String],
) -> Result<(BulkBatch, Vec<String>)> {
    let mut batch = BulkBatch::default();
    let mut stopped = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for id in ids.iter().filter(|id| seen.insert(id.as_str())) {
        let Some(loaded) = lock_job(&tx.db, id).await? else {
            batch.missing += 1;
            continue;
        };
        if !action.applies_to(loaded.job.status) {
            batch.skipped += 1;
            continue;
        }
        if action == BulkAction::Retry {
            retry_job(tx, id).await?;
        } else {
            let (_, from) = cancel_loaded(tx, loaded).await?;
            tx.release_dependents().await?;
            if from == JobStatus::HandedOff {
                stopped.push(id.clone());
            }
        }
        batch.changed += 1;
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
             RETURNING id, status, queue, depends_on), {}, {} SELECT status, queue FROM gone",
            crate::progress::DELETE_WITH_JOBS,
            DELETE_EDGES_WITH_JOBS
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

/// The run-now arm of [`act_on_jobs`]: one statement locks the rows of `ids`,
/// moves the scheduled time of the queued ones due later to now (core's
/// [`BulkAction::changes`], in SQL) and counts both; the rest that exist are
/// skipped. Idle workers are woken after the commit, as for an enqueue.
async fn run_now(tx: &mut Tx<'_>, ids: &[&String]) -> Result<(BulkBatch, Vec<String>)> {
    let row = tx
        .db
        .query_one(
            "WITH target AS (SELECT id, status = 'queued' AND scheduled_at_ms > $2 AS later \
             FROM {s}.duraq_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE), \
             moved AS (UPDATE {s}.duraq_jobs AS j SET scheduled_at_ms = $2 FROM target \
             WHERE j.id = target.id AND target.later RETURNING j.id) \
             SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM moved)",
            &[&ids, &tx.now],
        )
        .await?;
    let (found, moved): (i64, i64) = (row.get(0), row.get(1));
    tx.work |= moved > 0;
    let batch = BulkBatch {
        changed: moved as u64,
        skipped: (found - moved) as u64,
        missing: (ids.len() as i64 - found) as u64,
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
