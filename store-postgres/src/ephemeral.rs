//! Ephemeral jobs (`keepCompleted = false`): the row goes in the transaction
//! that completes the job, so a queue of jobs nobody reads afterwards leaves
//! no history to prune and no dead tuples behind a later vacuum than the
//! completion's own.
//!
//! Both completion paths call [`delete_completed`]: the general report
//! ([`crate::report`]) and the one-statement batch of completions
//! ([`crate::complete`]). Each leaves out a job that others depend on (they
//! read its output when they run; `Job::is_deleted_on_completion`). The
//! counts move the job out of `completed` as a prune does, while the
//! throughput totals and history, counted from the completion, keep it.

use duraq_core::{JobStatus, Result};

use crate::dependencies::DELETE_EDGES_WITH_JOBS;
use crate::tx::Tx;

/// Deletes the just-completed jobs `ids` with their progress, log lines,
/// dependency edges, and the steps and signals of those marked as having
/// them (`has_durable_rows`, set by [`crate::steps`] and [`crate::signals`]
/// for ephemeral jobs only): most ephemeral jobs have none, and a completion
/// that only looked for them cost a tenth of the drain.
pub(crate) async fn delete_completed(tx: &mut Tx<'_>, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH gone AS (DELETE FROM {{s}}.duraq_jobs AS j WHERE j.id = ANY($1) \
             RETURNING j.id, j.status, j.queue, j.depends_on, j.has_durable_rows), {}, {} \
             SELECT queue, CASE WHEN has_durable_rows THEN id END FROM gone",
            crate::progress::DELETE_PROGRESS_WITH_JOBS,
            DELETE_EDGES_WITH_JOBS
        )
    });
    let mut marked: Vec<String> = Vec::new();
    for row in tx.db.query(sql, &[&ids]).await? {
        let queue: String = row.get(0);
        tx.change.removed(&queue, JobStatus::Completed);
        marked.extend(row.get::<_, Option<String>>(1));
    }
    if !marked.is_empty() {
        tx.db
            .execute(
                "WITH gone_steps AS (DELETE FROM {s}.duraq_job_steps WHERE job_id = ANY($1)) \
                 DELETE FROM {s}.duraq_job_signals WHERE job_id = ANY($1)",
                &[&marked],
            )
            .await?;
    }
    Ok(())
}
