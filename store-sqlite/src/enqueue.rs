//! Enqueue (`docs/jobs.md`, `docs/idempotency.md`, `docs/dedupe.md`): idempotency
//! scopes, dedupe-while-queued, concurrency cap registration, operation records,
//! dependencies (`docs/workflows.md`: a job with some is read against them and
//! inserted `pending`, `queued` or `cancelled`), and the insert itself. Used by the
//! store's own writer and by [`crate::SqliteStore::enqueue_in_transaction`] on a
//! caller's transaction, so both follow exactly the same rules: core's order
//! ([`duraq_core::driver::steps::enqueue`]) over this store's primitives
//! ([`SqliteSteps`]). A plain batch is this store's own shortcut ([`Batch`]).

use duraq_core::driver::rules::{check_cap, operation_key_taken, DependencyStart};
use duraq_core::driver::steps::{run_ready, EnqueueSteps, ScopeClaim, ScopeOwner};
use duraq_core::driver::transitions::into_job_row;
use duraq_core::driver::{canonical_json, digest_of_canonical};
use duraq_core::{
    ConcurrencyLimit, EnqueueOutcome, Job, JobStatus, NewJob, NewOperation, RateLimit, Result,
};
use rusqlite::{params, Connection, OptionalExtension};

use crate::dedupe;
use crate::dependencies;
use crate::error::SqlResult;
use crate::insert::{insert_jobs, ArgsTexts};
use crate::insert_started::insert_started;
use crate::new_row::NewRow;
use crate::rows::json_text;
use crate::tx::Tx;

/// One enqueue: core's driver over [`SqliteSteps`], run in place (the writer
/// thread's statements never wait on anything but SQLite itself).
pub(crate) fn enqueue(tx: &mut Tx<'_>, job: NewJob) -> Result<EnqueueOutcome> {
    let now = tx.now;
    run_ready(duraq_core::driver::steps::enqueue(
        &mut SqliteSteps(tx),
        &job,
        now,
    ))
}

/// SQLite's [`EnqueueSteps`]: one statement each where it can be, on the
/// transaction's connection. The single writer needs no lock for a race:
/// a scope found free is simply claimed, and a key is registered only when
/// the read found it absent.
struct SqliteSteps<'t, 'c>(&'t mut Tx<'c>);

impl EnqueueSteps for SqliteSteps<'_, '_> {
    async fn scope_owner(&mut self, scope: &str) -> Result<Option<ScopeOwner>> {
        self.0
            .conn
            .prepare_cached(
                "SELECT request_digest, job_id FROM duraq_idempotency WHERE scope_digest = ?1",
            )
            .db()?
            .query_row([scope], |r| {
                Ok(ScopeOwner {
                    request_digest: r.get(0)?,
                    job_id: r.get(1)?,
                })
            })
            .optional()
            .db()
    }

    async fn find_duplicate(&mut self, job: &NewJob) -> Result<Option<String>> {
        dedupe::find_duplicate(self.0, job)
    }

    async fn claim_scope(&mut self, scope: &str, job: &NewJob) -> Result<ScopeClaim> {
        self.0
            .conn
            .prepare_cached(
                "INSERT INTO duraq_idempotency (scope_digest, request_digest, job_id, created_at_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![scope, job.request_digest(), job.id(), self.0.now])
            .db()?;
        Ok(ScopeClaim::Claimed)
    }

    async fn register_cap(&mut self, limit: &ConcurrencyLimit) -> Result<Option<i64>> {
        match registered_cap(self.0.conn, &limit.key)? {
            // A key registered without a cap (NULL) has nothing to conflict with.
            Some(max) => Ok(max),
            None => insert_cap(self.0.conn, limit).map(|()| None),
        }
    }

    async fn register_rate(&mut self, limit: &RateLimit) -> Result<Option<(i64, i64)>> {
        match registered_rate(self.0.conn, &limit.key)? {
            Some(registered) => Ok(Some(registered)),
            None => insert_rate(self.0.conn, limit).map(|()| None),
        }
    }

    async fn insert_operation(&mut self, job: &NewJob, op: &NewOperation) -> Result<bool> {
        insert_operation(self.0.conn, op, job.id(), self.0.now)
    }

    async fn dependency_start(&mut self, job: &NewJob) -> Result<DependencyStart> {
        dependencies::start(self.0.conn, job.dependencies())
    }

    async fn insert_job(&mut self, job: &NewJob, row: &Job) -> Result<()> {
        insert_row(self.0, job, row)
    }

    fn signal_work(&mut self) {
        self.0.signal_work();
    }
}

/// A batch enqueue as the writer receives it: see [`Batch::prepare`].
pub(crate) enum Batch {
    /// Jobs with nothing to read or register first ([`NewJob::is_plain`]),
    /// inserted together, several rows per statement, with their args already
    /// serialized.
    Plain { jobs: Vec<NewJob>, args: ArgsTexts },
    /// Any other batch: job by job, each following [`enqueue`] and seeing the
    /// ones before.
    OneByOne(Vec<NewJob>),
}

impl Batch {
    /// Tells a plain batch ([`NewJob::is_plain`] for every job) from any
    /// other and, for a plain one, does on the caller's task the work that
    /// needs no transaction (serializing args), so the writer thread, which
    /// every write waits for, only inserts (and digests the args of rows whose
    /// scope is registered for dedupe, the only rows that keep a digest).
    pub(crate) fn prepare(jobs: Vec<NewJob>) -> Result<Self> {
        if !jobs.iter().all(NewJob::is_plain) {
            return Ok(Self::OneByOne(jobs));
        }
        let args = ArgsTexts::new(&jobs)?;
        Ok(Self::Plain { jobs, args })
    }
}

/// Many enqueues in one transaction, each following [`enqueue`] (see [`Batch`]).
pub(crate) fn enqueue_many(tx: &mut Tx<'_>, batch: Batch) -> Result<Vec<EnqueueOutcome>> {
    let (jobs, args) = match batch {
        Batch::OneByOne(jobs) => return jobs.into_iter().map(|job| enqueue(tx, job)).collect(),
        Batch::Plain { jobs, args } => (jobs, args),
    };
    let rows: Vec<Job> = jobs.into_iter().map(|j| into_job_row(j, tx.now)).collect();
    let mut digests = Vec::with_capacity(rows.len());
    for (row, text) in rows.iter().zip(args.iter()) {
        let registered = dedupe::scope_registered(tx, &row.job_name, &row.queue)?;
        digests.push(registered.then(|| digest_of_canonical("args", text.as_bytes())));
    }
    let new_rows: Vec<NewRow<'_>> = rows
        .iter()
        .zip(args.iter())
        .zip(&digests)
        .map(|((job, args), digest)| NewRow::new(job, args, digest.as_deref()))
        .collect();
    insert_jobs(tx, &new_rows)?;
    for row in &rows {
        tx.added(&row.queue, JobStatus::Queued);
    }
    if !rows.is_empty() {
        tx.signal_work();
    }
    Ok(rows
        .into_iter()
        .map(|row| EnqueueOutcome::Created(row.id))
        .collect())
}

/// Refuses a schedule key's replacement that would conflict: another cap
/// or rate limit for its key, or an operation key in use. Reads only; the
/// replacement writes with [`insert_checked`].
pub(crate) fn check_insert(conn: &Connection, job: &NewJob) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        if let Some(Some(max)) = registered_cap(conn, &limit.key)? {
            check_cap(limit, max)?;
        }
    }
    if let Some(limit) = job.rate_limit() {
        if let Some((max, period_ms)) = registered_rate(conn, &limit.key)? {
            limit.check_registered(max, period_ms)?;
        }
    }
    if let Some(op) = job.operation() {
        let used = conn
            .prepare_cached("SELECT 1 FROM duraq_operations WHERE key = ?1")
            .db()?
            .query_row([&op.key], |_| Ok(()))
            .optional()
            .db()?;
        if used.is_some() {
            return Err(operation_key_taken());
        }
    }
    // An id in use is refused by the insert itself (see [`insert_job`]); the
    // request is rolled back whole, so nothing written before it stays.
    Ok(())
}

/// Inserts a row [`check_insert`] passed with its cap and rate registrations
/// and its operation record.
pub(crate) fn insert_checked(tx: &mut Tx<'_>, job: &NewJob, row: &Job) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        insert_cap(tx.conn, limit)?;
    }
    if let Some(limit) = job.rate_limit() {
        insert_rate(tx.conn, limit)?;
    }
    if let Some(op) = job.operation() {
        if !insert_operation(tx.conn, op, &row.id, tx.now)? {
            return Err(operation_key_taken());
        }
    }
    insert_row(tx, job, row)
}

/// The cap key `key` is registered with: `Some(None)` for a key registered
/// without one, `None` for a key not registered.
fn registered_cap(conn: &Connection, key: &str) -> Result<Option<Option<i64>>> {
    conn.prepare_cached("SELECT max_concurrency FROM duraq_concurrency WHERE key = ?1")
        .db()?
        .query_row([key], |r| r.get(0))
        .optional()
        .db()
}

/// Registers the cap of `limit` unless its key is registered.
fn insert_cap(conn: &Connection, limit: &ConcurrencyLimit) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO duraq_concurrency (key, max_concurrency, active_count) VALUES (?1, ?2, 0) \
         ON CONFLICT (key) DO NOTHING",
    )
    .db()?
    .execute(params![limit.key, limit.max])
    .db()?;
    Ok(())
}

/// The (max, period) rate key `key` is registered with, if it is.
fn registered_rate(conn: &Connection, key: &str) -> Result<Option<(i64, i64)>> {
    conn.prepare_cached("SELECT max_starts, period_ms FROM duraq_rate_limits WHERE key = ?1")
        .db()?
        .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()
}

/// Registers `limit` unless its key is registered.
fn insert_rate(conn: &Connection, limit: &RateLimit) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO duraq_rate_limits (key, max_starts, period_ms) VALUES (?1, ?2, ?3) \
         ON CONFLICT (key) DO NOTHING",
    )
    .db()?
    .execute(params![limit.key, limit.max, limit.period_ms])
    .db()?;
    Ok(())
}

/// Records operation `op` of job `job_id`; `false` when its key is taken.
fn insert_operation(conn: &Connection, op: &NewOperation, job_id: &str, now: i64) -> Result<bool> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO duraq_operations (key, data, job_id, created_at_ms) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (key) DO NOTHING",
        )
        .db()?
        .execute(params![op.key, json_text(&op.data)?, job_id, now])
        .db()?;
    Ok(inserted == 1)
}

/// Inserts a decided row (in the status its dependencies gave it, with their
/// edges) and counts it.
fn insert_row(tx: &mut Tx<'_>, job: &NewJob, row: &Job) -> Result<()> {
    let registered = dedupe::scope_registered(tx, job.job_name().as_str(), job.queue().as_str())?;
    insert_job(tx, row, registered)?;
    if !row.depends_on.is_empty() {
        dependencies::write_edges(tx.conn, row)?;
    }
    tx.added(&row.queue, row.status);
    Ok(())
}

/// Inserts one new row; `keyed` (its scope is registered for dedupe) gives it
/// its args digest, made from the canonical text it stores, as a batch's rows.
/// A row with dependencies or of a workflow goes in through [`insert_started`].
fn insert_job(tx: &Tx<'_>, job: &Job, keyed: bool) -> Result<()> {
    let args = canonical_json(&job.args);
    let digest = keyed.then(|| digest_of_canonical("args", args.as_bytes()));
    let row = NewRow::new(job, &args, digest.as_deref());
    if job.depends_on.is_empty() && job.workflow_id.is_none() {
        insert_jobs(tx, &[row])
    } else {
        insert_started(tx, &row)
    }
}
