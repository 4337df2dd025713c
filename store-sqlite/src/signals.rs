//! Signals (`docs/durable.md`): a row per job and signal name in
//! `duraq_job_signals`, deleted with the job ([`delete_for`]). A delivery
//! reads the job and the name's stored payload in the write transaction and
//! does what [`plan_signal`] says; a job waiting for that signal becomes
//! `queued`. The waits whose time is up are found through the partial index
//! `duraq_jobs_awaiting` (pending jobs waiting for a signal, by timeout).
//!
//! Every transition delivers a finished child's outcome through here
//! ([`crate::ownership`]), so this module writes its own one transition (a
//! wait ended) rather than through `ownership`, which would make the two
//! import each other.

use duraq_core::driver::rules::{give_back, plan_signal, GiveBack, SignalPlan};
use duraq_core::driver::transitions::end_wait;
use duraq_core::inspect::SignalRecord;
use duraq_core::{Job, JobStatus, Result, Signalled};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use crate::columns::JOB_COLUMNS;
use crate::error::SqlResult;
use crate::rows::{load_job, query_jobs, save_job};
use crate::tx::Tx;

/// Delivers one signal (the input already checked).
pub(crate) fn signal(
    tx: &mut Tx<'_>,
    job_id: &str,
    name: &str,
    payload: &Value,
) -> Result<Signalled> {
    let job = load_job(tx.conn, job_id)?;
    let stored = stored(tx.conn, job_id, name)?;
    let plan = plan_signal(job_id, job.as_ref(), name, payload, stored.as_ref())?;
    let SignalPlan::Store { wake } = plan else {
        return Ok(Signalled {
            replayed: true,
            woke: false,
        });
    };
    let text = serde_json::to_string(payload).expect("JSON values serialize");
    tx.conn
        .prepare_cached(
            "INSERT INTO duraq_job_signals (job_id, name, payload, at_ms) VALUES (?1, ?2, ?3, ?4)",
        )
        .db()?
        .execute(params![job_id, name, text, tx.now])
        .db()?;
    if let (true, Some(job)) = (wake, job) {
        end_waiting(tx, job)?;
    }
    Ok(Signalled {
        replayed: false,
        woke: wake,
    })
}

/// Ends the wait of `job` (`pending`, waiting for a signal): `queued`, due
/// now, saved and counted; its id. A waiting job holds no reservation, key
/// or turn to give back: workers are woken.
fn end_waiting(tx: &mut Tx<'_>, mut job: Job) -> Result<String> {
    end_wait(&mut job, tx.now);
    save_job(tx.conn, &job)?;
    tx.moved(&job.queue, JobStatus::Pending, job.status);
    let GiveBack {
        reservation,
        schedule_key,
        dependents,
        wake_workers,
        parent,
    } = give_back(JobStatus::Pending, &job);
    debug_assert!(!(reservation || schedule_key || dependents || parent));
    if wake_workers {
        tx.signal_work();
    }
    Ok(job.id)
}

/// The payload job `job_id` holds as signal `name`.
pub(crate) fn stored(conn: &Connection, job_id: &str, name: &str) -> Result<Option<Value>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT payload FROM duraq_job_signals WHERE job_id = ?1 AND name = ?2")
        .db()?
        .query_row([job_id, name], |r| r.get(0))
        .optional()
        .db()?;
    text.map(|t| payload_of(name, &t)).transpose()
}

fn payload_of(name: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| duraq_core::Error::backend(format!("signal {name:?} holds no JSON"), e))
}

/// Ends up to `limit` waits whose time is up, oldest first; the ids, sorted.
pub(crate) fn end_timed_out_waits(tx: &mut Tx<'_>, limit: usize) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM duraq_jobs INDEXED BY duraq_jobs_awaiting \
         WHERE status = 'pending' AND awaiting_signal IS NOT NULL AND scheduled_at_ms <= ?1 \
         ORDER BY scheduled_at_ms LIMIT ?2"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let due = query_jobs(tx.conn, &sql, params![tx.now, limit])?;
    let mut ids = Vec::with_capacity(due.len());
    for job in due {
        ids.push(end_waiting(tx, job)?);
    }
    ids.sort_unstable();
    Ok(ids)
}

/// A job's signals, by time then name.
pub(crate) fn get(conn: &Connection, job_id: &str) -> Result<Vec<SignalRecord>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT name, payload, at_ms FROM duraq_job_signals WHERE job_id = ?1 \
             ORDER BY at_ms, name",
        )
        .db()?;
    let rows = stmt
        .query_map([job_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    rows.into_iter()
        .map(|(name, text, at_ms)| {
            Ok(SignalRecord {
                payload: payload_of(&name, &text)?,
                name,
                at_ms,
            })
        })
        .collect()
}

/// Deletes the signals of `ids` (jobs being deleted), one statement.
pub(crate) fn delete_for(conn: &Connection, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(ids).expect("strings serialize");
    conn.prepare_cached(
        "DELETE FROM duraq_job_signals WHERE job_id IN (SELECT value FROM json_each(?1))",
    )
    .db()?
    .execute([&json])
    .db()?;
    Ok(())
}
