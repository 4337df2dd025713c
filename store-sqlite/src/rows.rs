//! Job rows in and out of `duraq_jobs`. The store reads a row into a
//! [`duraq_core::Job`], applies a pure transition from `duraq_core::driver::transitions`,
//! and writes the changed fields back with [`save_job`], so the rules of the state
//! diagram are never re-implemented in SQL. Fresh rows go in through
//! [`crate::insert`].
//!
//! Every column is read and written through the description of the row in
//! [`crate::columns`].

use std::sync::OnceLock;

use duraq_core::{Error, Job, Result};
use rusqlite::{Connection, OptionalExtension, Params};

use crate::columns::sql::{update_sql, SAVED};
use crate::columns::{job_from_row, COLUMNS, JOB_COLUMNS, JOB_COLUMN_COUNT, REPORT_COLUMNS};
use crate::error::SqlResult;

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
        format!("SELECT {REPORT_COLUMNS}, reservation_key FROM duraq_jobs WHERE id = ?1")
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

/// Writes back every field a transition may change (the `saved` columns of
/// [`crate::columns`]; `depends_on` never changes).
pub(crate) fn save_job(conn: &Connection, job: &Job) -> Result<()> {
    static SQL: OnceLock<String> = OnceLock::new();
    let mut stmt = conn.prepare_cached(SQL.get_or_init(update_sql)).db()?;
    stmt.raw_bind_parameter(1, &job.id).db()?;
    for (n, &i) in SAVED.iter().enumerate() {
        stmt.raw_bind_parameter(n + 2, (COLUMNS[i].write)(job).db()?)
            .db()?;
    }
    stmt.raw_execute().db()?;
    Ok(())
}

/// The JSON text of a value, for `json_each(?)` parameters and TEXT columns.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::backend("encoding JSON", e))
}
