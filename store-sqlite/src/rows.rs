//! Job rows in and out of `duraq_jobs`. The store reads a row into a
//! [`duraq_core::Job`], applies a pure transition from `duraq_core::transitions`,
//! and writes the changed fields back with [`save_job`], so the rules of the state
//! diagram are never re-implemented in SQL. Fresh rows go in through
//! [`crate::insert`].
//!
//! `errors` (the error history, version 6) is JSON text, `[]` in rows written
//! before it existed (the column's default). `trace_parent` (version 10) is
//! NULL unless the job was enqueued with a trace context. `depends_on` and
//! `output` (version 11) are JSON text, NULL when the job has no dependencies
//! or no output; rows older than them read NULL and `open_dependencies` 0.

use std::sync::OnceLock;

use duraq_core::{Error, Job, JobStatus, Result};
use rusqlite::types::Type;
use rusqlite::{params, Connection, OptionalExtension, Params, Row};

use crate::error::SqlResult;

/// The columns [`job_from_row`] expects, in order.
pub(crate) const JOB_COLUMNS: &str = "id, job_name, args, queue, status, attempts, max_retries, \
    scheduled_at_ms, created_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, \
    cancelled_at_ms, orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, \
    schedule_order, concurrency_key, max_concurrency, idempotency_key, timeout_ms, errors, \
    priority, rate_key, rate_max, rate_period_ms, trace_parent, depends_on, open_dependencies, \
    output, workflow_id, step";

/// How many columns [`JOB_COLUMNS`] names (a query may select more after them).
pub(crate) const JOB_COLUMN_COUNT: usize = 34;

fn conversion(
    col: usize,
    err: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, Type::Text, err.into())
}

/// Reads one job from a row selected with [`JOB_COLUMNS`].
pub(crate) fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
    let args: String = row.get(2)?;
    let status: String = row.get(4)?;
    let errors: String = row.get(23)?;
    let depends_on: Option<String> = row.get(29)?;
    let output: Option<String> = row.get(31)?;
    Ok(Job {
        id: row.get(0)?,
        job_name: row.get(1)?,
        args: serde_json::from_str(&args).map_err(|e| conversion(2, e))?,
        queue: row.get(3)?,
        status: status.parse::<JobStatus>().map_err(|e| conversion(4, e))?,
        attempts: row.get(5)?,
        max_retries: row.get(6)?,
        scheduled_at_ms: row.get(7)?,
        created_at_ms: row.get(8)?,
        handed_off_at_ms: row.get(9)?,
        completed_at_ms: row.get(10)?,
        failed_at_ms: row.get(11)?,
        cancelled_at_ms: row.get(12)?,
        orphaned_at_ms: row.get(13)?,
        last_error: row.get(14)?,
        errors: serde_json::from_str(&errors).map_err(|e| conversion(23, e))?,
        worker_id: row.get(15)?,
        handoff_id: row.get(16)?,
        schedule_key: row.get(17)?,
        schedule_order: row.get(18)?,
        concurrency_key: row.get(19)?,
        max_concurrency: row.get(20)?,
        idempotency_key: row.get(21)?,
        timeout_ms: row.get(22)?,
        priority: row.get(24)?,
        rate_key: row.get(25)?,
        rate_max: row.get(26)?,
        rate_period_ms: row.get(27)?,
        trace_parent: row.get(28)?,
        depends_on: match depends_on {
            Some(text) => serde_json::from_str(&text).map_err(|e| conversion(29, e))?,
            None => Vec::new(),
        },
        open_dependencies: row.get(30)?,
        output: output
            .map(|text| serde_json::from_str(&text).map_err(|e| conversion(31, e)))
            .transpose()?,
        workflow_id: row.get(32)?,
        step: row.get(33)?,
    })
}

/// Runs a `SELECT {JOB_COLUMNS} …` and collects the jobs.
pub(crate) fn query_jobs(conn: &Connection, sql: &str, params: impl Params) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let rows = stmt.query_map(params, job_from_row).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// One job by id.
pub(crate) fn load_job(conn: &Connection, id: &str) -> Result<Option<Job>> {
    static SQL: OnceLock<String> = OnceLock::new();
    let sql = SQL.get_or_init(|| format!("SELECT {JOB_COLUMNS} FROM duraq_jobs WHERE id = ?1"));
    conn.prepare_cached(sql)
        .db()?
        .query_row([id], job_from_row)
        .optional()
        .db()
}

/// One job by id for a report, which never reads `args`: they load as JSON null
/// instead of being read and parsed, and the row's reservation key comes along
/// (releasing it then needs no second lookup).
pub(crate) fn load_for_report(
    conn: &Connection,
    id: &str,
) -> Result<Option<(Job, Option<String>)>> {
    static SQL: OnceLock<String> = OnceLock::new();
    let sql = SQL.get_or_init(|| {
        let columns = JOB_COLUMNS.replacen(", args,", ", 'null',", 1);
        format!("SELECT {columns}, reservation_key FROM duraq_jobs WHERE id = ?1")
    });
    conn.prepare_cached(sql)
        .db()?
        .query_row([id], |row| {
            Ok((job_from_row(row)?, row.get(JOB_COLUMN_COUNT)?))
        })
        .optional()
        .db()
}

/// One job by id, or `job-not-found`.
pub(crate) fn require_job(conn: &Connection, id: &str) -> Result<Job> {
    load_job(conn, id)?.ok_or_else(|| Error::job_not_found(id))
}

/// Writes back every field a transition may change (`depends_on` never does).
pub(crate) fn save_job(conn: &Connection, job: &Job) -> Result<()> {
    let errors = json_text(&job.errors)?;
    let output = job.output.as_ref().map(json_text).transpose()?;
    conn.prepare_cached(
        "UPDATE duraq_jobs SET status = ?2, attempts = ?3, scheduled_at_ms = ?4, handed_off_at_ms = ?5, \
         completed_at_ms = ?6, failed_at_ms = ?7, cancelled_at_ms = ?8, orphaned_at_ms = ?9, \
         last_error = ?10, worker_id = ?11, handoff_id = ?12, errors = ?13, \
         open_dependencies = ?14, output = ?15 WHERE id = ?1",
    )
    .db()?
    .execute(params![
        job.id,
        job.status.as_str(),
        job.attempts,
        job.scheduled_at_ms,
        job.handed_off_at_ms,
        job.completed_at_ms,
        job.failed_at_ms,
        job.cancelled_at_ms,
        job.orphaned_at_ms,
        job.last_error,
        job.worker_id,
        job.handoff_id,
        errors,
        job.open_dependencies,
        output,
    ])
    .db()?;
    Ok(())
}

/// The JSON text of a value, for `json_each(?)` parameters and TEXT columns.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::backend("encoding JSON", e))
}
