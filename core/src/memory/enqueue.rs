//! Enqueue, idempotency, dedupe and cap registration on the in-memory state.

use super::{Cap, State};
use crate::counts::CountChange;
use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;
use crate::new_job::NewJob;
use crate::requests::{EnqueueOutcome, Operation};
use crate::rules::{
    apply_start, check_cap, is_duplicate_of, operation_key_taken, replay_owned_scope,
};
use crate::transitions::{due_order, new_job_row};

impl State {
    /// One enqueue; checks everything before it changes anything.
    pub(super) fn enqueue(
        &mut self,
        job: NewJob,
        now: i64,
        change: &mut CountChange,
    ) -> Result<EnqueueOutcome> {
        let scope = job.scope_digest();
        if let Some(scope) = &scope {
            if let Some((request, job_id)) = self.idempotency.get(scope) {
                return replay_owned_scope(&job, request, job_id.clone());
            }
        }
        if job.deduplicate_while_queued() {
            if let Some(existing) = self.find_duplicate(&job, now) {
                return Ok(EnqueueOutcome::Deduplicated(existing));
            }
        }
        self.check_insert(&job)?;
        let start = self.dependency_start(&job)?;
        let mut row = new_job_row(&job, now);
        apply_start(&mut row, &start, now);
        self.insert(&job, row, now, change);
        if let Some(scope) = scope {
            self.idempotency
                .insert(scope, (job.request_digest(), job.id().to_owned()));
        }
        Ok(EnqueueOutcome::Created(job.id().to_owned()))
    }

    /// Checks that inserting `job` cannot conflict (cap, operation key, id).
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

    fn find_duplicate(&self, job: &NewJob, now: i64) -> Option<String> {
        self.jobs
            .values()
            .filter(|j| is_duplicate_of(job, j, now))
            .min_by(|a, b| due_order(a, b))
            .map(|j| j.id.clone())
    }
}
