//! Jobs that wait for other jobs (`docs/workflows.md`): how a dependent starts,
//! what each finished dependency does to it, and what an operator retry gives
//! back. Written once here; every store runs the same loop inside the
//! transaction that finished the dependency:
//!
//! ```text
//! release.finished(id, status)            // the job that just became terminal
//! while let Some(done) = release.next() {
//!     edges = dependents of done.job_id   // (dependent id, the edge's policy)
//!     rows  = those dependents' rows      // id, queue, status, open count, due time
//!     for change in release.settle(&done, &edges, rows, now) { persist(change) }
//! }
//! ```
//!
//! The cost is the edges that finish: a dependent keeps a count of its open
//! dependencies (`open_dependencies`), so a fan-in of 10,000 jobs costs one
//! counter update per completion, and pending jobs are never scanned. A
//! dependent cancelled by its dependency is itself finished, so
//! [`DependencyRelease::settle`] queues it and the loop goes on down the graph.
//!
//! A dependency *satisfies* its edge when it completes, or when it ends otherwise
//! (`failed`, `cancelled`, `orphaned`) under [`DependencyFailure::Run`]; under
//! [`DependencyFailure::Cancel`] it cancels the dependent, whose `lastError` then
//! starts with [`CANCELLED_BY_DEPENDENCY`]. That prefix is how an operator retry
//! knows which cancelled dependents to give back ([`reopened_open_count`]).

use std::collections::{HashMap, VecDeque};

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
/// use duraq_core::rules::{start_of, DependencyStart};
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
            row.last_error = Some(error.clone());
        }
    }
}

/// What one dependency's status means for one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EdgeFate {
    Open,
    Satisfied,
    Cancels,
}

fn edge_fate(status: JobStatus, policy: DependencyFailure) -> EdgeFate {
    match status {
        JobStatus::Completed => EdgeFate::Satisfied,
        s if !s.is_terminal() => EdgeFate::Open,
        _ if policy == DependencyFailure::Run => EdgeFate::Satisfied,
        _ => EdgeFate::Cancels,
    }
}

fn cancel_error(job_id: &str, status: JobStatus) -> String {
    format!("{CANCELLED_BY_DEPENDENCY} job {job_id} ended {status}")
}

/// A job that just became terminal, whose dependents are to be settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The job.
    pub job_id: String,
    /// Its terminal status.
    pub status: JobStatus,
}

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

/// The release loop's state: the finished jobs whose dependents are still to be
/// settled (see the module doc for the loop).
#[derive(Debug, Default)]
pub struct DependencyRelease {
    queue: VecDeque<Finished>,
}

impl DependencyRelease {
    /// An empty loop.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `job_id` became terminal with `status` (only terminal
    /// statuses release anything; others are ignored).
    pub fn finished(&mut self, job_id: impl Into<String>, status: JobStatus) {
        if status.is_terminal() {
            self.queue.push_back(Finished {
                job_id: job_id.into(),
                status,
            });
        }
    }

    /// The next finished job whose dependents to read, if any.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Finished> {
        self.queue.pop_front()
    }

    /// Settles `done`'s dependents: `edges` are its edges, `rows` the dependent
    /// rows they name (in any order; an edge whose row is missing is skipped).
    /// Returns one change per `pending` dependent, and queues each dependent it
    /// cancels as finished.
    ///
    /// ```
    /// use duraq_core::rules::{DependencyRelease, DependentChange, DependentEdge, DependentRow};
    /// use duraq_core::{DependencyFailure, JobStatus};
    /// let mut release = DependencyRelease::new();
    /// release.finished("a", JobStatus::Completed);
    /// let done = release.next().unwrap();
    /// let edges = [DependentEdge { job_id: "b".into(), on_failure: DependencyFailure::Cancel }];
    /// let rows = vec![DependentRow {
    ///     job_id: "b".into(), queue: "default".into(), status: JobStatus::Pending,
    ///     open_dependencies: 1, scheduled_at_ms: 5,
    /// }];
    /// let changes = release.settle(&done, &edges, rows, 100);
    /// assert_eq!(changes, [DependentChange::Released { job_id: "b".into(), queue: "default".into(), at_ms: 100 }]);
    /// assert!(release.next().is_none());
    /// ```
    pub fn settle(
        &mut self,
        done: &Finished,
        edges: &[DependentEdge],
        rows: Vec<DependentRow>,
        now_ms: i64,
    ) -> Vec<DependentChange> {
        let rows: HashMap<&str, &DependentRow> =
            rows.iter().map(|r| (r.job_id.as_str(), r)).collect();
        let mut changes = Vec::with_capacity(edges.len());
        for edge in edges {
            let Some(row) = rows.get(edge.job_id.as_str()) else {
                continue;
            };
            if row.status != JobStatus::Pending {
                continue;
            }
            match edge_fate(done.status, edge.on_failure) {
                EdgeFate::Open => {}
                EdgeFate::Satisfied if row.open_dependencies > 1 => {
                    changes.push(DependentChange::Waiting {
                        job_id: row.job_id.clone(),
                        open: row.open_dependencies - 1,
                    });
                }
                EdgeFate::Satisfied => changes.push(DependentChange::Released {
                    job_id: row.job_id.clone(),
                    queue: row.queue.clone(),
                    at_ms: row.scheduled_at_ms.max(now_ms),
                }),
                EdgeFate::Cancels => {
                    self.finished(row.job_id.clone(), JobStatus::Cancelled);
                    changes.push(DependentChange::Cancelled {
                        job_id: row.job_id.clone(),
                        queue: row.queue.clone(),
                        error: cancel_error(&done.job_id, done.status),
                    });
                }
            }
        }
        changes
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
            row.last_error = Some(error.clone());
        }
    }
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
