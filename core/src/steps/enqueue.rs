//! One job's enqueue, driven by core over a store's [`EnqueueSteps`]: the order
//! of [`crate::rules`]'s enqueue decisions (replay, dedupe, checks, insert),
//! written once for every store.
//!
//! Every step runs inside the store's transaction for the enqueue, and an
//! error from [`enqueue`] means the store rolls that transaction back (or its
//! savepoint, for a caller's transaction): so a primitive may write before a
//! later check fails. That is what lets PostgreSQL settle races with unique
//! keys (register, then read what is registered) instead of reading first and
//! hoping. A store with a single writer may instead check in the primitive and
//! write with the row in [`EnqueueSteps::insert_job`], since nothing can
//! register the same key in between; the answers are the same.
//!
//! The plain-batch shortcuts (runs of [`NewJob::is_plain`] jobs, inserted many
//! per statement) are not driven from here: they are the rule's own case of
//! jobs with nothing to read, and stay each store's.

use crate::error::Result;
use crate::job::{Job, JobStatus};
use crate::new_job::NewJob;
use crate::options::{ConcurrencyLimit, NewOperation};
use crate::rate::RateLimit;
use crate::requests::EnqueueOutcome;
use crate::rules::{
    apply_start, check_cap, operation_key_taken, replay_owned_scope, DependencyStart,
};
use crate::transitions::new_job_row;

/// Who owns an idempotency scope: the request it was claimed by and the job
/// that request created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeOwner {
    /// [`NewJob::request_digest`] of the owning request.
    pub request_digest: String,
    /// The job it created.
    pub job_id: String,
}

/// The answer of [`EnqueueSteps::claim_scope`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeClaim {
    /// The scope is this enqueue's now.
    Claimed,
    /// A concurrent enqueue claimed it first (and committed).
    OwnedBy(ScopeOwner),
}

/// A store's primitives for one enqueue, each one entity and one verb, all in
/// the enqueue's transaction (see the module docs). [`enqueue`] calls them in
/// its order; a store never calls them in another.
///
/// The methods are `async fn`s without a `Send` bound (hence the allowed
/// lint): [`enqueue`] is generic and each store instantiates it with its own
/// type, so its future is `Send` exactly when the store's primitives are
/// (PostgreSQL's are; SQLite's borrow a connection on the writer thread and
/// run through [`super::run_ready`]). No future is boxed.
#[allow(async_fn_in_trait)]
pub trait EnqueueSteps {
    /// Who owns idempotency scope `scope` (a [`NewJob::scope_digest`]), if
    /// anyone does.
    async fn scope_owner(&mut self, scope: &str) -> Result<Option<ScopeOwner>>;

    /// The earliest (`scheduledAtMs`, `createdAtMs`, `id`) job that `job`
    /// duplicates ([`crate::rules::is_duplicate_of`]), if any. Concurrent
    /// identical requests must take turns here (PostgreSQL: an advisory
    /// lock), so they converge on one job.
    async fn find_duplicate(&mut self, job: &NewJob) -> Result<Option<String>>;

    /// Claims scope `scope` for `job`'s request, after [`Self::scope_owner`]
    /// found it free and dedupe answered nothing. A concurrent enqueue may have claimed it meanwhile: its
    /// owner is the answer then (PostgreSQL: `ON CONFLICT DO NOTHING`, which
    /// waits for that enqueue, then a re-read). A single writer just claims.
    async fn claim_scope(&mut self, scope: &str, job: &NewJob) -> Result<ScopeClaim>;

    /// Registers `limit.key` with cap `limit.max` unless it is registered,
    /// and returns the cap it is registered with: `None` when this enqueue
    /// registers it (or the key was registered without a cap).
    async fn register_cap(&mut self, limit: &ConcurrencyLimit) -> Result<Option<i64>>;

    /// Registers rate key `limit.key` with `(limit.max, limit.period_ms)`
    /// unless it is registered, and returns what it is registered with
    /// (`None` when this enqueue registers it).
    async fn register_rate(&mut self, limit: &RateLimit) -> Result<Option<(i64, i64)>>;

    /// Records operation `op` for `job`; `false` (nothing recorded) when its
    /// key is already owned.
    async fn insert_operation(&mut self, job: &NewJob, op: &NewOperation) -> Result<bool>;

    /// How `job`, which has dependencies, starts: the statuses of its
    /// dependencies read (and, where others may change them, locked) for
    /// [`crate::rules::start_of`].
    async fn dependency_start(&mut self, job: &NewJob) -> Result<DependencyStart>;

    /// Inserts `row`, the decided row of `job` (with its dependency edges),
    /// and counts it in its status. An id in use is refused here.
    async fn insert_job(&mut self, job: &NewJob, row: &Job) -> Result<()>;

    /// Work may have become available: wake workers once committed.
    fn signal_work(&mut self);
}

/// One enqueue of `job` at `now` over `steps`, in the one order (see
/// [`crate::rules`]'s enqueue decisions): the first answer or failing check
/// ends it, and on an error the store rolls back whatever the steps wrote.
pub async fn enqueue<S: EnqueueSteps>(
    steps: &mut S,
    job: &NewJob,
    now: i64,
) -> Result<EnqueueOutcome> {
    // 1. Replay.
    let scope = job.scope_digest();
    if let Some(scope) = &scope {
        if let Some(owner) = steps.scope_owner(scope).await? {
            return replay_owned_scope(job, &owner.request_digest, owner.job_id);
        }
    }
    // 2. Dedupe.
    if job.deduplicate_while_queued() {
        if let Some(existing) = steps.find_duplicate(job).await? {
            return Ok(EnqueueOutcome::Deduplicated(existing));
        }
    }
    // The scope is claimed before anything else is written, so that a
    // concurrent first enqueue of it is waited for and replayed, whatever it
    // registered.
    if let Some(scope) = &scope {
        if let ScopeClaim::OwnedBy(owner) = steps.claim_scope(scope, job).await? {
            return replay_owned_scope(job, &owner.request_digest, owner.job_id);
        }
    }
    // 3. Checks: cap, rate limit, operation key, then the dependencies.
    if let Some(limit) = job.concurrency() {
        if let Some(max) = steps.register_cap(limit).await? {
            check_cap(limit, max)?;
        }
    }
    if let Some(limit) = job.rate_limit() {
        if let Some((max, period_ms)) = steps.register_rate(limit).await? {
            limit.check_registered(max, period_ms)?;
        }
    }
    if let Some(op) = job.operation() {
        if !steps.insert_operation(job, op).await? {
            return Err(operation_key_taken());
        }
    }
    let mut row = new_job_row(job, now);
    if !job.dependencies().is_empty() {
        let start = steps.dependency_start(job).await?;
        apply_start(&mut row, &start, now);
    }
    // 4. Insert.
    steps.insert_job(job, &row).await?;
    if row.status == JobStatus::Queued {
        steps.signal_work();
    }
    Ok(EnqueueOutcome::Created(row.id))
}
