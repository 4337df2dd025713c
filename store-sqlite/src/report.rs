//! Fenced reports, heartbeats, lease checks and lost-lease recovery (`docs/jobs.md`). A report changes
//! a row only while the lease it names is current: the row is read, the lease
//! compared, and the outcome applied with [`duraq_core::driver::transitions::apply_outcome`].

use duraq_core::driver::transitions::{apply_outcome, recover_lost};
use duraq_core::driver::{CountChange, Lease, LeaseState};
use duraq_core::{Error, JobStatus, Outcome, Result};
use rusqlite::{params, Connection};

use crate::columns::JOB_COLUMNS;
use crate::error::SqlResult;
use crate::ownership::{persist_transition, Reservation};
use crate::rows::{load_for_report, query_jobs};
use crate::tx::Tx;

/// Applies one fenced report; `false` (nothing changed) when the lease is stale.
pub(crate) fn report(tx: &mut Tx<'_>, lease: &Lease, outcome: &Outcome) -> Result<bool> {
    let Some((mut job, reservation)) = load_for_report(tx.conn, &lease.job_id)? else {
        return Ok(false);
    };
    if !lease.holds(&job) {
        return Ok(false);
    }
    let delivered = match outcome.awaited_signal() {
        Some(name) => crate::signals::stored(tx.conn, &job.id, name)?.is_some(),
        None => false,
    };
    let outcome = &outcome.clone().given_signals(delivered);
    apply_outcome(&mut job, outcome, tx.now);
    let reservation = Reservation::Known(reservation.as_deref());
    if job.is_deleted_on_completion() && !crate::dependencies::has_dependents(tx.conn, &job.id)? {
        crate::ephemeral::complete_deleting(tx, &job, reservation)?;
    } else {
        persist_transition(tx, JobStatus::HandedOff, &job, reservation)?;
    }
    if CountChange::is_retry(Some(outcome), job.status) {
        tx.retried(&job.queue);
    }
    Ok(true)
}

/// Many reports in one transaction and one mutation; each is fenced on its own.
pub(crate) fn report_batch(tx: &mut Tx<'_>, reports: &[(Lease, Outcome)]) -> Result<Vec<bool>> {
    reports
        .iter()
        .map(|(lease, outcome)| report(tx, lease, outcome))
        .collect()
}

/// Records that `worker_id` is alive at `tx.now`.
pub(crate) fn heartbeat(tx: &mut Tx<'_>, worker_id: &str) -> Result<()> {
    tx.conn
        .prepare_cached(
            "INSERT INTO duraq_workers (worker_id, last_heartbeat_ms) VALUES (?1, ?2) \
             ON CONFLICT (worker_id) DO UPDATE SET last_heartbeat_ms = excluded.last_heartbeat_ms",
        )
        .db()?
        .execute(params![worker_id, tx.now])
        .db()?;
    Ok(())
}

/// Recovers every lease whose worker's heartbeat is older than the cutoff (or
/// missing); returns the recovered ids, sorted.
pub(crate) fn recover_stale(tx: &mut Tx<'_>, stale_after_ms: i64) -> Result<Vec<String>> {
    let cutoff = tx.now.saturating_sub(stale_after_ms);
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM duraq_jobs AS j WHERE status = 'handed_off' AND NOT EXISTS \
         (SELECT 1 FROM duraq_workers AS w WHERE w.worker_id = j.worker_id AND w.last_heartbeat_ms >= ?1)"
    );
    // Sorted here, not by `ORDER BY id`: that would tempt the planner into
    // walking the whole table in primary-key order instead of the running index.
    let mut lost = query_jobs(tx.conn, &sql, [cutoff])?;
    lost.sort_by(|a, b| a.id.cmp(&b.id));
    let mut ids = Vec::with_capacity(lost.len());
    for mut job in lost {
        recover_lost(&mut job, tx.now);
        persist_transition(tx, JobStatus::HandedOff, &job, Reservation::Unknown)?;
        if CountChange::is_retry(None, job.status) {
            tx.retried(&job.queue);
        }
        ids.push(job.id);
    }
    let forget = duraq_core::driver::worker_forget_cutoff_ms(tx.now, stale_after_ms);
    tx.conn
        .prepare_cached("DELETE FROM duraq_workers WHERE last_heartbeat_ms < ?1")
        .db()?
        .execute([forget])
        .db()?;
    Ok(ids)
}

/// The status and lease of each of `ids` that exists (the worker's lease check).
pub(crate) fn lease_states(conn: &Connection, ids: &[String]) -> Result<Vec<LeaseState>> {
    let list = serde_json::to_string(ids).map_err(|e| Error::backend("encoding job ids", e))?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, status, handoff_id FROM duraq_jobs \
             WHERE id IN (SELECT value FROM json_each(?1))",
        )
        .db()?;
    let rows = stmt
        .query_map([list], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .db()?;
    let mut out = Vec::with_capacity(ids.len());
    for row in rows {
        let (job_id, status, handoff_id) = row.db()?;
        out.push(LeaseState {
            job_id,
            status: status.parse()?,
            handoff_id,
        });
    }
    Ok(out)
}
