//! Stable schedule keys (`docs/schedule-keys.md`). Ownership lives in
//! `duraq_schedule_keys` (key → owning job) and the `scheduleOrder` high-water mark in
//! `duraq_schedule_high_water`, apart from job rows so that it survives owner
//! release and pruning. Concurrent replacements from many processes serialize on
//! SQLite's single write lock, so exactly one owner remains.

use duraq_core::driver::rules::{
    check_replacement, owner_on_cancel, owner_on_replace, owner_on_wake, OwnerFate,
};
use duraq_core::driver::transitions::{new_job_row, operator_cancel};
use duraq_core::inspect::ScheduledJobs;
use duraq_core::{
    CancelOutcome, Job, KeyedOutcome, NewJob, ReplaceOutcome, Result, RunningOwner, ScheduleKey,
    WakeOutcome,
};
use rusqlite::{params, Connection, OptionalExtension};

use crate::columns::JOB_COLUMNS;
use crate::enqueue::{check_insert, insert_checked};
use crate::error::SqlResult;
use crate::ownership::{persist_transition, Reservation};
use crate::rows::{load_job, query_jobs};
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

/// Persists what a replace or cancel decided for the key's owner `owner`.
fn cancel_owner(tx: &mut Tx<'_>, owner: &Job, fate: OwnerFate) -> Result<()> {
    if fate.cancels() {
        let mut cancelled = owner.clone();
        operator_cancel(&mut cancelled, tx.now)?;
        persist_transition(tx, owner.status, &cancelled, Reservation::Unknown)?;
    }
    Ok(())
}

/// Inserts `job` as the key's new owner; a queued previous owner is cancelled,
/// and so is a running one with [`RunningOwner::Stop`].
pub(crate) fn replace(
    tx: &mut Tx<'_>,
    key: &ScheduleKey,
    job: NewJob,
    running: RunningOwner,
) -> Result<ReplaceOutcome> {
    check_replacement(&job)?;
    check_insert(tx.conn, &job)?;
    let previous = owner(tx.conn, key)?;
    let mut previous_stopped = false;
    if let Some(prev) = previous.as_ref() {
        let fate = owner_on_replace(prev.status, running);
        cancel_owner(tx, prev, fate)?;
        previous_stopped = fate == OwnerFate::Stop;
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
    let Some(job) = owner(tx.conn, key)? else {
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
    let (fate, outcome) = owner_on_cancel(job.status, running);
    cancel_owner(tx, &job, fate)?;
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
    let outcome = owner_on_wake(&job, tx.now);
    if outcome == WakeOutcome::Woken {
        tx.conn
            .prepare_cached("UPDATE duraq_jobs SET scheduled_at_ms = ?2 WHERE id = ?1")
            .db()?
            .execute(params![job.id, tx.now])
            .db()?;
        tx.signal_work();
    }
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
