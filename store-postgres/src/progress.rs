//! Progress and log lines of running jobs (`docs/jobs.md`, "Progress and
//! logs"): a row per job that said anything (`duraq_job_progress`) and its
//! newest lines (`duraq_job_logs`, keyed by job and `seq`), in tables of
//! their own so that the jobs table and its hot updates stay as they are.
//!
//! A write is fenced by the lease like a report: the job row is read
//! `FOR SHARE` (with the progress row, one statement), so a report, cancel
//! or recovery of the same job waits for it or it sees theirs; then
//! [`duraq_core::driver::progress_write`] decides, and one statement upserts the row,
//! inserts the lines and deletes those past the newest 100. The rows go when
//! their job is deleted: [`DELETE_WITH_JOBS`] is spliced into every delete.

use duraq_core::driver::{progress_write, ProgressBatch, ProgressRow};
use duraq_core::inspect::{JobProgress, LogLine};
use duraq_core::{JobStatus, Result};

use crate::backend::db::Db;
use crate::tx::Tx;

/// CTE parts that delete a job's rows in other tables (its progress, lines,
/// durable steps and signals, [`crate::steps`], [`crate::signals`]) for the
/// jobs a `gone AS (DELETE … RETURNING j.id …)` part deleted, in the same
/// statement; lines are looked up only for jobs that had a progress row.
pub(crate) const DELETE_WITH_JOBS: &str = concat!(
    delete_progress_with_jobs!(),
    ", gone_steps AS (DELETE FROM {s}.duraq_job_steps WHERE job_id IN (SELECT id FROM gone)), \
     gone_signals AS (DELETE FROM {s}.duraq_job_signals WHERE job_id IN (SELECT id FROM gone))"
);

/// [`DELETE_WITH_JOBS`] without the steps and signals, for the completions
/// of ephemeral jobs, which know which jobs have them ([`crate::ephemeral`]).
pub(crate) const DELETE_PROGRESS_WITH_JOBS: &str = delete_progress_with_jobs!();

macro_rules! delete_progress_with_jobs {
    () => {
        "gone_progress AS (DELETE FROM {s}.duraq_job_progress WHERE job_id IN \
         (SELECT id FROM gone) RETURNING job_id), \
         gone_logs AS (DELETE FROM {s}.duraq_job_logs WHERE job_id IN \
         (SELECT job_id FROM gone_progress))"
    };
}
use delete_progress_with_jobs;

/// Persists one fenced batch; `false` (nothing written) when the lease is stale.
pub(crate) async fn record(tx: &mut Tx<'_>, batch: &ProgressBatch) -> Result<bool> {
    let lease = batch.lease();
    let Some(row) = tx
        .db
        .query_opt(
            "SELECT j.status, j.handoff_id, p.fraction, p.message, p.updated_at_ms, p.lines_total \
             FROM {s}.duraq_jobs AS j LEFT JOIN {s}.duraq_job_progress AS p ON p.job_id = j.id \
             WHERE j.id = $1 FOR SHARE OF j",
            &[&lease.job_id],
        )
        .await?
    else {
        return Ok(false);
    };
    let status: JobStatus = row.get::<_, String>(0).parse()?;
    let handoff_id: Option<String> = row.get(1);
    if !lease.is_current(status, handoff_id.as_deref()) {
        return Ok(false);
    }
    let current = row.get::<_, Option<i64>>(5).map(|lines_total| ProgressRow {
        fraction: row.get(2),
        message: row.get(3),
        updated_at_ms: row.get(4),
        lines_total,
    });
    let write = progress_write(current.as_ref(), batch, tx.now);
    let seqs: Vec<i64> = write.lines.iter().map(|l| l.seq).collect();
    let ats: Vec<i64> = write.lines.iter().map(|l| l.at_ms).collect();
    let attempts: Vec<i64> = write.lines.iter().map(|l| l.attempt).collect();
    let texts: Vec<&str> = write.lines.iter().map(|l| l.line.as_str()).collect();
    // The sub-statements share one snapshot: the delete never sees the new
    // lines, which all lie within the kept window anyway.
    tx.db
        .execute(
            "WITH upsert AS (INSERT INTO {s}.duraq_job_progress \
             (job_id, fraction, message, updated_at_ms, lines_total) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (job_id) DO UPDATE SET fraction = EXCLUDED.fraction, \
             message = EXCLUDED.message, updated_at_ms = EXCLUDED.updated_at_ms, \
             lines_total = EXCLUDED.lines_total), \
             added AS (INSERT INTO {s}.duraq_job_logs (job_id, seq, at_ms, attempt, line) \
             SELECT $1, * FROM unnest($6::bigint[], $7::bigint[], $8::bigint[], $9::text[])) \
             DELETE FROM {s}.duraq_job_logs WHERE job_id = $1 AND seq < $10",
            &[
                &lease.job_id,
                &write.row.fraction,
                &write.row.message,
                &write.row.updated_at_ms,
                &write.row.lines_total,
                &seqs,
                &ats,
                &attempts,
                &texts,
                &write.keep_from_seq,
            ],
        )
        .await?;
    Ok(true)
}

/// A job's progress and kept lines (oldest first), in one statement.
pub(crate) async fn get(db: &Db<'_>, job_id: &str) -> Result<Option<JobProgress>> {
    let rows = db
        .query(
            "SELECT p.fraction, p.message, p.updated_at_ms, p.lines_total, \
             l.seq, l.at_ms, l.attempt, l.line \
             FROM {s}.duraq_job_progress AS p \
             LEFT JOIN {s}.duraq_job_logs AS l ON l.job_id = p.job_id \
             WHERE p.job_id = $1 ORDER BY l.seq",
            &[&job_id],
        )
        .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let logs = rows
        .iter()
        .filter_map(|r| {
            Some(LogLine {
                seq: r.get::<_, Option<i64>>(4)?,
                at_ms: r.get(5),
                attempt: r.get(6),
                line: r.get(7),
            })
        })
        .collect();
    Ok(Some(JobProgress {
        fraction: first.get(0),
        message: first.get(1),
        updated_at_ms: first.get(2),
        lines_total: first.get(3),
        logs,
    }))
}
