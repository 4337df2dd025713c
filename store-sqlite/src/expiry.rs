//! Expired jobs that no claim reached (`docs/jobs.md`, expiry): a claim
//! cancels an expired candidate itself, but a job in a paused queue, or one
//! no worker handles, is never a candidate. Every worker's recovery pass
//! cancels those too, through the partial index `duraq_jobs_expiry` (queued
//! jobs with an expiry, by expiry), so the pass reads only what it cancels.

use duraq_core::driver::transitions::expire;
use duraq_core::{JobStatus, Result};
use rusqlite::params;

use crate::columns::JOB_COLUMNS;
use crate::ownership::{persist_transition, Reservation};
use crate::rows::query_jobs;
use crate::tx::Tx;

/// Cancels up to `limit` queued jobs whose expiry has passed at `tx.now`,
/// oldest expiry first, as a claim would; the ids, sorted.
pub(crate) fn expire_due(tx: &mut Tx<'_>, limit: usize) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM duraq_jobs INDEXED BY duraq_jobs_expiry \
         WHERE status = 'queued' AND expires_at_ms IS NOT NULL AND expires_at_ms <= ?1 \
         ORDER BY expires_at_ms LIMIT ?2"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let due = query_jobs(tx.conn, &sql, params![tx.now, limit])?;
    let mut ids = Vec::with_capacity(due.len());
    for mut job in due {
        expire(&mut job, tx.now);
        // A queued job holds no reservation.
        persist_transition(tx, JobStatus::Queued, &job, Reservation::Known(None))?;
        ids.push(job.id);
    }
    ids.sort_unstable();
    Ok(ids)
}
