//! Stable schedule keys (`docs/schedule-keys.md`). Ownership lives in
//! `duraq_schedule_keys` (key → owning job) and the `scheduleOrder` high-water mark in
//! `duraq_schedule_high_water`, apart from job rows so that it survives owner
//! release and pruning. Concurrent replacements from many processes serialize on
//! SQLite's single write lock, so exactly one owner remains.

use duraq_core::transitions::{new_job_row, operator_cancel};
use duraq_core::{
    CancelOutcome, Error, ErrorCode, Job, JobStatus, KeyedOutcome, NewJob, ReplaceOutcome, Result,
    RunningOwner, ScheduleKey, ScheduledJobs, WakeOutcome,
};
use rusqlite::{params, Connection, OptionalExtension};

use crate::enqueue::{check_insert, insert_checked};
use crate::error_map::SqlResult;
use crate::lifecycle::{persist_transition, Reservation};
use crate::rows::{load_job, query_jobs, JOB_COLUMNS};
use crate::tx::Tx;

/// The job that currently owns `key`, if its row exists.
fn owner(conn: &Connection, key: &ScheduleKey) -> Result<Option<Job>> {
    let id: Option<String> = conn
        .prepare_cached("SELECT job_id FROM duraq_schedule_keys WHERE key = ?1")
        .db()?
        .query_row([key.as_str()], |r| r.get(0))
        .optional()
        .db()?;
    match id {
        Some(id) => load_job(conn, &id),
        None => Ok(None),
    }
}

/// Inserts `job` as the key's new owner; a queued previous owner is cancelled,
/// and so is a running one with [`RunningOwner::Stop`].
pub(crate) fn replace(
    tx: &mut Tx<'_>,
    key: &ScheduleKey,
    job: NewJob,
    running: RunningOwner,
) -> Result<ReplaceOutcome> {
    if job.idempotency_key().is_some() || job.deduplicate_while_queued() {
        return Err(Error::invalid(
            ErrorCode::UnsupportedOption,
            "replace_scheduled takes neither an idempotency key nor dedupe",
        ));
    }
    check_insert(tx.conn, &job)?;
    let previous = owner(tx.conn, key)?;
    let mut previous_stopped = false;
    if let Some(prev) = previous.as_ref() {
        let stop = prev.status == JobStatus::HandedOff && running == RunningOwner::Stop;
        if prev.status == JobStatus::Queued || stop {
            let mut cancelled = prev.clone();
            operator_cancel(&mut cancelled, tx.now)?;
            persist_transition(tx, prev.status, &cancelled, Reservation::Unknown)?;
            previous_stopped = stop;
        }
    }
    let order: i64 = tx
        .conn
        .prepare_cached(
            "INSERT INTO duraq_schedule_high_water (key, high_water) VALUES (?1, 1) \
             ON CONFLICT (key) DO UPDATE SET high_water = high_water + 1 RETURNING high_water",
        )
        .db()?
        .query_row([key.as_str()], |r| r.get(0))
        .db()?;
    let mut row = new_job_row(&job, tx.now);
    row.schedule_key = Some(key.as_str().to_owned());
    row.schedule_order = Some(order);
    insert_checked(tx, &job, &row)?;
    tx.conn
        .prepare_cached(
            "INSERT INTO duraq_schedule_keys (key, job_id) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id",
        )
        .db()?
        .execute(params![key.as_str(), row.id])
        .db()?;
    tx.signal_work();
    Ok(ReplaceOutcome {
        job_id: row.id,
        previous_status: previous.as_ref().map(|p| p.status),
        previous_job_id: previous.map(|p| p.id),
        previous_stopped,
    })
}

/// Cancels the queued owner; a handed-off owner's key is released (it runs
/// on), or with [`RunningOwner::Stop`] it is cancelled too.
pub(crate) fn cancel(
    tx: &mut Tx<'_>,
    key: &ScheduleKey,
    running: RunningOwner,
) -> Result<KeyedOutcome<CancelOutcome>> {
    let Some(mut job) = owner(tx.conn, key)? else {
        return Ok(KeyedOutcome {
            job_id: None,
            outcome: CancelOutcome::NotFound,
        });
    };
    tx.conn
        .prepare_cached("DELETE FROM duraq_schedule_keys WHERE key = ?1")
        .db()?
        .execute([key.as_str()])
        .db()?;
    let outcome = if job.status == JobStatus::Queued {
        operator_cancel(&mut job, tx.now)?;
        persist_transition(tx, JobStatus::Queued, &job, Reservation::Unknown)?;
        CancelOutcome::Cancelled
    } else if running == RunningOwner::Stop {
        operator_cancel(&mut job, tx.now)?;
        persist_transition(tx, JobStatus::HandedOff, &job, Reservation::Unknown)?;
        CancelOutcome::Stopped
    } else {
        CancelOutcome::HandedOff
    };
    Ok(KeyedOutcome {
        job_id: Some(job.id),
        outcome,
    })
}

/// Makes a future queued owner due now.
pub(crate) fn wake(tx: &mut Tx<'_>, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
    let Some(job) = owner(tx.conn, key)? else {
        return Ok(KeyedOutcome {
            job_id: None,
            outcome: WakeOutcome::NotFound,
        });
    };
    let outcome = match job.status {
        JobStatus::Queued if job.scheduled_at_ms > tx.now => {
            tx.conn
                .prepare_cached("UPDATE duraq_jobs SET scheduled_at_ms = ?2 WHERE id = ?1")
                .db()?
                .execute(params![job.id, tx.now])
                .db()?;
            tx.signal_work();
            WakeOutcome::Woken
        }
        JobStatus::Queued => WakeOutcome::AlreadyDue,
        _ => WakeOutcome::HandedOff,
    };
    Ok(KeyedOutcome {
        job_id: Some(job.id),
        outcome,
    })
}

/// The current owner and, when asked, the newest terminal job of the key.
pub(crate) fn get(
    conn: &Connection,
    key: &ScheduleKey,
    include_latest_terminal: bool,
) -> Result<ScheduledJobs> {
    let current_job = owner(conn, key)?;
    let latest_terminal_job = if include_latest_terminal {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM duraq_jobs WHERE schedule_key = ?1 \
             AND status IN ('completed', 'failed', 'cancelled', 'orphaned') \
             ORDER BY schedule_order DESC, created_at_ms DESC, id DESC LIMIT 1"
        );
        query_jobs(conn, &sql, [key.as_str()])?.pop()
    } else {
        None
    };
    Ok(ScheduledJobs {
        current_job,
        latest_terminal_job,
    })
}
