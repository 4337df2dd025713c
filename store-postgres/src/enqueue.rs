//! Enqueue (`docs/jobs.md`, `docs/idempotency.md`, `docs/dedupe.md`,
//! `docs/queues.md`): idempotency scopes, dedupe-while-queued, cap registration,
//! operation records, and batches.
//!
//! Races between processes are settled by unique keys, never by reading first and
//! hoping: the scope row is inserted with `ON CONFLICT DO NOTHING`, which waits for
//! a concurrent inserter and, if that one committed, lets this transaction read its
//! row and answer `Replayed` (or `idempotency-conflict`) — the transaction stays
//! usable, so one job per scope comes out of any number of concurrent producers.
//!
//! A job with dependencies starts as its dependencies' statuses say
//! ([`crate::dependencies`]): `queued`, `pending` or `cancelled`, counted in
//! that status, its edges written with it. A dependency that is no job refuses
//! the enqueue (`dependency-not-found`), and with it the whole batch.

use duraq_core::driver::rules::{apply_start, check_cap, operation_key_taken, replay_owned_scope};
use duraq_core::driver::transitions::new_job_row;
use duraq_core::{EnqueueOutcome, Error, JobStatus, NewJob, Result};

use crate::columns::ArgsText;
use crate::copy::{copy_jobs, COPY_MIN_ROWS};
use crate::dedupe;
use crate::enqueue_waiting::enqueue_waiting;
use crate::insert::{chosen_ids, insert_jobs};
use crate::tx::Tx;

/// One enqueue inside `tx`, following [`duraq_core::Store::enqueue`].
pub(crate) async fn enqueue_one(tx: &mut Tx<'_>, job: &NewJob) -> Result<EnqueueOutcome> {
    let scope = job.scope_digest();
    if let Some(scope) = &scope {
        if let Some(found) = owned_scope(tx, scope, job).await? {
            return found;
        }
    }
    if job.deduplicate_while_queued() {
        // Concurrent identical dedupe requests take turns, so they converge.
        let class = format!("duraq.dedupe:{}", tx.db.names.schema);
        let identity = format!(
            "{}\u{1f}{}\u{1f}{}",
            job.job_name(),
            job.queue(),
            job.args_digest()
        );
        tx.db
            .execute(
                "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))::text",
                &[&class, &identity],
            )
            .await?;
        if let Some(id) = dedupe::find_duplicate(tx, job).await? {
            return Ok(EnqueueOutcome::Deduplicated(id));
        }
    }
    register_limits(tx, job).await?;
    // The operation key is one of core's checks (step 3), decided before the
    // dependencies are read, as every store does.
    insert_operation(tx, job).await?;
    if let Some(scope) = &scope {
        let inserted = tx
            .db
            .query(
                "INSERT INTO {s}.duraq_idempotency (scope_digest, request_digest, job_id, created_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (scope_digest) DO NOTHING RETURNING 1",
                &[scope, &job.request_digest(), &job.id(), &tx.now],
            )
            .await?;
        if inserted.is_empty() {
            // A concurrent first enqueue committed the scope while we waited.
            if let Some(found) = owned_scope(tx, scope, job).await? {
                return found;
            }
            return Err(Error::Busy {
                message: "idempotency scope changed concurrently".into(),
            });
        }
    }
    let mut row = new_job_row(job, tx.now);
    let waits = !job.dependencies().is_empty();
    if waits {
        let start = crate::dependencies::start(&tx.db, job).await?;
        apply_start(&mut row, &start, tx.now);
    }
    insert_jobs(
        &tx.db,
        std::slice::from_ref(job),
        std::slice::from_ref(&row),
    )
    .await?;
    if waits {
        crate::dependencies::write_edges(&tx.db, &row).await?;
    }
    if let (Some(workflow_id), Some(step)) = (&row.workflow_id, &row.step) {
        tx.db
            .execute(
                "UPDATE {s}.duraq_jobs SET workflow_id = $2, step = $3 WHERE id = $1",
                &[&row.id, workflow_id, step],
            )
            .await?;
    }
    tx.change.added(&row.queue, row.status);
    tx.work |= row.status == JobStatus::Queued;
    Ok(EnqueueOutcome::Created(row.id))
}

/// Many enqueues in one transaction, in order. Each run of consecutive plain
/// jobs ([`NewJob::is_plain`]: nothing to read or decide, core's shortcut) goes in
/// with one statement ([`insert_fresh`]); each run of jobs that only wait
/// ([`NewJob::only_waits`]: dependencies or workflow steps) with a few
/// ([`enqueue_waiting`]); any other job takes [`enqueue_one`]. A run is
/// written before the job after it is decided, so a later dedupe request of
/// the batch finds an earlier plain job of it, as it would one by one.
pub(crate) async fn enqueue_many(tx: &mut Tx<'_>, jobs: &[NewJob]) -> Result<Vec<EnqueueOutcome>> {
    let mut outcomes = Vec::with_capacity(jobs.len());
    let mut rest = jobs;
    while let Some(first) = rest.first() {
        let plain = rest.iter().take_while(|j| j.is_plain()).count();
        let waiting = (rest.iter())
            .take_while(|j| j.only_waits() && !j.is_plain())
            .count();
        let taken = if plain > 0 {
            outcomes.extend(insert_fresh(tx, &rest[..plain]).await?);
            plain
        } else if waiting > 1 {
            outcomes.extend(enqueue_waiting(tx, &rest[..waiting]).await?);
            waiting
        } else {
            outcomes.push(enqueue_one(tx, first).await?);
            1
        };
        rest = &rest[taken..];
    }
    Ok(outcomes)
}

/// Inserts plain `jobs` as fresh rows: through `COPY` from [`COPY_MIN_ROWS`]
/// rows on, otherwise with one `INSERT … SELECT FROM unnest(…)`.
async fn insert_fresh(tx: &mut Tx<'_>, jobs: &[NewJob]) -> Result<Vec<EnqueueOutcome>> {
    let rows: Vec<_> = jobs.iter().map(|j| new_job_row(j, tx.now)).collect();
    if jobs.len() >= COPY_MIN_ROWS {
        let args: Vec<ArgsText> = jobs.iter().map(ArgsText::of).collect();
        copy_jobs(&tx.db, &rows, &args, &chosen_ids(jobs)).await?;
    } else {
        insert_jobs(&tx.db, jobs, &rows).await?;
    }
    for row in &rows {
        tx.change.added(&row.queue, JobStatus::Queued);
    }
    tx.work = true;
    Ok(rows
        .into_iter()
        .map(|r| EnqueueOutcome::Created(r.id))
        .collect())
}

/// `Some(Ok(Replayed))` or `Some(Err(conflict))` when the scope is already owned.
async fn owned_scope(
    tx: &Tx<'_>,
    scope: &str,
    job: &NewJob,
) -> Result<Option<Result<EnqueueOutcome>>> {
    let row = tx
        .db
        .query_opt(
            "SELECT request_digest, job_id FROM {s}.duraq_idempotency WHERE scope_digest = $1",
            &[&scope],
        )
        .await?;
    Ok(row.map(|row| replay_owned_scope(job, row.get(0), row.get(1))))
}

/// Registers an explicit key's cap and the job's rate limit on first use; a
/// different cap or limit later conflicts.
pub(crate) async fn register_limits(tx: &Tx<'_>, job: &NewJob) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        tx.db
            .execute(
                "INSERT INTO {s}.duraq_concurrency (concurrency_key, max_concurrency, active) VALUES ($1, $2, 0) \
                 ON CONFLICT (concurrency_key) DO NOTHING",
                &[&limit.key, &limit.max],
            )
            .await?;
        let row = tx
            .db
            .query_one(
                "SELECT max_concurrency FROM {s}.duraq_concurrency WHERE concurrency_key = $1",
                &[&limit.key],
            )
            .await?;
        check_cap(limit, row.get(0))?;
    }
    if let Some(limit) = job.rate_limit() {
        tx.db
            .execute(
                "INSERT INTO {s}.duraq_rate_limits (rate_key, max_starts, period_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (rate_key) DO NOTHING",
                &[&limit.key, &limit.max, &limit.period_ms],
            )
            .await?;
        let row = tx
            .db
            .query_one(
                "SELECT max_starts, period_ms FROM {s}.duraq_rate_limits WHERE rate_key = $1",
                &[&limit.key],
            )
            .await?;
        limit.check_registered(row.get(0), row.get(1))?;
    }
    Ok(())
}

async fn insert_operation(tx: &Tx<'_>, job: &NewJob) -> Result<()> {
    let Some(op) = job.operation() else {
        return Ok(());
    };
    let inserted = tx
        .db
        .query(
            "INSERT INTO {s}.duraq_operations (op_key, data, job_id, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (op_key) DO NOTHING RETURNING 1",
            &[&op.key, &op.data.to_string(), &job.id(), &tx.now],
        )
        .await?;
    if inserted.is_empty() {
        return Err(operation_key_taken());
    }
    Ok(())
}
