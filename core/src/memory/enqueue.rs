//! Enqueue on the in-memory state: core's driver ([`crate::steps::enqueue`])
//! over the maps, under the store's lock.
//!
//! The state has no transaction to roll back, so the primitives only read
//! until the last one: a key's registration, the operation record and the
//! scope are written with the row ([`MemorySteps::insert_job`]), after every
//! check passed. Nothing else can write between (the lock is held), so the
//! answers are those of a store that writes as it goes and rolls back.

use super::{Cap, State};
use crate::counts::CountChange;
use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;
use crate::new_job::NewJob;
use crate::options::{ConcurrencyLimit, NewOperation};
use crate::rate::RateLimit;
use crate::requests::{EnqueueOutcome, Operation};
use crate::rules::{check_cap, is_duplicate_of, operation_key_taken, DependencyStart};
use crate::steps::{run_ready, EnqueueSteps, ScopeClaim, ScopeOwner};
use crate::transitions::due_order;

impl State {
    /// One enqueue; checks everything before it changes anything.
    pub(super) fn enqueue(
        &mut self,
        job: NewJob,
        now: i64,
        change: &mut CountChange,
    ) -> Result<EnqueueOutcome> {
        let mut steps = MemorySteps {
            state: self,
            now,
            change,
            scope: None,
        };
        run_ready(crate::steps::enqueue(&mut steps, &job, now))
    }

    /// Checks that inserting `job` cannot conflict (cap, operation key, id):
    /// a schedule key's replacement, which is no enqueue.
    pub(super) fn check_insert(&self, job: &NewJob) -> Result<()> {
        if let Some(limit) = job.concurrency() {
            if let Some(cap) = self.caps.get(&limit.key) {
                check_cap(limit, cap.max)?;
            }
        }
        if let Some(limit) = job.rate_limit() {
            if let Some((max, period_ms)) = self.rate_limits.get(&limit.key) {
                limit.check_registered(*max, *period_ms)?;
            }
        }
        if let Some(op) = job.operation() {
            if self.operations.contains_key(&op.key) {
                return Err(operation_key_taken());
            }
        }
        self.check_id_free(job)
    }

    fn check_id_free(&self, job: &NewJob) -> Result<()> {
        if self.jobs.contains_key(job.id()) {
            return Err(Error::conflict(
                ErrorCode::IdempotencyConflict,
                "a job with this id exists",
            ));
        }
        Ok(())
    }

    /// Inserts a checked row plus its cap registration and operation record.
    pub(super) fn insert(&mut self, job: &NewJob, row: Job, now: i64, change: &mut CountChange) {
        if let Some(limit) = job.concurrency() {
            self.caps.entry(limit.key.clone()).or_insert(Cap {
                max: limit.max,
                active: 0,
            });
        }
        if let Some(limit) = job.rate_limit() {
            self.rate_limits
                .entry(limit.key.clone())
                .or_insert((limit.max, limit.period_ms));
        }
        if let Some(op) = job.operation() {
            self.operations.insert(
                op.key.clone(),
                Operation {
                    key: op.key.clone(),
                    data: op.data.clone(),
                    job_id: row.id.clone(),
                    created_at_ms: now,
                    first_attempt_started_at_ms: None,
                    result: None,
                },
            );
        }
        change.added(&row.queue, row.status);
        self.jobs.insert(row.id.clone(), row);
    }
}

/// The memory store's [`EnqueueSteps`]: reads as they come, writes with the
/// row (see the module docs).
struct MemorySteps<'a> {
    state: &'a mut State,
    now: i64,
    change: &'a mut CountChange,
    /// The scope claimed, written with the row.
    scope: Option<String>,
}

impl EnqueueSteps for MemorySteps<'_> {
    async fn scope_owner(&mut self, scope: &str) -> Result<Option<ScopeOwner>> {
        let owner = self.state.idempotency.get(scope);
        Ok(owner.map(|(request, job_id)| ScopeOwner {
            request_digest: request.clone(),
            job_id: job_id.clone(),
        }))
    }

    async fn find_duplicate(&mut self, job: &NewJob) -> Result<Option<String>> {
        Ok((self.state.jobs.values())
            .filter(|j| is_duplicate_of(job, j, self.now))
            .min_by(|a, b| due_order(a, b))
            .map(|j| j.id.clone()))
    }

    async fn claim_scope(&mut self, scope: &str, _job: &NewJob) -> Result<ScopeClaim> {
        self.scope = Some(scope.to_owned());
        Ok(ScopeClaim::Claimed)
    }

    async fn register_cap(&mut self, limit: &ConcurrencyLimit) -> Result<Option<i64>> {
        Ok(self.state.caps.get(&limit.key).map(|cap| cap.max))
    }

    async fn register_rate(&mut self, limit: &RateLimit) -> Result<Option<(i64, i64)>> {
        Ok(self.state.rate_limits.get(&limit.key).copied())
    }

    async fn insert_operation(&mut self, _job: &NewJob, op: &NewOperation) -> Result<bool> {
        Ok(!self.state.operations.contains_key(&op.key))
    }

    async fn dependency_start(&mut self, job: &NewJob) -> Result<DependencyStart> {
        self.state.dependency_start(job)
    }

    async fn insert_job(&mut self, job: &NewJob, row: &Job) -> Result<()> {
        self.state.check_id_free(job)?;
        self.state.insert(job, row.clone(), self.now, self.change);
        if let Some(scope) = self.scope.take() {
            (self.state.idempotency).insert(scope, (job.request_digest(), row.id.clone()));
        }
        Ok(())
    }

    /// Every enqueue signals work on the memory store.
    fn signal_work(&mut self) {}
}
