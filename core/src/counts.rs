//! Count snapshots and deltas (SPEC §8).

use serde::{Deserialize, Serialize};

use crate::job::JobStatus;

/// Jobs per status; `all` is their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct StatusCounts {
    /// Jobs waiting to be claimed (due or not).
    pub queued: i64,
    /// Jobs claimed by a worker and not yet reported.
    pub handed_off: i64,
    /// Jobs that succeeded.
    pub completed: i64,
    /// Jobs whose last attempt failed with no retries left (or discarded).
    pub failed: i64,
    /// Jobs cancelled by an operator or a schedule-key replace.
    pub cancelled: i64,
    /// Jobs whose worker died with no retries left.
    pub orphaned: i64,
    /// The sum of the six statuses.
    pub all: i64,
}

impl StatusCounts {
    /// Builds counts from one number per status in [`JobStatus::ALL`] order.
    pub fn from_array(per_status: [i64; 6]) -> Self {
        let [queued, handed_off, completed, failed, cancelled, orphaned] = per_status;
        Self {
            queued,
            handed_off,
            completed,
            failed,
            cancelled,
            orphaned,
            all: per_status.iter().sum(),
        }
    }

    /// The count of one status.
    pub fn get(&self, status: JobStatus) -> i64 {
        self.as_array()[status.index()]
    }

    /// One number per status in [`JobStatus::ALL`] order.
    pub fn as_array(&self) -> [i64; 6] {
        [
            self.queued,
            self.handed_off,
            self.completed,
            self.failed,
            self.cancelled,
            self.orphaned,
        ]
    }

    /// Whether every status count is zero.
    pub fn is_zero(&self) -> bool {
        self.as_array().iter().all(|n| *n == 0)
    }
}

/// An exact, consistent snapshot: `counts` as of `revision`; `total` = `counts.all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountSnapshot {
    /// The count of each status.
    pub counts: StatusCounts,
    /// The store's count revision these counts are exact for.
    pub revision: i64,
    /// Every job, whatever its status (`counts.all`).
    pub total: i64,
}

impl CountSnapshot {
    /// A snapshot from per-status counts.
    pub fn new(per_status: [i64; 6], revision: i64) -> Self {
        let counts = StatusCounts::from_array(per_status);
        Self {
            counts,
            revision,
            total: counts.all,
        }
    }
}

/// The net count change of one committed mutation, and the revision it produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountDelta {
    /// The signed change of each status (and of `all`).
    pub deltas: StatusCounts,
    /// The revision the mutation produced (the previous one plus 1).
    pub revision: i64,
}

/// Accumulates the per-status changes of one logical mutation.
///
/// ```
/// use duraq_core::{CountChange, JobStatus};
/// let mut change = CountChange::default();
/// change.moved(JobStatus::Queued, JobStatus::HandedOff);
/// change.added(JobStatus::Queued);
/// assert_eq!(change.per_status(), [0, 1, 0, 0, 0, 0]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountChange([i64; 6]);

impl CountChange {
    /// A new row in `status`.
    pub fn added(&mut self, status: JobStatus) {
        self.0[status.index()] += 1;
    }
    /// A deleted row that was in `status`.
    pub fn removed(&mut self, status: JobStatus) {
        self.0[status.index()] -= 1;
    }
    /// A row moved between statuses.
    pub fn moved(&mut self, from: JobStatus, to: JobStatus) {
        self.removed(from);
        self.added(to);
    }
    /// Net change per status.
    pub fn per_status(&self) -> [i64; 6] {
        self.0
    }
    /// Whether the mutation left every count as it was (then the revision stays).
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|n| *n == 0)
    }
    /// The delta to publish for `revision`.
    pub fn to_delta(&self, revision: i64) -> CountDelta {
        CountDelta {
            deltas: StatusCounts::from_array(self.0),
            revision,
        }
    }
}
