//! What a job holds while it is claimed or owns a key, and when it gives each
//! back: one answer for every store and every path that moves a row (a report,
//! a recovery, an operator's action, a cancelled dependent).
//!
//! A store destructures [`GiveBack`] where it writes a transition, so a new
//! thing a job can hold is a new field that every store must handle before it
//! compiles again.

use crate::job::{Job, JobStatus};

/// What a row gives back after a transition out of `from` ([`give_back`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct GiveBack {
    /// Its concurrency reservation, taken by the claim: held only while
    /// `handed_off` (a `pending` job has given it back).
    pub reservation: bool,
    /// Its schedule key, if it still owns one: a finished job owns none, so
    /// the key's next job can take it.
    pub schedule_key: bool,
    /// Its dependents, if any: a finished job settles them (count down,
    /// release or cancel, in the same transaction).
    pub dependents: bool,
    /// Nothing held: workers are woken, because the row is queued again or
    /// its reservation freed a slot that a capped job may be waiting for.
    pub wake_workers: bool,
    /// Its parent's wait, if a job spawned it and waits for it
    /// ([`Job::parent_id`]): a finished child delivers its outcome to the
    /// parent in the same transaction ([`crate::driver::ChildNotice`]).
    pub parent: bool,
}

/// What `job`, just moved out of `from`, gives back.
///
/// ```
/// use duraq_core::driver::rules::give_back;
/// use duraq_core::driver::transitions::new_job_row;
/// use duraq_core::{EnqueueOptions, JobStatus, NewJob};
///
/// let mut job = new_job_row(&NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap(), 0);
/// job.status = JobStatus::Completed;
/// let back = give_back(JobStatus::HandedOff, &job);
/// assert!(back.reservation && back.schedule_key && back.dependents && back.wake_workers);
/// ```
pub fn give_back(from: JobStatus, job: &Job) -> GiveBack {
    let finished = job.status.is_terminal();
    let reservation = from == JobStatus::HandedOff && job.status != JobStatus::HandedOff;
    GiveBack {
        reservation,
        schedule_key: finished,
        dependents: finished,
        wake_workers: reservation || job.status == JobStatus::Queued,
        parent: finished && job.parent_id.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_job::NewJob;
    use crate::options::EnqueueOptions;
    use crate::transitions::new_job_row;

    fn moved(from: JobStatus, to: JobStatus) -> GiveBack {
        let mut job = new_job_row(
            &NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap(),
            0,
        );
        job.status = to;
        give_back(from, &job)
    }

    #[test]
    fn a_retry_gives_back_the_reservation_and_wakes_workers() {
        let back = moved(JobStatus::HandedOff, JobStatus::Queued);
        assert_eq!(
            back,
            GiveBack {
                reservation: true,
                wake_workers: true,
                ..GiveBack::default()
            }
        );
    }

    #[test]
    fn a_pending_job_frees_its_slot_but_keeps_its_key_and_dependents_waiting() {
        let back = moved(JobStatus::HandedOff, JobStatus::Pending);
        assert_eq!(
            back,
            GiveBack {
                reservation: true,
                wake_workers: true,
                ..GiveBack::default()
            }
        );
    }

    #[test]
    fn a_finished_child_answers_its_parent_and_a_retried_one_does_not() {
        let mut job = new_job_row(
            &NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap(),
            0,
        );
        job.parent_id = Some("p".into());
        job.status = JobStatus::Failed;
        assert!(give_back(JobStatus::HandedOff, &job).parent);
        job.status = JobStatus::Queued;
        assert!(!give_back(JobStatus::HandedOff, &job).parent);
        job.parent_id = None;
        job.status = JobStatus::Completed;
        assert!(!give_back(JobStatus::HandedOff, &job).parent);
    }

    #[test]
    fn a_queued_job_cancelled_holds_no_reservation_but_finishes() {
        let back = moved(JobStatus::Queued, JobStatus::Cancelled);
        assert!(!back.reservation && back.schedule_key && back.dependents);
        assert!(!back.wake_workers, "no slot was freed and nothing queued");
    }

    #[test]
    fn a_claim_gives_back_nothing() {
        assert_eq!(
            moved(JobStatus::Queued, JobStatus::HandedOff),
            GiveBack::default()
        );
    }
}
