//! Fresh job rows into `duraq_jobs`, many per statement: the whole cost of a
//! batch enqueue on the writer thread, so its shape follows the profile of
//! `enqueue_batch` (1,000 jobs per call):
//!
//! - **Literals for what every fresh row shares.** A row made by
//!   [`duraq_core::driver::transitions::new_job_row`] is queued, never attempted, has no
//!   history and no worker: those columns (the `Fresh` lines of
//!   [`crate::columns`]) are literals of the statement, so a row binds 20
//!   parameters instead of 31 (each bound text is copied by SQLite; a job
//!   without a trace context binds NULL for it).
//!   [`insert_jobs`] refuses a row that is not fresh rather than lose a field.
//! - **`INSERT OR FAIL`.** A multi-row `INSERT` that may *abort* makes SQLite
//!   open a statement journal and copy every page the statement touches into it,
//!   to undo the statement alone. `OR FAIL` keeps the rows before a conflicting
//!   one instead; that changes nothing here, since an insert error fails the
//!   whole request and the writer (or `enqueue_in_transaction`) then rolls the
//!   request's transaction or savepoint back.
//! - **A few fixed statement sizes** ([`CHUNKS`]): a batch is cut into chunks of
//!   those sizes, whose SQL texts are built once per process and prepared once per
//!   connection, instead of one statement of a new size for every remainder.
//! - **The args digest only where a lookup reads it.** A row keeps its 64-digit
//!   args digest only while it has a dedupe key (see [`crate::dedupe`]); other
//!   rows hold [`crate::dedupe::NO_DIGEST`], and nobody computes their digest. For a small
//!   job that was a third of its row.
//! - **Args as text, serialized by the caller** ([`ArgsTexts`]): a batch
//!   enqueue serializes its jobs' args once, as canonical JSON, on the caller's
//!   task before the request reaches the writer thread, so the one thread
//!   every write waits for spends its time in SQLite; the texts sit back to
//!   back in one buffer instead of one string per row, and a row that needs its
//!   digest gets it from those bytes.

use std::sync::OnceLock;

use duraq_core::{Error, ErrorCode, Job, JobStatus, NewJob, Result};
use rusqlite::types::ToSqlOutput;
use rusqlite::Connection;

use crate::columns::sql::{insert_sql, FRESH_BOUND};
use crate::columns::COLUMNS;
use crate::error::{is_primary_key_violation, map_err};
use crate::new_row::NewRow;
use crate::tx::Tx;

/// Rows per statement, largest first; a batch is cut greedily into these, so
/// 1,000 rows take 10 statements. 256 × 20 parameters stays far below SQLite's
/// limit of 32,766.
const CHUNKS: [usize; 5] = [256, 64, 16, 4, 1];

/// The SQL text for a chunk of `CHUNKS[i]` rows, built once per process.
fn chunk_sql(i: usize) -> &'static str {
    static SQL: [OnceLock<String>; CHUNKS.len()] = [const { OnceLock::new() }; CHUNKS.len()];
    SQL[i].get_or_init(|| insert_sql(CHUNKS[i]))
}

/// The args of many jobs as JSON texts, back to back in one buffer.
pub(crate) struct ArgsTexts {
    buffer: String,
    ends: Vec<usize>,
}

impl ArgsTexts {
    /// Writes each job's args as canonical JSON ([`NewJob::write_args`]), so
    /// that a row that needs its digest gets it from these bytes
    /// ([`duraq_core::driver::digest_of_canonical`]). Canonical JSON is what serde_json writes
    /// anyway (compact, keys in order) unless a build turns on its
    /// `preserve_order` feature; then a batch's args are kept with their keys
    /// in order.
    pub(crate) fn new(jobs: &[NewJob]) -> Result<Self> {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(jobs.len());
        for job in jobs {
            job.write_args(&mut bytes);
            ends.push(bytes.len());
        }
        // Canonical JSON is UTF-8, and each end is the end of a whole value.
        let buffer = String::from_utf8(bytes).map_err(|e| Error::backend("encoding args", e))?;
        Ok(Self { buffer, ends })
    }

    /// The texts in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.buffer[start..end])
    }
}

/// Whether `job` was never attempted nor finished: no attempt, worker, history
/// or output (what every inserted row holds, whatever its start).
pub(crate) fn never_ran(job: &Job) -> bool {
    job.attempts == 0
        && job.handed_off_at_ms.is_none()
        && job.completed_at_ms.is_none()
        && job.failed_at_ms.is_none()
        && job.orphaned_at_ms.is_none()
        && job.worker_id.is_none()
        && job.handoff_id.is_none()
        && job.errors.is_empty()
        && job.output.is_none()
}

/// Whether `job` holds exactly the values the statement of [`insert_jobs`]
/// gives every fresh row as literals (the [`crate::columns::Insert::Fresh`]
/// and `Started` lines), and no dependency, which it does not write.
fn is_fresh(job: &Job) -> bool {
    job.status == JobStatus::Queued
        && job.cancelled_at_ms.is_none()
        && job.last_error.is_none()
        && job.depends_on.is_empty()
        && job.open_dependencies == 0
        && job.workflow_id.is_none()
        && never_ran(job)
}

/// Inserts fresh rows, cut into [`CHUNKS`], through the writer's
/// [`crate::backend::static_bind`] statements when `tx` has them. An id already in use
/// is refused by the id's own index (no read first) as `idempotency-conflict`;
/// the caller's transaction then rolls back whole.
pub(crate) fn insert_jobs(tx: &Tx<'_>, rows: &[NewRow<'_>]) -> Result<()> {
    if let Some(row) = rows.iter().find(|r| !is_fresh(r.job)) {
        return Err(not_insertable(&row.job.id));
    }
    let mut rest = rows;
    while !rest.is_empty() {
        let size = CHUNKS
            .iter()
            .position(|&n| n <= rest.len())
            .unwrap_or(CHUNKS.len() - 1);
        let (chunk, next) = rest.split_at(CHUNKS[size]);
        rest = next;
        let values = chunk.iter().flat_map(|r| bound(r, &FRESH_BOUND));
        execute(tx, chunk_sql(size), values)?;
    }
    Ok(())
}

/// The error of a row an insert statement would not write whole.
pub(crate) fn not_insertable(id: &str) -> Error {
    Error::Backend {
        message: format!("job {id} is not a new row and cannot be inserted"),
        source: None,
    }
}

/// The values of the `columns` (indexes in [`COLUMNS`]) of `r`, in order.
pub(crate) fn bound<'r>(
    r: &'r NewRow<'_>,
    columns: &'r [usize],
) -> impl Iterator<Item = rusqlite::Result<ToSqlOutput<'r>>> + 'r {
    columns.iter().map(move |&i| (COLUMNS[i].bind)(r))
}

/// Runs one insert through the writer's static statements, else the cache of
/// `tx`'s connection; an id in use is `idempotency-conflict`.
pub(crate) fn execute<'v>(
    tx: &Tx<'_>,
    sql: &'static str,
    values: impl Iterator<Item = rusqlite::Result<ToSqlOutput<'v>>>,
) -> Result<()> {
    let done = match tx.statements {
        Some(statements) => statements.execute(sql, values),
        None => execute_cached(tx.conn, sql, values),
    };
    done.map_err(|e| {
        // The id's own index answers "is this id in use?": no read first.
        if is_primary_key_violation(&e) {
            Error::conflict(ErrorCode::IdempotencyConflict, "a job with this id exists")
        } else {
            map_err(e)
        }
    })
}

/// Runs `sql` through rusqlite's statement cache of `conn`.
fn execute_cached<'v>(
    conn: &Connection,
    sql: &str,
    values: impl Iterator<Item = rusqlite::Result<ToSqlOutput<'v>>>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    for (i, value) in values.enumerate() {
        stmt.raw_bind_parameter(i + 1, value?)?;
    }
    stmt.raw_execute().map(drop)
}
