//! Settling the dependents of jobs that became terminal, in bounded
//! transactions (`docs/workflows.md`, "Cost"). Written once here; every store
//! runs the same loop inside the transaction that finished the dependency:
//!
//! ```text
//! release.finished(id, status)                // the job that just became terminal
//! loop {
//!     level = release.next_level()            // finished jobs, each with a cursor and a limit
//!     if level is empty: break
//!     for step in level {
//!         edges = step.read_limit() edges of step.done.job_id after step.after,
//!                 in dependent-id order       // (dependent id, the edge's policy)
//!         rows  = those dependents' rows      // id, queue, status, open count, due time
//!         for change in release.settle(&step, &edges, rows, now) { persist(change) }
//!     }
//! }
//! for write in release.backlog() { persist(write) }   // same transaction
//! ```
//!
//! A dependent keeps a count of its open dependencies (`open_dependencies`), so
//! a fan-in of 10,000 jobs costs one counter update per completion. A fan-out
//! is the other way round: one completion has 10,000 edges to settle, and
//! settling them all in the transaction that finished the job would make that
//! one transaction (and the locks it holds) as large as the fan-out. So one
//! transaction walks at most [`RELEASE_BATCH`] edges, in dependent-id order;
//! a finished job whose edges do not all fit leaves a *release backlog* entry
//! ([`BacklogEntry`]: the job, its terminal status, the last dependent settled),
//! written in the same transaction, and the worker runtime continues it in
//! further bounded transactions ([`crate::WorkerStore::settle_release_backlog`]),
//! each a [`DependencyRelease::resume`] of one entry through the same loop. A
//! dependent not yet reached keeps waiting (`pending`, its open count
//! unchanged): nothing is released early or twice, and nothing is left
//! behind, since every entry is walked to its end unless its job leaves its
//! terminal status (an operator retry: the rest waits for its next end) or is
//! deleted (the rest waits, as for any deleted dependency); both drop the entry
//! in their own transaction.
//!
//! A dependent cancelled by its dependency is itself finished: it joins the next
//! level and falls under the same bound, its edges continued through the
//! backlog when the bound is spent. A level shares what is left of the bound
//! among its finished jobs ([`DependencyRelease::next_level`]), so the rows a
//! store reads for a level stay within the bound plus two per finished job; a
//! job whose share ran out before the bound did goes on in the next level, so
//! a few wide jobs finished together still use the whole bound.

use std::collections::{HashMap, VecDeque};

use super::dependencies::{cancel_error, edge_fate, EdgeFate};
use super::dependent::{DependentChange, DependentEdge, DependentRow};
use crate::job::JobStatus;

/// The most dependency edges one transaction settles (walks, in dependent-id
/// order): a fan-out wider than this continues through the release backlog.
pub const RELEASE_BATCH: usize = 1_000;

/// A job that just became terminal, whose dependents are to be settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The job.
    pub job_id: String,
    /// Its terminal status.
    pub status: JobStatus,
}

/// A release backlog entry: a finished job whose edges after `after` (all of
/// them when `None`) are still to be settled, in dependent-id order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BacklogEntry {
    /// The finished job.
    pub job_id: String,
    /// The terminal status it settles its dependents with.
    pub status: JobStatus,
    /// The last dependent settled.
    pub after: Option<String>,
}

/// What a transaction writes to the release backlog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BacklogWrite {
    /// Insert or replace the entry of `entry.job_id`.
    Put(BacklogEntry),
    /// Delete the entry of this job: its edges are all settled, or it is no
    /// longer in the status the entry recorded.
    Remove(String),
}

/// One finished job's walk in this transaction: its edges after `after`, at
/// most `limit` of them (the store reads [`ReleaseStep::read_limit`], one more,
/// to know whether edges remain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseStep {
    /// The finished job.
    pub done: Finished,
    /// Read the edges whose dependent id is greater than this one.
    pub after: Option<String>,
    /// The most edges this step settles.
    pub limit: usize,
    /// Continues a backlog entry (removed when the walk ends).
    resumed: bool,
}

impl ReleaseStep {
    /// How many edges the store reads: one more than it may settle.
    pub fn read_limit(&self) -> usize {
        self.limit + 1
    }
}

/// The release loop's state for one transaction: the finished jobs whose
/// dependents are still to be settled, what is left of the bound, and the
/// backlog writes (see the module doc for the loop).
#[derive(Debug)]
pub struct DependencyRelease {
    queue: VecDeque<ReleaseStep>,
    /// Edges this transaction may still walk.
    budget: usize,
    walked: usize,
    backlog: Vec<BacklogWrite>,
}

impl Default for DependencyRelease {
    fn default() -> Self {
        Self::with_bound(RELEASE_BATCH)
    }
}

impl DependencyRelease {
    /// An empty loop bounded by [`RELEASE_BATCH`] edges.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty loop that walks at most `bound` edges (tests use a small one).
    pub fn with_bound(bound: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            budget: bound,
            walked: 0,
            backlog: Vec::new(),
        }
    }

    /// Records that `job_id` became terminal with `status` (only terminal
    /// statuses release anything; others are ignored).
    pub fn finished(&mut self, job_id: impl Into<String>, status: JobStatus) {
        if status.is_terminal() {
            self.push(job_id.into(), status, None, false);
        }
    }

    /// Continues a backlog entry whose job is now in `current` (`None`: gone).
    /// An entry whose job is no longer in the status it recorded is removed,
    /// settling nothing (an operator retry or a delete removes it already; this
    /// keeps a stray one harmless).
    pub fn resume(&mut self, entry: BacklogEntry, current: Option<JobStatus>) {
        if current == Some(entry.status) && entry.status.is_terminal() {
            self.push(entry.job_id, entry.status, entry.after, true);
        } else {
            self.backlog.push(BacklogWrite::Remove(entry.job_id));
        }
    }

    fn push(&mut self, job_id: String, status: JobStatus, after: Option<String>, resumed: bool) {
        self.queue.push_back(ReleaseStep {
            done: Finished { job_id, status },
            after,
            limit: 0,
            resumed,
        });
    }

    /// The finished jobs to read next (empty: the loop is over), each with its
    /// share of the bound left: `ceil(left / n)` for `n` jobs, so a lone job
    /// gets all of it. A job whose share is 0 is still read (one edge) to learn
    /// whether it has edges left for the backlog.
    pub fn next_level(&mut self) -> Vec<ReleaseStep> {
        let n = self.queue.len();
        if n == 0 {
            return Vec::new();
        }
        let share = self.budget.div_ceil(n);
        self.queue
            .drain(..)
            .map(|mut step| {
                step.limit = share;
                step
            })
            .collect()
    }

    /// Settles `step`: `edges` are its edges as read (in dependent-id order,
    /// at most [`ReleaseStep::read_limit`]), `rows` the dependent rows they name
    /// (any order; an edge whose row is missing is walked and skipped). Walks
    /// as many edges as the step's limit and the transaction's bound allow,
    /// returns one change per `pending` dependent walked, queues each dependent
    /// it cancels as finished. When edges remain, the step goes on in the next
    /// level if only its share ran out, or becomes a backlog entry if the bound
    /// did; a resumed entry whose walk ends is removed.
    pub fn settle(
        &mut self,
        step: &ReleaseStep,
        edges: &[DependentEdge],
        rows: Vec<DependentRow>,
        now_ms: i64,
    ) -> Vec<DependentChange> {
        let take = edges.len().min(step.limit).min(self.budget);
        self.budget -= take;
        self.walked += take;
        let (walk, rest) = edges.split_at(take);
        if !rest.is_empty() {
            let after = walk.last().map(|e| e.job_id.clone()).or(step.after.clone());
            if self.budget > 0 {
                // Its share ran out, not the bound: it goes on next level.
                self.queue.push_back(ReleaseStep {
                    after,
                    limit: 0,
                    ..step.clone()
                });
            } else {
                self.backlog.push(BacklogWrite::Put(BacklogEntry {
                    job_id: step.done.job_id.clone(),
                    status: step.done.status,
                    after,
                }));
            }
        } else if step.resumed {
            self.backlog
                .push(BacklogWrite::Remove(step.done.job_id.clone()));
        }
        let rows: HashMap<&str, &DependentRow> =
            rows.iter().map(|r| (r.job_id.as_str(), r)).collect();
        let mut changes = Vec::with_capacity(walk.len());
        for edge in walk {
            let Some(row) = rows.get(edge.job_id.as_str()) else {
                continue;
            };
            if row.status != JobStatus::Pending {
                continue;
            }
            let done = &step.done;
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

    /// How many edges this transaction walked so far.
    pub fn walked(&self) -> usize {
        self.walked
    }

    /// The backlog writes decided so far, to persist in the same transaction
    /// (at most one per job, in the order decided).
    pub fn backlog(&mut self) -> Vec<BacklogWrite> {
        std::mem::take(&mut self.backlog)
    }
}

#[cfg(test)]
#[path = "release_tests.rs"]
mod tests;
