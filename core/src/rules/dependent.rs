//! A dependent as the release loop ([`super::release`]) reads it and what it
//! writes to it: the edge a store read, the columns of the row that settling
//! looks at, and the change to persist, which the reference store applies to
//! whole rows ([`apply_dependent_change`]) and the SQL stores write as the
//! same columns.

use crate::job::{DependencyFailure, Job, JobStatus};

/// An edge from a finished job to one of its dependents, as a store read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DependentEdge {
    /// The dependent job.
    pub job_id: String,
    /// The edge's policy.
    pub on_failure: DependencyFailure,
}

/// What release reads and writes of a dependent row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DependentRow {
    /// The dependent job.
    pub job_id: String,
    /// Its queue (for the counts).
    pub queue: String,
    /// Its status: only a `pending` dependent changes.
    pub status: JobStatus,
    /// Its count of open dependencies.
    pub open_dependencies: i64,
    /// Its own due time.
    pub scheduled_at_ms: i64,
}

/// What to write to one dependent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DependentChange {
    /// Still `pending`, with this many open dependencies.
    Waiting {
        /// The dependent.
        job_id: String,
        /// The new count.
        open: i64,
    },
    /// `pending` → `queued` (open count 0), due at `at_ms`: its own time or now,
    /// whichever is later.
    Released {
        /// The dependent.
        job_id: String,
        /// Its queue.
        queue: String,
        /// The new `scheduledAtMs`.
        at_ms: i64,
    },
    /// `pending` → `cancelled` at now, with this `lastError`; the count stays.
    Cancelled {
        /// The dependent.
        job_id: String,
        /// Its queue.
        queue: String,
        /// Names the dependency.
        error: String,
    },
}

impl DependentChange {
    /// The dependent it changes.
    pub fn job_id(&self) -> &str {
        match self {
            Self::Waiting { job_id, .. }
            | Self::Released { job_id, .. }
            | Self::Cancelled { job_id, .. } => job_id,
        }
    }
}

/// Applies a [`DependentChange`] to a whole row (the reference store does; SQL
/// stores write the same columns).
pub fn apply_dependent_change(row: &mut Job, change: &DependentChange, now_ms: i64) {
    match change {
        DependentChange::Waiting { open, .. } => row.open_dependencies = *open,
        DependentChange::Released { at_ms, .. } => {
            row.status = JobStatus::Queued;
            row.open_dependencies = 0;
            row.scheduled_at_ms = *at_ms;
        }
        DependentChange::Cancelled { error, .. } => {
            row.status = JobStatus::Cancelled;
            row.cancelled_at_ms = Some(now_ms);
            row.cancel_reason = Some(crate::job::CancelReason::Dependency);
            row.last_error = Some(error.clone());
        }
    }
}
