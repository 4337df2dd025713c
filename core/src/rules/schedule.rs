//! Stable schedule keys (`docs/schedule-keys.md`): what replacing, cancelling
//! and waking a key does to its current owner.
//!
//! A store reads the key's owner inside its transaction (under the key's lock on
//! PostgreSQL, SQLite's write lock otherwise), asks one of these functions, and
//! persists the answer: the owner's transition (through
//! [`crate::transitions::operator_cancel`], releasing the reservation of a
//! running owner that is stopped), the new owner row, the ownership row.

use crate::error::{Error, ErrorCode, Result};
use crate::job::{Job, JobStatus};
use crate::new_job::NewJob;
use crate::requests::{CancelOutcome, RunningOwner, WakeOutcome};

/// What becomes of a key's current owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerFate {
    /// It stays as it is (a running owner that keeps running).
    Keep,
    /// It is `queued`: it becomes `cancelled`.
    CancelQueued,
    /// It is `handed_off` and asked to stop: cancelled as by an operator
    /// cancel, its lease voided and its reservation released.
    Stop,
}

impl OwnerFate {
    /// Whether the owner is cancelled.
    pub fn cancels(self) -> bool {
        self != OwnerFate::Keep
    }
}

/// `unsupported-option` unless `job` may replace a key's owner: a replacement
/// takes neither an idempotency key nor dedupe (the key is its identity), nor
/// dependencies (a key's owner is due at its own time, never `pending`).
pub fn check_replacement(job: &NewJob) -> Result<()> {
    if job.idempotency_key().is_some()
        || job.deduplicate_while_queued()
        || !job.dependencies().is_empty()
    {
        return Err(Error::invalid(
            ErrorCode::UnsupportedOption,
            "replace_scheduled takes no idempotency key, dedupe or dependencies",
        ));
    }
    Ok(())
}

/// What a replacement does to the current owner (the new job always becomes
/// the owner).
///
/// ```
/// use duraq_core::driver::rules::{owner_on_replace, OwnerFate};
/// use duraq_core::{JobStatus, RunningOwner};
/// assert_eq!(owner_on_replace(JobStatus::Queued, RunningOwner::KeepRunning), OwnerFate::CancelQueued);
/// assert_eq!(owner_on_replace(JobStatus::HandedOff, RunningOwner::KeepRunning), OwnerFate::Keep);
/// assert_eq!(owner_on_replace(JobStatus::HandedOff, RunningOwner::Stop), OwnerFate::Stop);
/// ```
pub fn owner_on_replace(owner: JobStatus, running: RunningOwner) -> OwnerFate {
    match (owner, running) {
        (JobStatus::Queued, _) => OwnerFate::CancelQueued,
        (JobStatus::HandedOff, RunningOwner::Stop) => OwnerFate::Stop,
        _ => OwnerFate::Keep,
    }
}

/// What cancelling the key does to its current owner, and the outcome the
/// caller sees. The key's ownership is dropped in every case.
pub fn owner_on_cancel(owner: JobStatus, running: RunningOwner) -> (OwnerFate, CancelOutcome) {
    match owner_on_replace(owner, running) {
        OwnerFate::CancelQueued => (OwnerFate::CancelQueued, CancelOutcome::Cancelled),
        OwnerFate::Stop => (OwnerFate::Stop, CancelOutcome::Stopped),
        OwnerFate::Keep => (OwnerFate::Keep, CancelOutcome::HandedOff),
    }
}

/// What waking the key does: a future queued owner becomes due at `now_ms`
/// ([`WakeOutcome::Woken`]: the store sets `scheduledAtMs = now_ms` and
/// signals work); anything else is left alone.
pub fn owner_on_wake(owner: &Job, now_ms: i64) -> WakeOutcome {
    match owner.status {
        JobStatus::Queued if owner.scheduled_at_ms > now_ms => WakeOutcome::Woken,
        JobStatus::Queued => WakeOutcome::AlreadyDue,
        _ => WakeOutcome::HandedOff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_outcomes_follow_the_owner_fate() {
        use JobStatus::*;
        use RunningOwner::*;
        assert_eq!(
            owner_on_cancel(Queued, Stop),
            (OwnerFate::CancelQueued, CancelOutcome::Cancelled)
        );
        assert_eq!(
            owner_on_cancel(HandedOff, KeepRunning),
            (OwnerFate::Keep, CancelOutcome::HandedOff)
        );
        assert_eq!(
            owner_on_cancel(HandedOff, Stop),
            (OwnerFate::Stop, CancelOutcome::Stopped)
        );
    }

    #[test]
    fn only_a_future_queued_owner_is_woken() {
        let job = |status, at| Job {
            status,
            scheduled_at_ms: at,
            ..crate::transitions::new_job_row(
                &NewJob::new("j", serde_json::json!([]), crate::EnqueueOptions::new()).unwrap(),
                0,
            )
        };
        assert_eq!(
            owner_on_wake(&job(JobStatus::Queued, 10), 5),
            WakeOutcome::Woken
        );
        assert_eq!(
            owner_on_wake(&job(JobStatus::Queued, 5), 5),
            WakeOutcome::AlreadyDue
        );
        assert_eq!(
            owner_on_wake(&job(JobStatus::HandedOff, 10), 5),
            WakeOutcome::HandedOff
        );
    }

    #[test]
    fn a_replacement_refuses_idempotency_and_dedupe() {
        let keyed = crate::EnqueueOptions::new().idempotency_key("k");
        let job = NewJob::new("j", serde_json::json!([]), keyed).unwrap();
        assert_eq!(
            check_replacement(&job).unwrap_err().code(),
            ErrorCode::UnsupportedOption
        );
    }
}
