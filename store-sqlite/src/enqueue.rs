//! Enqueue (`docs/jobs.md`, `docs/idempotency.md`, `docs/dedupe.md`): idempotency
//! scopes, dedupe-while-queued, concurrency cap registration, operation records,
//! dependencies (`docs/workflows.md`: a job with some is read against them and
//! inserted `pending`, `queued` or `cancelled`), and the insert itself. Used by the
//! store's own writer and by [`crate::SqliteStore::enqueue_in_transaction`] on a
//! caller's transaction, so both follow exactly the same rules.

use duraq_core::driver::rules::{apply_start, check_cap, operation_key_taken, replay_owned_scope};
use duraq_core::driver::transitions::{into_job_row, new_job_row};
use duraq_core::driver::{canonical_json, digest_of_canonical};
use duraq_core::{EnqueueOutcome, Job, JobStatus, NewJob, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::dedupe;
use crate::dependencies;
use crate::error::SqlResult;
use crate::insert::{insert_jobs, ArgsTexts};
use crate::insert_started::insert_started;
use crate::new_row::NewRow;
use crate::rows::json_text;
use crate::tx::Tx;

/// One enqueue, checking everything before it writes anything.
pub(crate) fn enqueue(tx: &mut Tx<'_>, job: NewJob) -> Result<EnqueueOutcome> {
    let scope = job.scope_digest();
    if let Some(scope) = &scope {
        let owned: Option<(String, String)> = tx
            .conn
            .prepare_cached(
                "SELECT request_digest, job_id FROM duraq_idempotency WHERE scope_digest = ?1",
            )
            .db()?
            .query_row([scope], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        if let Some((request, job_id)) = owned {
            return replay_owned_scope(&job, &request, job_id);
        }
    }
    if job.deduplicate_while_queued() {
        if let Some(existing) = dedupe::find_duplicate(tx, &job)? {
            return Ok(EnqueueOutcome::Deduplicated(existing));
        }
    }
    check_insert(tx.conn, &job)?;
    let mut row = new_job_row(&job, tx.now);
    if !job.dependencies().is_empty() {
        let start = dependencies::start(tx.conn, job.dependencies())?;
        apply_start(&mut row, &start, tx.now);
    }
    insert_checked(tx, &job, &row)?;
    if let Some(scope) = scope {
        tx.conn
            .prepare_cached(
                "INSERT INTO duraq_idempotency (scope_digest, request_digest, job_id, created_at_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![scope, job.request_digest(), job.id(), tx.now])
            .db()?;
    }
    if row.status == JobStatus::Queued {
        tx.signal_work();
    }
    Ok(EnqueueOutcome::Created(job.id().to_owned()))
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

/// Refuses an insert that would conflict: another cap for the key, or an
/// operation key in use.
pub(crate) fn check_insert(conn: &Connection, job: &NewJob) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        let registered: Option<Option<i64>> = conn
            .prepare_cached("SELECT max_concurrency FROM duraq_concurrency WHERE key = ?1")
            .db()?
            .query_row([&limit.key], |r| r.get(0))
            .optional()
            .db()?;
        // A key registered without a cap (NULL) has nothing to conflict with.
        if let Some(Some(max)) = registered {
            check_cap(limit, max)?;
        }
    }
    if let Some(limit) = job.rate_limit() {
        let registered: Option<(i64, i64)> = conn
            .prepare_cached("SELECT max_starts, period_ms FROM duraq_rate_limits WHERE key = ?1")
            .db()?
            .query_row([&limit.key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        if let Some((max, period_ms)) = registered {
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

/// Inserts a checked row (in the status its dependencies gave it, with their
/// edges) with its cap registration and operation record.
pub(crate) fn insert_checked(tx: &mut Tx<'_>, job: &NewJob, row: &Job) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        tx.conn
            .prepare_cached(
                "INSERT INTO duraq_concurrency (key, max_concurrency, active_count) VALUES (?1, ?2, 0) \
                 ON CONFLICT (key) DO NOTHING",
            )
            .db()?
            .execute(params![limit.key, limit.max])
            .db()?;
    }
    if let Some(limit) = job.rate_limit() {
        tx.conn
            .prepare_cached(
                "INSERT INTO duraq_rate_limits (key, max_starts, period_ms) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (key) DO NOTHING",
            )
            .db()?
            .execute(params![limit.key, limit.max, limit.period_ms])
            .db()?;
    }
    if let Some(op) = job.operation() {
        tx.conn
            .prepare_cached(
                "INSERT INTO duraq_operations (key, data, job_id, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![op.key, json_text(&op.data)?, row.id, tx.now])
            .db()?;
    }
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
