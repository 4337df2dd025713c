//! Ephemeral jobs (`keepCompleted = false`): the row goes in the transaction
//! that completes the job. The report counts the move and gives back what the
//! job held as any completion does, then deletes the row instead of saving
//! it: the job, the edges that name it as a dependent, and its progress and
//! log lines. A job others depend on never comes here (its dependents read
//! its output, so the report keeps it), which is why neither its dependents'
//! edges nor a release backlog entry can exist to delete, unlike in a prune
//! ([`crate::admin::delete_jobs`]).

use duraq_core::{Job, JobStatus, Result};
use rusqlite::OptionalExtension;

use crate::error::SqlResult;
use crate::ownership::{count_and_give_back, Reservation};
use crate::tx::Tx;

/// Completes `job` (just moved out of `handed_off`) by deleting its row.
pub(crate) fn complete_deleting(
    tx: &mut Tx<'_>,
    job: &Job,
    reservation: Reservation<'_>,
) -> Result<()> {
    count_and_give_back(tx, JobStatus::HandedOff, job, reservation)?;
    tx.removed(&job.queue, job.status);
    tx.conn
        .prepare_cached("DELETE FROM duraq_jobs WHERE id = ?1")
        .db()?
        .execute([&job.id])
        .db()?;
    if !job.depends_on.is_empty() {
        tx.conn
            .prepare_cached("DELETE FROM duraq_job_dependents WHERE job_id = ?1")
            .db()?
            .execute([&job.id])
            .db()?;
    }
    let had_progress = tx
        .conn
        .prepare_cached("DELETE FROM duraq_job_progress WHERE job_id = ?1 RETURNING job_id")
        .db()?
        .query_row([&job.id], |_| Ok(()))
        .optional()
        .db()?;
    if had_progress.is_some() {
        tx.conn
            .prepare_cached("DELETE FROM duraq_job_logs WHERE job_id = ?1")
            .db()?
            .execute([&job.id])
            .db()?;
    }
    // Most jobs record no step and receive no signal: one probe of both
    // tables, and the deletes only for a job that has some. (Two deletes
    // for every job cost an ephemeral drain 15%.)
    let durable: bool = tx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM duraq_job_steps WHERE job_id = ?1) \
             OR EXISTS (SELECT 1 FROM duraq_job_signals WHERE job_id = ?1)",
        )
        .db()?
        .query_row([&job.id], |r| r.get(0))
        .db()?;
    if durable {
        crate::steps::delete_for(tx.conn, &[job.id.as_str()])?;
        crate::signals::delete_for(tx.conn, &[job.id.as_str()])?;
    }
    Ok(())
}
