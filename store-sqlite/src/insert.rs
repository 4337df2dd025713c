//! Fresh job rows into `duraq_jobs`, many per statement: the whole cost of a
//! batch enqueue on the writer thread, so its shape follows the profile of
//! `enqueue_batch` (1,000 jobs per call):
//!
//! - **Literals for what every fresh row shares.** A row made by
//!   [`duraq_core::transitions::new_job_row`] is queued, never attempted, has no
//!   history and no worker: those 11 columns are literals of the statement, so a
//!   row binds 20 parameters instead of 31 (each bound text is copied by SQLite;
//!   a job without a trace context binds NULL for it).
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
//!   rows hold [`NO_DIGEST`], and nobody computes their digest. For a small
//!   job that was a third of its row.
//! - **Args as text, serialized by the caller** ([`ArgsTexts`]): a batch
//!   enqueue serializes its jobs' args once, as canonical JSON, on the caller's
//!   task before the request reaches the writer thread, so the one thread
//!   every write waits for spends its time in SQLite; the texts sit back to
//!   back in one buffer instead of one string per row, and a row that needs its
//!   digest gets it from those bytes.

use std::sync::OnceLock;

use duraq_core::{
    canonical_json, digest_of_canonical, Error, ErrorCode, Job, JobStatus, NewJob, Result,
};
use rusqlite::{params_from_iter, Connection, ToSql};

use crate::dedupe::{key_of, NO_DIGEST};
use crate::error::{is_primary_key_violation, map_err};
use crate::tx::Tx;

/// The columns a fresh row binds, in the order [`insert_sql`] names them.
pub(crate) const BOUND: [&str; 20] = [
    "id",
    "job_name",
    "args",
    "queue",
    "max_retries",
    "scheduled_at_ms",
    "created_at_ms",
    "schedule_key",
    "schedule_order",
    "concurrency_key",
    "max_concurrency",
    "idempotency_key",
    "timeout_ms",
    "priority",
    "rate_key",
    "rate_max",
    "rate_period_ms",
    "args_digest",
    "dedupe_key",
    "trace_parent",
];

/// The columns every fresh row holds the same value in, with that value (the
/// timestamps of later states, the worker and the error columns are NULL).
pub(crate) const FRESH: [(&str, &str); 11] = [
    ("status", "'queued'"),
    ("attempts", "0"),
    ("handed_off_at_ms", "NULL"),
    ("completed_at_ms", "NULL"),
    ("failed_at_ms", "NULL"),
    ("cancelled_at_ms", "NULL"),
    ("orphaned_at_ms", "NULL"),
    ("last_error", "NULL"),
    ("worker_id", "NULL"),
    ("handoff_id", "NULL"),
    ("errors", "'[]'"),
];

/// Rows per statement, largest first; a batch is cut greedily into these, so
/// 1,000 rows take 10 statements. 256 × 20 parameters stays far below SQLite's
/// limit of 32,766.
const CHUNKS: [usize; 5] = [256, 64, 16, 4, 1];

/// `INSERT OR FAIL … VALUES (…), (…)` for `rows` rows.
fn insert_sql(rows: usize) -> String {
    let columns: Vec<&str> = BOUND
        .iter()
        .chain(FRESH.iter().map(|(c, _)| c))
        .copied()
        .collect();
    let one_row = format!(
        "({}{})",
        vec!["?"; BOUND.len()].join(", "),
        FRESH
            .iter()
            .map(|(_, v)| format!(", {v}"))
            .collect::<String>()
    );
    format!(
        "INSERT OR FAIL INTO duraq_jobs ({}) VALUES {}",
        columns.join(", "),
        vec![one_row; rows].join(", ")
    )
}

/// The SQL text for a chunk of `CHUNKS[i]` rows, built once per process.
fn chunk_sql(i: usize) -> &'static str {
    static SQL: [OnceLock<String>; CHUNKS.len()] = [const { OnceLock::new() }; CHUNKS.len()];
    SQL[i].get_or_init(|| insert_sql(CHUNKS[i]))
}

/// A fresh row to insert: the job, its args as JSON text and, when its scope
/// is registered for dedupe, its args digest (see [`crate::dedupe`]).
pub(crate) struct NewRow<'a> {
    job: &'a Job,
    args: &'a str,
    /// What the `args_digest` column holds: the digest on a row with a dedupe
    /// key, the one lookup that reads it, [`NO_DIGEST`] on others.
    stored_digest: &'a str,
    dedupe_key: Option<&'a str>,
}

impl<'a> NewRow<'a> {
    /// The row's job.
    pub(crate) fn job(&self) -> &'a Job {
        self.job
    }

    pub(crate) fn new(job: &'a Job, args: &'a str, digest: Option<&'a str>) -> Self {
        Self {
            job,
            args,
            stored_digest: digest.unwrap_or(NO_DIGEST),
            dedupe_key: digest.map(key_of),
        }
    }
}

/// The args of many jobs as JSON texts, back to back in one buffer.
pub(crate) struct ArgsTexts {
    buffer: String,
    ends: Vec<usize>,
}

impl ArgsTexts {
    /// Writes each job's args as canonical JSON ([`NewJob::write_args`]), so
    /// that a row that needs its digest gets it from these bytes
    /// ([`duraq_core::digest_of_canonical`]). Canonical JSON is what serde_json writes
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

/// Whether `job` holds exactly the [`FRESH`] values (and no dependency, which
/// the statement of [`insert_jobs`] does not write).
fn is_fresh(job: &Job) -> bool {
    job.status == JobStatus::Queued
        && job.cancelled_at_ms.is_none()
        && job.last_error.is_none()
        && job.depends_on.is_empty()
        && job.open_dependencies == 0
        && job.workflow_id.is_none()
        && never_ran(job)
}

/// Inserts one new row; `keyed` (its scope is registered for dedupe) gives it
/// its args digest, made from the canonical text it stores, as a batch's rows.
/// A row with dependencies goes in through [`crate::insert_started`].
pub(crate) fn insert_job(tx: &Tx<'_>, job: &Job, keyed: bool) -> Result<()> {
    let args = canonical_json(&job.args);
    let digest = keyed.then(|| digest_of_canonical("args", args.as_bytes()));
    let row = NewRow::new(job, &args, digest.as_deref());
    if job.depends_on.is_empty() && job.workflow_id.is_none() {
        insert_jobs(tx, &[row])
    } else {
        crate::insert_started::insert_started(tx, &row)
    }
}

/// The values of [`BOUND`] for `r`, in order.
pub(crate) fn bound<'r>(r: &'r NewRow<'_>) -> [&'r dyn ToSql; BOUND.len()] {
    let j = r.job;
    [
        &j.id,
        &j.job_name,
        &r.args,
        &j.queue,
        &j.max_retries,
        &j.scheduled_at_ms,
        &j.created_at_ms,
        &j.schedule_key,
        &j.schedule_order,
        &j.concurrency_key,
        &j.max_concurrency,
        &j.idempotency_key,
        &j.timeout_ms,
        &j.priority,
        &j.rate_key,
        &j.rate_max,
        &j.rate_period_ms,
        &r.stored_digest,
        &r.dedupe_key,
        &j.trace_parent,
    ]
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
        let mut values: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * BOUND.len());
        for r in chunk {
            values.extend(bound(r));
        }
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

/// Runs one insert through the writer's static statements, else the cache of
/// `tx`'s connection; an id in use is `idempotency-conflict`.
pub(crate) fn execute(tx: &Tx<'_>, sql: &'static str, values: Vec<&dyn ToSql>) -> Result<()> {
    let done = match tx.statements {
        Some(statements) => statements.execute(sql, &values),
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
fn execute_cached(conn: &Connection, sql: &str, values: Vec<&dyn ToSql>) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?
        .execute(params_from_iter(values))
        .map(drop)
}
