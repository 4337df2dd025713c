//! Priority aging (`docs/queues.md`): so that low-priority work never starves
//! behind a steady stream of higher-priority jobs, a queue may raise the
//! priority of its due jobs by one step per interval they have waited, up to
//! a bound.
//!
//! The raise is written to the row, not computed at claim time: a claim
//! walks its index in stored priority order, and an order computed from the
//! clock would have to read every waiting job. So every worker configured
//! with aging for a queue runs an aging pass with its recovery
//! ([`crate::WorkerStore::age_priorities`]): it sets each due job's priority
//! to its priority as enqueued plus the steps it has earned ([`Job::aged_steps`]
//! records how many were added), never above [`MAX_PRIORITY`]. Any return to
//! `queued` (a retry, a reschedule, an operator retry) gives the steps back
//! ([`crate::driver::transitions`]): the wait that earned them is over. Each
//! pass is idempotent, so several workers aging one queue agree.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;
use crate::time::duration_to_ms_ceil;

/// The highest priority a job can have, enqueued or aged.
pub const MAX_PRIORITY: i64 = 100;

/// A queue's aging: one step of priority per `every_ms` a due job has
/// waited, at most `max_steps` steps.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::PriorityAging;
/// let aging = PriorityAging::new(Duration::from_secs(60), 5).unwrap();
/// assert_eq!(aging.steps(59_999), 0);
/// assert_eq!(aging.steps(150_000), 2);
/// assert_eq!(aging.steps(3_600_000), 5, "bounded");
/// assert!(PriorityAging::new(Duration::ZERO, 5).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PriorityAging {
    /// The wait, in ms, that earns one step (at least 1).
    pub every_ms: i64,
    /// The most steps a job earns (1 to 200).
    pub max_steps: i64,
}

impl PriorityAging {
    /// A validated aging (`invalid-worker-config` otherwise): an interval of
    /// at least 1 ms and 1 to 200 steps (200 takes the lowest priority to the
    /// highest).
    pub fn new(every: Duration, max_steps: u8) -> Result<Self> {
        let every_ms = duration_to_ms_ceil(every).unwrap_or(0);
        if every_ms < 1 || !(1..=200).contains(&max_steps) {
            return Err(Error::invalid(
                ErrorCode::InvalidWorkerConfig,
                "priority aging needs an interval of at least 1ms and 1 to 200 steps",
            ));
        }
        Ok(Self {
            every_ms,
            max_steps: i64::from(max_steps),
        })
    }

    /// The steps a job that has been due for `waited_ms` has earned.
    pub fn steps(&self, waited_ms: i64) -> i64 {
        (waited_ms.max(0) / self.every_ms).min(self.max_steps)
    }

    /// The earliest due time a pass at `now_ms` need look at when the
    /// previous one ran at `last_pass_ms`: a job due before it had earned all
    /// its steps by then, so that pass raised it as far as it goes.
    pub fn oldest_due_to_visit(&self, now_ms: i64, last_pass_ms: i64) -> i64 {
        let full = self
            .every_ms
            .saturating_mul(self.max_steps.saturating_add(1));
        last_pass_ms.min(now_ms).saturating_sub(full)
    }

    /// Raises `job` (queued and due) to the priority its wait at `now_ms`
    /// has earned; whether it changed. The reference for the stores' SQL.
    pub fn raise(&self, job: &mut Job, now_ms: i64) -> bool {
        let base = job.priority - job.aged_steps;
        let earned = self.steps(now_ms.saturating_sub(job.scheduled_at_ms));
        let priority = (base + earned).min(MAX_PRIORITY).max(job.priority);
        if priority == job.priority {
            return false;
        }
        job.aged_steps += priority - job.priority;
        job.priority = priority;
        true
    }
}

/// One aging pass over one queue ([`crate::WorkerStore::age_priorities`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgingPass {
    /// The queue whose queued, due jobs are raised.
    pub queue: String,
    /// Its aging.
    pub aging: PriorityAging,
    /// Jobs due before this are left alone (see
    /// [`PriorityAging::oldest_due_to_visit`]); `None`: every due job, as a
    /// worker's first pass does.
    pub oldest_due_ms: Option<i64>,
    /// The most jobs raised in one pass (the next pass goes on).
    pub limit: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::EnqueueOptions;
    use crate::transitions::new_job_row;
    use crate::NewJob;

    fn job(priority: i8, due: i64) -> Job {
        let opts = EnqueueOptions::new().priority(priority);
        let mut job = new_job_row(&NewJob::new("j", serde_json::json!([]), opts).unwrap(), 0);
        job.scheduled_at_ms = due;
        job
    }

    #[test]
    fn a_job_earns_one_step_per_interval_up_to_the_bound() {
        let aging = PriorityAging::new(Duration::from_millis(1_000), 3).unwrap();
        let mut j = job(-5, 0);
        assert!(!aging.raise(&mut j, 999));
        assert!(aging.raise(&mut j, 2_500));
        assert_eq!((j.priority, j.aged_steps), (-3, 2));
        assert!(!aging.raise(&mut j, 2_900), "idempotent within a step");
        assert!(aging.raise(&mut j, 60_000));
        assert_eq!((j.priority, j.aged_steps), (-2, 3), "bounded at 3 steps");
    }

    #[test]
    fn no_job_is_raised_past_the_highest_priority() {
        let aging = PriorityAging::new(Duration::from_millis(10), 50).unwrap();
        let mut j = job(98, 0);
        assert!(aging.raise(&mut j, 10_000));
        assert_eq!((j.priority, j.aged_steps), (MAX_PRIORITY, 2));
    }

    #[test]
    fn a_pass_visits_only_jobs_that_can_still_earn_a_step() {
        let aging = PriorityAging::new(Duration::from_millis(100), 4).unwrap();
        assert_eq!(aging.oldest_due_to_visit(10_000, 9_000), 9_000 - 500);
        assert_eq!(aging.oldest_due_to_visit(10_000, 20_000), 10_000 - 500);
    }
}
