//! Signals (`docs/durable.md`): a row per job and signal name in
//! `duraq_job_signals`, the payload JSON as text (it comes back as sent),
//! deleted with the job ([`crate::progress::DELETE_WITH_JOBS`]; an ephemeral
//! job's row is marked, as for [`crate::steps`]).
//!
//! A delivery locks the job row (`FOR UPDATE`) and reads the name's payload
//! in one statement, then does what [`plan_signal`] says. A report of a
//! wait locks the same row before it looks for the signal
//! ([`delivered`]), so whichever commits second sees the other: a signal is
//! never stored while its wait is written as if it had not come. The waits
//! whose time is up are found through the partial index
//! `duraq_jobs_awaiting` on the live partition.
//!
//! The functions here take the transaction's connection, clock and count
//! change rather than the `Tx`, and write their one transition (a wait
//! ended) themselves: the `Tx` delivers a finished child's outcome through
//! here before it commits, so this module must not need it.

use duraq_core::driver::rules::{give_back, plan_signal, GiveBack, SignalPlan};
use duraq_core::driver::transitions::end_wait;
use duraq_core::driver::CountChange;
use duraq_core::inspect::SignalRecord;
use duraq_core::{JobStatus, Result, Signalled};
use serde_json::Value;

use crate::backend::db::Db;
use crate::error::corrupt;
use crate::rows::{loaded_from_row, save_jobs, Loaded, JOB_COLUMNS};

/// What a delivery writes with: the transaction's connection, its clock
/// reading, and its count change.
pub(crate) struct Writes<'t, 'a> {
    pub db: &'t Db<'a>,
    pub now: i64,
    pub change: &'t mut CountChange,
}

/// Stores a signal of a kept job.
const INSERT: &str = "INSERT INTO {s}.duraq_job_signals (job_id, name, payload, at_ms) \
     VALUES ($1, $2, $3, $4)";

/// Stores a signal of an ephemeral job, marking its row as having signals
/// to delete with it ([`crate::ephemeral`]).
const INSERT_MARKING: &str = "WITH marked AS (UPDATE {s}.duraq_jobs SET has_durable_rows = true \
     WHERE id = $1 AND NOT has_durable_rows) \
     INSERT INTO {s}.duraq_job_signals (job_id, name, payload, at_ms) VALUES ($1, $2, $3, $4)";

/// Delivers one signal (the input already checked); a job it wakes is
/// work for the workers (`woke`).
pub(crate) async fn signal(
    tx: Writes<'_, '_>,
    job_id: &str,
    name: &str,
    payload: &Value,
) -> Result<Signalled> {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "SELECT {JOB_COLUMNS}, (SELECT payload FROM {{s}}.duraq_job_signals \
             WHERE job_id = $1 AND name = $2) AS stored_payload \
             FROM {{s}}.duraq_jobs WHERE id = $1 FOR UPDATE"
        )
    });
    let row = tx.db.query_opt(sql, &[&job_id, &name]).await?;
    let (loaded, stored) = match &row {
        None => (None, None),
        Some(r) => {
            let stored: Option<String> = r.get("stored_payload");
            let stored = stored.map(|t| payload_of(name, &t)).transpose()?;
            (Some(loaded_from_row(r)?), stored)
        }
    };
    let job = loaded.as_ref().map(|l| &l.job);
    let SignalPlan::Store { wake } = plan_signal(job_id, job, name, payload, stored.as_ref())?
    else {
        return Ok(Signalled {
            replayed: true,
            woke: false,
        });
    };
    let text = serde_json::to_string(payload).expect("JSON values serialize");
    let ephemeral = job.is_some_and(|j| !j.keep_completed);
    tx.db
        .execute(
            if ephemeral { INSERT_MARKING } else { INSERT },
            &[&job_id, &name, &text, &tx.now],
        )
        .await?;
    if let (true, Some(loaded)) = (wake, loaded) {
        end_waits(tx, vec![loaded]).await?;
    }
    Ok(Signalled {
        replayed: false,
        woke: wake,
    })
}

/// Ends the waits of `waiting` (rows locked by the caller): `queued`, due
/// now. A waiting job holds no reservation, key or turn to give back; the
/// caller wakes the workers.
async fn end_waits(tx: Writes<'_, '_>, mut waiting: Vec<Loaded>) -> Result<()> {
    for Loaded { job, .. } in &mut waiting {
        end_wait(job, tx.now);
        tx.change.moved(&job.queue, JobStatus::Pending, job.status);
        let GiveBack {
            reservation,
            schedule_key,
            dependents,
            wake_workers: _,
            parent,
        } = give_back(JobStatus::Pending, job);
        debug_assert!(!(reservation || schedule_key || dependents || parent));
    }
    let rows: Vec<_> = waiting.iter().map(|l| (&l.job, None)).collect();
    save_jobs(tx.db, &rows).await
}

/// Of the waits `waits` ((job id, signal name), rows already locked), those
/// whose signal has been delivered.
pub(crate) async fn delivered(db: &Db<'_>, waits: &[(&str, &str)]) -> Result<Vec<String>> {
    if waits.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, names): (Vec<&str>, Vec<&str>) = waits.iter().copied().unzip();
    let rows = db
        .query(
            "SELECT s.job_id FROM unnest($1::text[], $2::text[]) AS w(job_id, name) \
             JOIN {s}.duraq_job_signals AS s ON s.job_id = w.job_id AND s.name = w.name",
            &[&ids, &names],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Ends up to `limit` waits whose time is up, oldest first (rows another
/// transaction holds are skipped); the ids, sorted.
pub(crate) async fn end_timed_out_waits(tx: Writes<'_, '_>, limit: usize) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE status = 'pending' \
         AND awaiting_signal IS NOT NULL AND scheduled_at_ms <= $1 \
         ORDER BY scheduled_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.db.query(&sql, &[&tx.now, &limit]).await?;
    let due = rows
        .iter()
        .map(loaded_from_row)
        .collect::<Result<Vec<_>>>()?;
    let mut ids: Vec<String> = due.iter().map(|l| l.job.id.clone()).collect();
    end_waits(tx, due).await?;
    ids.sort_unstable();
    Ok(ids)
}

/// A job's signals, by time then name, in one statement.
pub(crate) async fn get(db: &Db<'_>, job_id: &str) -> Result<Vec<SignalRecord>> {
    let rows = db
        .query(
            "SELECT name, payload, at_ms FROM {s}.duraq_job_signals WHERE job_id = $1 \
             ORDER BY at_ms, name COLLATE \"C\"",
            &[&job_id],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let name: String = r.get(0);
            let text: String = r.get(1);
            Ok(SignalRecord {
                payload: payload_of(&name, &text)?,
                name,
                at_ms: r.get(2),
            })
        })
        .collect()
}

fn payload_of(name: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("signal {name:?} holds no JSON: {e}")))
}
