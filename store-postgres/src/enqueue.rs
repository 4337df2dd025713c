//! Enqueue (`docs/jobs.md`, `docs/idempotency.md`, `docs/dedupe.md`,
//! `docs/queues.md`): this store's primitives for core's one-job driver
//! ([`duraq_core::driver::steps::enqueue`], which owns the order), and its batches.
//!
//! Races between processes are settled by unique keys and locks, never by
//! reading first and hoping. The scope row is inserted with `ON CONFLICT DO
//! NOTHING`, which waits for a concurrent inserter and, if that one committed,
//! lets this transaction read its row and answer `Replayed` (or
//! `idempotency-conflict`): the transaction stays usable, so one job per scope
//! comes out of any number of concurrent producers. A cap or rate key is
//! registered the same way and then read; an operation key is taken by its
//! insert; identical dedupe requests take turns on an advisory lock.
//!
//! A job with dependencies starts as its dependencies' statuses say
//! ([`crate::dependencies`]): `queued`, `pending` or `cancelled`, counted in
//! that status, its edges written with it. A dependency that is no job refuses
//! the enqueue (`dependency-not-found`), and with it the whole batch.
//!
//! A batch decides runs of plain jobs and of jobs that only wait together
//! ([`enqueue_many`]): the rule's own case of jobs with nothing to register.

use duraq_core::driver::rules::{check_cap, DependencyStart};
use duraq_core::driver::steps::{EnqueueSteps, ScopeClaim, ScopeOwner};
use duraq_core::driver::transitions::new_job_row;
use duraq_core::{
    ConcurrencyLimit, EnqueueOutcome, Error, Job, JobStatus, NewJob, NewOperation, RateLimit,
    Result,
};

use crate::columns::ArgsText;
use crate::copy::{copy_jobs, COPY_MIN_ROWS};
use crate::dedupe;
use crate::enqueue_waiting::enqueue_waiting;
use crate::insert::{chosen_ids, insert_jobs};
use crate::tx::Tx;

/// One enqueue inside `tx`: core's driver ([`duraq_core::driver::steps::enqueue`])
/// over [`PgSteps`].
pub(crate) async fn enqueue_one(tx: &mut Tx<'_>, job: &NewJob) -> Result<EnqueueOutcome> {
    let now = tx.now;
    duraq_core::driver::steps::enqueue(&mut PgSteps(tx), job, now).await
}

/// PostgreSQL's [`EnqueueSteps`] (see the module docs for how each race is
/// settled).
struct PgSteps<'t, 'a>(&'t mut Tx<'a>);

impl EnqueueSteps for PgSteps<'_, '_> {
    async fn scope_owner(&mut self, scope: &str) -> Result<Option<ScopeOwner>> {
        scope_owner(self.0, scope).await
    }

    async fn find_duplicate(&mut self, job: &NewJob) -> Result<Option<String>> {
        // Concurrent identical dedupe requests take turns, so they converge.
        let tx = &*self.0;
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
        dedupe::find_duplicate(tx, job).await
    }

    async fn claim_scope(&mut self, scope: &str, job: &NewJob) -> Result<ScopeClaim> {
        let tx = &*self.0;
        let inserted = tx
            .db
            .query(
                "INSERT INTO {s}.duraq_idempotency (scope_digest, request_digest, job_id, created_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (scope_digest) DO NOTHING RETURNING 1",
                &[&scope, &job.request_digest(), &job.id(), &tx.now],
            )
            .await?;
        if !inserted.is_empty() {
            return Ok(ScopeClaim::Claimed);
        }
        // A concurrent first enqueue committed the scope while we waited.
        match scope_owner(tx, scope).await? {
            Some(owner) => Ok(ScopeClaim::OwnedBy(owner)),
            None => Err(Error::Busy {
                message: "idempotency scope changed concurrently".into(),
            }),
        }
    }

    async fn register_cap(&mut self, limit: &ConcurrencyLimit) -> Result<Option<i64>> {
        register_cap(self.0, limit).await.map(Some)
    }

    async fn register_rate(&mut self, limit: &RateLimit) -> Result<Option<(i64, i64)>> {
        register_rate(self.0, limit).await.map(Some)
    }

    async fn insert_operation(&mut self, job: &NewJob, op: &NewOperation) -> Result<bool> {
        let tx = &*self.0;
        let inserted = tx
            .db
            .query(
                "INSERT INTO {s}.duraq_operations (op_key, data, job_id, created_at_ms) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (op_key) DO NOTHING RETURNING 1",
                &[&op.key, &op.data.to_string(), &job.id(), &tx.now],
            )
            .await?;
        Ok(!inserted.is_empty())
    }

    async fn dependency_start(&mut self, job: &NewJob) -> Result<DependencyStart> {
        crate::dependencies::start(&self.0.db, job).await
    }

    async fn insert_job(&mut self, job: &NewJob, row: &Job) -> Result<()> {
        let tx = &mut *self.0;
        insert_jobs(&tx.db, std::slice::from_ref(job), std::slice::from_ref(row)).await?;
        if !row.depends_on.is_empty() {
            crate::dependencies::write_edges(&tx.db, row).await?;
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
        Ok(())
    }

    fn signal_work(&mut self) {
        self.0.work = true;
    }
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
    if jobs.len() >= COPY_MIN_ROWS && tx.db.can_copy() {
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

/// Who owns idempotency scope `scope`, if anyone does.
async fn scope_owner(tx: &Tx<'_>, scope: &str) -> Result<Option<ScopeOwner>> {
    let row = tx
        .db
        .query_opt(
            "SELECT request_digest, job_id FROM {s}.duraq_idempotency WHERE scope_digest = $1",
            &[&scope],
        )
        .await?;
    Ok(row.map(|row| ScopeOwner {
        request_digest: row.get(0),
        job_id: row.get(1),
    }))
}

/// Registers an explicit key's cap and the job's rate limit on first use; a
/// different cap or limit later conflicts. For a schedule key's replacement,
/// which is no enqueue.
pub(crate) async fn register_limits(tx: &Tx<'_>, job: &NewJob) -> Result<()> {
    if let Some(limit) = job.concurrency() {
        check_cap(limit, register_cap(tx, limit).await?)?;
    }
    if let Some(limit) = job.rate_limit() {
        let (max, period_ms) = register_rate(tx, limit).await?;
        limit.check_registered(max, period_ms)?;
    }
    Ok(())
}

/// Registers `limit`'s cap unless its key is registered, then reads the cap
/// in force: a concurrent first registration is waited for by the insert and
/// seen by the read, a statement later.
async fn register_cap(tx: &Tx<'_>, limit: &ConcurrencyLimit) -> Result<i64> {
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
    Ok(row.get(0))
}

/// Registers rate limit `limit` unless its key is registered, then reads the
/// limit in force (as [`register_cap`]).
async fn register_rate(tx: &Tx<'_>, limit: &RateLimit) -> Result<(i64, i64)> {
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
    Ok((row.get(0), row.get(1)))
}
