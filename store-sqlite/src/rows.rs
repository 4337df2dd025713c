//! Job rows in and out of `duraq_jobs`. The store reads a row into a
//! [`duraq_core::Job`], applies a pure transition from `duraq_core::transitions`,
//! and writes the changed fields back with [`save_job`], so the rules of the state
//! diagram are never re-implemented in SQL.
//!
//! `errors` (the error history, version 6) is JSON text, `[]` in rows written
//! before it existed (the column's default).

use std::sync::OnceLock;

use duraq_core::{Error, ErrorCode, Job, JobStatus, Result};
use rusqlite::types::Type;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Params, Row, ToSql};

use crate::error_map::{is_primary_key_violation, map_err, SqlResult};

/// The columns [`job_from_row`] expects, in order.
pub(crate) const JOB_COLUMNS: &str = "id, job_name, args, queue, status, attempts, max_retries, \
    scheduled_at_ms, created_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, \
    cancelled_at_ms, orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, \
    schedule_order, concurrency_key, max_concurrency, idempotency_key, timeout_ms, errors, \
    priority, rate_key, rate_max, rate_period_ms";

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
        .query_row([id], |row| Ok((job_from_row(row)?, row.get(28)?)))
        .optional()
        .db()
}

/// One job by id, or `job-not-found`.
pub(crate) fn require_job(conn: &Connection, id: &str) -> Result<Job> {
    load_job(conn, id)?.ok_or_else(|| Error::job_not_found(id))
}

/// Columns a fresh row binds, per row (the job's columns, `args_digest`, `dedupe_key`).
const INSERT_COLUMNS: usize = 30;
/// Rows per multi-row `INSERT` ([`insert_jobs`]): one statement's setup (its
/// cursors on the table and each index) serves this many rows.
const INSERT_CHUNK: usize = 64;

/// `INSERT … VALUES (…), (…)` for `rows` rows.
fn insert_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| {
            let params: Vec<String> = (1..=INSERT_COLUMNS)
                .map(|c| format!("?{}", r * INSERT_COLUMNS + c))
                .collect();
            format!("({})", params.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO duraq_jobs ({JOB_COLUMNS}, args_digest, dedupe_key) VALUES {}",
        values.join(", ")
    )
}

/// A fresh row to insert: the job, its args digest and its dedupe key (see
/// [`crate::dedupe`]).
pub(crate) struct NewRow<'a> {
    pub job: &'a Job,
    pub args_digest: &'a str,
    pub dedupe_key: Option<&'a str>,
}

/// Inserts one fresh row.
pub(crate) fn insert_job(
    conn: &Connection,
    job: &Job,
    args_digest: &str,
    dedupe_key: Option<&str>,
) -> Result<()> {
    insert_jobs(
        conn,
        &[NewRow {
            job,
            args_digest,
            dedupe_key,
        }],
    )
}

/// Inserts fresh rows, [`INSERT_CHUNK`] per statement. An id already in use is
/// refused by the id's own index (no read first) as `idempotency-conflict`;
/// the caller's transaction then rolls back whole.
pub(crate) fn insert_jobs(conn: &Connection, rows: &[NewRow<'_>]) -> Result<()> {
    static FULL: OnceLock<String> = OnceLock::new();
    static ONE: OnceLock<String> = OnceLock::new();
    for chunk in rows.chunks(INSERT_CHUNK) {
        let texts: Vec<(String, String, &'static str)> = chunk
            .iter()
            .map(|r| {
                let args = serde_json::to_string(&r.job.args)
                    .map_err(|e| Error::backend("encoding args", e))?;
                Ok((args, json_text(&r.job.errors)?, r.job.status.as_str()))
            })
            .collect::<Result<_>>()?;
        let mut values: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * INSERT_COLUMNS);
        for (r, (args, errors, status)) in chunk.iter().zip(&texts) {
            let j = r.job;
            values.extend([
                &j.id as &dyn ToSql,
                &j.job_name,
                args,
                &j.queue,
                status,
                &j.attempts,
                &j.max_retries,
                &j.scheduled_at_ms,
                &j.created_at_ms,
                &j.handed_off_at_ms,
                &j.completed_at_ms,
                &j.failed_at_ms,
                &j.cancelled_at_ms,
                &j.orphaned_at_ms,
                &j.last_error,
                &j.worker_id,
                &j.handoff_id,
                &j.schedule_key,
                &j.schedule_order,
                &j.concurrency_key,
                &j.max_concurrency,
                &j.idempotency_key,
                &j.timeout_ms,
                errors,
                &j.priority,
                &j.rate_key,
                &j.rate_max,
                &j.rate_period_ms,
                &r.args_digest,
                &r.dedupe_key,
            ]);
        }
        let sql = match chunk.len() {
            INSERT_CHUNK => FULL.get_or_init(|| insert_sql(INSERT_CHUNK)).as_str(),
            1 => ONE.get_or_init(|| insert_sql(1)).as_str(),
            n => &insert_sql(n),
        };
        conn.prepare_cached(sql)
            .db()?
            .execute(params_from_iter(values))
            .map_err(|e| {
                // The id's own index answers "is this id in use?": no read first.
                if is_primary_key_violation(&e) {
                    Error::conflict(ErrorCode::IdempotencyConflict, "a job with this id exists")
                } else {
                    map_err(e)
                }
            })?;
    }
    Ok(())
}

/// Writes back every field a transition may change.
pub(crate) fn save_job(conn: &Connection, job: &Job) -> Result<()> {
    let errors = json_text(&job.errors)?;
    conn.prepare_cached(
        "UPDATE duraq_jobs SET status = ?2, attempts = ?3, scheduled_at_ms = ?4, handed_off_at_ms = ?5, \
         completed_at_ms = ?6, failed_at_ms = ?7, cancelled_at_ms = ?8, orphaned_at_ms = ?9, \
         last_error = ?10, worker_id = ?11, handoff_id = ?12, errors = ?13 WHERE id = ?1",
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
    ])
    .db()?;
    Ok(())
}

/// The JSON text of a value, for `json_each(?)` parameters and TEXT columns.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::backend("encoding JSON", e))
}
