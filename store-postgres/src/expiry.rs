//! Expired jobs that no claim reached (`docs/jobs.md`, expiry): a claim
//! cancels an expired candidate itself, but a job in a paused queue, or one
//! no worker handles, is never a candidate. Every worker's recovery pass
//! cancels those too, through the partial index `duraq_jobs_expiry` on the
//! live partition (queued jobs with an expiry, by expiry). Rows another
//! transaction holds (a claim deciding on them) are skipped, not waited for.

use duraq_core::driver::transitions::expire;
use duraq_core::{Job, Result};

use crate::ownership::write_moved_from_queued;
use crate::rows::{loaded_from_row, JOB_COLUMNS};
use crate::tx::Tx;

/// Cancels up to `limit` queued jobs whose expiry has passed at `tx.now`,
/// oldest expiry first, as a claim would; the ids, sorted.
pub(crate) async fn expire_due(tx: &mut Tx<'_>, limit: usize) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE status = 'queued' \
         AND expires_at_ms IS NOT NULL AND expires_at_ms <= $1 \
         ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.db.query(&sql, &[&tx.now, &limit]).await?;
    let due = rows
        .iter()
        .map(loaded_from_row)
        .collect::<Result<Vec<_>>>()?;
    let with_dependents: Vec<String> = (due.iter())
        .filter(|l| l.has_dependents)
        .map(|l| l.job.id.clone())
        .collect();
    let mut jobs: Vec<Job> = due.into_iter().map(|l| l.job).collect();
    for job in &mut jobs {
        expire(job, tx.now);
    }
    write_moved_from_queued(tx, &jobs, |id| with_dependents.iter().any(|d| d == id)).await?;
    let mut ids: Vec<String> = jobs.into_iter().map(|j| j.id).collect();
    ids.sort_unstable();
    Ok(ids)
}
