//! The enqueue decision (`docs/jobs.md`, `docs/idempotency.md`, `docs/dedupe.md`),
//! in the one order [`crate::steps::enqueue`] drives over every store's
//! primitives, inside the enqueue's transaction:
//!
//! 1. **Replay.** With an idempotency key, a scope already owned answers the
//!    enqueue: the same request is replayed, another one is refused
//!    ([`replay_owned_scope`]). Nothing else is read or written.
//! 2. **Dedupe.** With `deduplicate_while_queued`, the earliest (`scheduledAtMs`,
//!    `createdAtMs`, `id`) queued job of the same name, queue and args due no
//!    later than this one is returned instead ([`is_duplicate_of`] says which
//!    rows qualify; the store finds the earliest through its index). Otherwise
//!    a free scope is claimed for this request now; a concurrent first enqueue
//!    of the same scope that won the claim answers as in step 1.
//! 3. **Checks.** The job's concurrency key and rate key, if registered, must
//!    have been registered with the same limits ([`check_cap`],
//!    [`crate::RateLimit::check_registered`]); its operation key must be free
//!    ([`operation_key_taken`]). Only then are the dependencies read
//!    ([`crate::rules::start_of`]: `dependency-not-found`). The first failing
//!    check is the error, and the transaction is rolled back: nothing is
//!    written.
//! 4. **Insert.** The row ([`crate::transitions::new_job_row`], started as
//!    [`crate::rules::apply_start`] says), counted, and work signalled when it
//!    is queued. A key's first registration, the operation row and the scope
//!    row are written by the steps that check them (or with the row, by a
//!    store with a single writer).
//!
//! A run of consecutive jobs in a batch that are all [`NewJob::is_plain`]
//! skips steps 1–3 (there is nothing to read) and may insert its rows with one
//! statement (PostgreSQL: one `COPY` for a long run), before the next keyed job
//! is decided: that is the only shortcut, and it is the rule's own case of jobs
//! with no keys. It stays each store's own; every other job goes through
//! [`crate::steps::enqueue`].

use crate::error::{Error, ErrorCode, Result};
use crate::job::{Job, JobStatus};
use crate::new_job::NewJob;
use crate::options::ConcurrencyLimit;
use crate::requests::EnqueueOutcome;

/// Step 1: the answer of an enqueue whose idempotency scope is already owned
/// by the request with digest `request_digest`, which created `job_id`.
///
/// ```
/// use duraq_core::driver::rules::replay_owned_scope;
/// use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, NewJob};
/// let job = NewJob::new("j", serde_json::json!([1]), EnqueueOptions::new().idempotency_key("k")).unwrap();
/// let same = replay_owned_scope(&job, &job.request_digest(), "first".into()).unwrap();
/// assert_eq!(same, EnqueueOutcome::Replayed("first".into()));
/// let other = replay_owned_scope(&job, "another request", "first".into()).unwrap_err();
/// assert_eq!(other.code(), ErrorCode::IdempotencyConflict);
/// ```
pub fn replay_owned_scope(
    job: &NewJob,
    request_digest: &str,
    job_id: String,
) -> Result<EnqueueOutcome> {
    if job.matches_request_digest(request_digest) {
        return Ok(EnqueueOutcome::Replayed(job_id));
    }
    Err(Error::conflict(
        ErrorCode::IdempotencyConflict,
        "this idempotency key already owns a different request",
    ))
}

/// Step 2: whether the existing row `existing` may answer a dedupe request for
/// `job` enqueued at `now_ms`.
pub fn is_duplicate_of(job: &NewJob, existing: &Job, now_ms: i64) -> bool {
    existing.status == JobStatus::Queued
        && existing.job_name == job.job_name().as_str()
        && existing.queue == job.queue().as_str()
        && existing.args == *job.args()
        && existing.scheduled_at_ms <= job.due_at_ms(now_ms)
}

/// Step 3: `concurrency-cap-conflict` unless the key was registered with this
/// cap (`registered_max`, the cap its first job named).
pub fn check_cap(limit: &ConcurrencyLimit, registered_max: i64) -> Result<()> {
    if registered_max == limit.max {
        return Ok(());
    }
    Err(Error::conflict(
        ErrorCode::ConcurrencyCapConflict,
        format!(
            "concurrency key {:?} is registered with cap {registered_max}, not {}",
            limit.key, limit.max
        ),
    ))
}

/// Step 3: the error of an operation key already owned by another enqueue.
pub fn operation_key_taken() -> Error {
    Error::conflict(
        ErrorCode::IdempotencyConflict,
        "this operation key is already owned by another enqueue",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::EnqueueOptions;
    use crate::transitions::new_job_row;
    use std::time::Duration;

    #[test]
    fn a_different_cap_conflicts() {
        let limit = ConcurrencyLimit {
            key: "k".into(),
            max: 2,
        };
        assert!(check_cap(&limit, 2).is_ok());
        assert_eq!(
            check_cap(&limit, 3).unwrap_err().code(),
            ErrorCode::ConcurrencyCapConflict
        );
    }

    #[test]
    fn a_duplicate_is_queued_identical_and_due_no_later() {
        let job = NewJob::new("j", serde_json::json!([1]), EnqueueOptions::new()).unwrap();
        let mut existing = new_job_row(&job, 100);
        existing.id = "other".into();
        assert!(is_duplicate_of(&job, &existing, 100));
        let later = NewJob::new(
            "j",
            serde_json::json!([1]),
            EnqueueOptions::new().run_in(Duration::from_secs(1)),
        )
        .unwrap();
        assert!(is_duplicate_of(&later, &existing, 100));
        existing.scheduled_at_ms = 5_000;
        assert!(
            !is_duplicate_of(&job, &existing, 100),
            "due after the request"
        );
        existing.scheduled_at_ms = 100;
        existing.status = JobStatus::HandedOff;
        assert!(!is_duplicate_of(&job, &existing, 100), "no longer queued");
        existing.status = JobStatus::Queued;
        existing.args = serde_json::json!([2]);
        assert!(!is_duplicate_of(&job, &existing, 100), "other args");
    }
}
