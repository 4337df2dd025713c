//! Jobs that wait for other jobs (`docs/workflows.md`): how a dependent starts,
//! what a finished dependency's status means for each edge, and what an
//! operator retry gives back. Settling the dependents of a finished job, in
//! bounded transactions, is [`super::release`].
//!
//! A dependency *satisfies* its edge when it completes, or when it ends otherwise
//! (`failed`, `cancelled`, `orphaned`) under [`DependencyFailure::Run`]; under
//! [`DependencyFailure::Cancel`] it cancels the dependent, whose `lastError` then
//! starts with [`CANCELLED_BY_DEPENDENCY`]. That prefix is how an operator retry
//! knows which cancelled dependents to give back ([`reopened_open_count`]). A
//! job leaving its terminal status (a retry, a reopen) drops its release
//! backlog entry in the same transaction: the dependents it had not reached yet
//! still count it as open, and are settled when it finishes again.

use crate::error::{Error, ErrorCode, Result};
use crate::job::{Dependency, DependencyFailure, Job, JobStatus};

/// The start of the `lastError` of a job cancelled because a dependency of
/// its did not complete (`dependency-failed: job … ended failed`).
pub const CANCELLED_BY_DEPENDENCY: &str = "dependency-failed:";

/// How a new job with dependencies starts, from its dependencies' statuses as
/// its enqueue read them ([`start_of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DependencyStart {
    /// Every dependency is already satisfied: the job is inserted `queued`.
    Ready,
    /// `open` dependencies have not finished: the job is inserted `pending`.
    Waiting {
        /// How many.
        open: i64,
    },
    /// A dependency already ended without completing under `cancel`: the job is
    /// inserted `cancelled` with this `lastError`.
    Cancelled {
        /// Names the dependency.
        error: String,
    },
}

/// Decides [`DependencyStart`] for `dependencies`, given each one's status
/// (`None`: no such job, `dependency-not-found`, and nothing may be written).
///
/// ```
/// use duraq_core::driver::rules::{start_of, DependencyStart};
/// use duraq_core::{Dependency, DependencyFailure, JobStatus};
/// let deps = vec![
///     Dependency { job_id: "a".into(), on_failure: DependencyFailure::Cancel },
///     Dependency { job_id: "b".into(), on_failure: DependencyFailure::Cancel },
/// ];
/// let start = start_of(&deps, |id| Some(if id == "a" { JobStatus::Completed } else { JobStatus::Queued }));
/// assert_eq!(start.unwrap(), DependencyStart::Waiting { open: 1 });
/// let missing = start_of(&deps, |_| None).unwrap_err();
/// assert_eq!(missing.code().as_str(), "dependency-not-found");
/// ```
pub fn start_of(
    dependencies: &[Dependency],
    status_of: impl Fn(&str) -> Option<JobStatus>,
) -> Result<DependencyStart> {
    let mut open = 0;
    let mut cancelled = None;
    for dep in dependencies {
        let Some(status) = status_of(&dep.job_id) else {
            return Err(dependency_not_found(&dep.job_id));
        };
        match edge_fate(status, dep.on_failure) {
            EdgeFate::Open => open += 1,
            EdgeFate::Satisfied => {}
            EdgeFate::Cancels => {
                cancelled.get_or_insert_with(|| cancel_error(&dep.job_id, status));
            }
        }
    }
    Ok(match cancelled {
        Some(error) => DependencyStart::Cancelled { error },
        None if open > 0 => DependencyStart::Waiting { open },
        None => DependencyStart::Ready,
    })
}

/// The error of an `after` naming no job.
pub fn dependency_not_found(job_id: &str) -> Error {
    Error::invalid(
        ErrorCode::DependencyNotFound,
        format!("dependency {job_id:?} is not a job in this store"),
    )
}

/// Applies a [`DependencyStart`] to a fresh row (from
/// [`crate::transitions::new_job_row`]) enqueued at `now_ms`.
pub fn apply_start(row: &mut Job, start: &DependencyStart, now_ms: i64) {
    match start {
        DependencyStart::Ready => {}
        DependencyStart::Waiting { open } => {
            row.status = JobStatus::Pending;
            row.open_dependencies = *open;
        }
        DependencyStart::Cancelled { error } => {
            row.status = JobStatus::Cancelled;
            row.cancelled_at_ms = Some(now_ms);
            row.cancel_reason = Some(crate::job::CancelReason::Dependency);
            row.last_error = Some(error.clone());
        }
    }
}

/// What one dependency's status means for one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EdgeFate {
    Open,
    Satisfied,
    Cancels,
}

pub(super) fn edge_fate(status: JobStatus, policy: DependencyFailure) -> EdgeFate {
    match status {
        JobStatus::Completed => EdgeFate::Satisfied,
        s if !s.is_terminal() => EdgeFate::Open,
        _ if policy == DependencyFailure::Run => EdgeFate::Satisfied,
        _ => EdgeFate::Cancels,
    }
}

pub(super) fn cancel_error(job_id: &str, status: JobStatus) -> String {
    format!("{CANCELLED_BY_DEPENDENCY} job {job_id} ended {status}")
}

/// Whether `job` was cancelled by a dependency (and not by an operator).
pub fn was_cancelled_by_dependency(job: &Job) -> bool {
    job.status == JobStatus::Cancelled
        && job
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with(CANCELLED_BY_DEPENDENCY))
}

/// After an operator retry of one of its dependencies, whether the cancelled
/// dependent `job` comes back to `pending`, and with how many open
/// dependencies: it does when a dependency cancelled it and none of its
/// dependencies (read again, `status_of`) still cancels it. The store then
/// writes [`reopen`], and goes on to the dependents of `job` the same way, since
/// they were cancelled by it.
pub fn reopened_open_count(
    job: &Job,
    status_of: impl Fn(&str) -> Option<JobStatus>,
) -> Option<i64> {
    if !was_cancelled_by_dependency(job) {
        return None;
    }
    let mut open = 0;
    for dep in &job.depends_on {
        // A pruned dependency had finished and was settled long ago.
        let Some(status) = status_of(&dep.job_id) else {
            continue;
        };
        match edge_fate(status, dep.on_failure) {
            EdgeFate::Open => open += 1,
            EdgeFate::Satisfied => {}
            EdgeFate::Cancels => return None,
        }
    }
    Some(open)
}

/// `cancelled` → `pending` with `open` open dependencies (`queued` if none:
/// the job is then due at once).
pub fn reopen(job: &mut Job, open: i64, now_ms: i64) {
    job.cancelled_at_ms = None;
    job.cancel_reason = None;
    job.open_dependencies = open;
    if open > 0 {
        job.status = JobStatus::Pending;
    } else {
        job.status = JobStatus::Queued;
        job.scheduled_at_ms = job.scheduled_at_ms.max(now_ms);
    }
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
