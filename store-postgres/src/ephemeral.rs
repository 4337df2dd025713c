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

/// Deletes the just-completed jobs `ids` with their progress, log lines and
/// dependency edges.
pub(crate) async fn delete_completed(tx: &mut Tx<'_>, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH gone AS (DELETE FROM {{s}}.duraq_jobs AS j WHERE j.id = ANY($1) \
             RETURNING j.id, j.status, j.queue, j.depends_on), {}, {} SELECT queue FROM gone",
            crate::progress::DELETE_WITH_JOBS,
            DELETE_EDGES_WITH_JOBS
        )
    });
    for row in tx.db.query(sql, &[&ids]).await? {
        let queue: String = row.get(0);
        tx.change.removed(&queue, JobStatus::Completed);
    }
    Ok(())
}
