//! Dependencies on the in-memory state: [`crate::rules`]'s bounded release
//! loop and reopen walk over the rows themselves. The reference model finds a
//! job's dependents by scanning the rows in id order; the SQL stores keep an
//! edge table for it, and must reach the same rows in the same order. The
//! release backlog is a map by job id, as the stores' table is keyed.

use std::collections::VecDeque;
use std::ops::Bound;

use super::State;
use crate::counts::CountChange;
use crate::error::Result;
use crate::job::Job;
use crate::new_job::NewJob;
use crate::rules::{
    apply_dependent_change, reopen, reopened_open_count, start_of, BacklogWrite, DependencyRelease,
    DependencyStart, DependentEdge, DependentRow, ReleaseStep,
};

impl State {
    /// How `job` starts, from its dependencies' current statuses.
    pub(super) fn dependency_start(&self, job: &NewJob) -> Result<DependencyStart> {
        start_of(job.dependencies(), |id| self.jobs.get(id).map(|j| j.status))
    }

    /// The edges of `step`'s finished job, in dependent-id order, after its
    /// cursor, at most [`crate::rules::ReleaseStep::read_limit`].
    fn edges_of(&self, step: &ReleaseStep) -> Vec<DependentEdge> {
        let from = match &step.after {
            Some(after) => Bound::Excluded(after.clone()),
            None => Bound::Unbounded,
        };
        let job_id = &step.done.job_id;
        self.jobs
            .range((from, Bound::Unbounded))
            .filter_map(|(_, j)| {
                let dep = j.depends_on.iter().find(|d| &d.job_id == job_id)?;
                Some(DependentEdge {
                    job_id: j.id.clone(),
                    on_failure: dep.on_failure,
                })
            })
            .take(step.read_limit())
            .collect()
    }

    /// Settles the dependents of job `id` if it is now terminal, and theirs in
    /// turn when it cancels them, within the bound (the same transaction, as
    /// in every store); what does not fit goes to the release backlog.
    pub(super) fn release_dependents(&mut self, id: &str, now: i64, change: &mut CountChange) {
        let Some(status) = self.jobs.get(id).map(|j| j.status) else {
            return;
        };
        let mut release = DependencyRelease::new();
        release.finished(id, status);
        self.run_release(release, now, change);
    }

    /// Continues the first release backlog entry (in job-id order) by one
    /// bounded step; `None` when the backlog is empty, else the edges walked.
    pub(super) fn continue_backlog(&mut self, now: i64, change: &mut CountChange) -> Option<usize> {
        let entry = self.release_backlog.values().next()?.clone();
        let current = self.jobs.get(&entry.job_id).map(|j| j.status);
        let mut release = DependencyRelease::new();
        release.resume(entry, current);
        Some(self.run_release(release, now, change))
    }

    /// Core's loop over the rows; returns the edges walked.
    fn run_release(
        &mut self,
        mut release: DependencyRelease,
        now: i64,
        change: &mut CountChange,
    ) -> usize {
        loop {
            let level = release.next_level();
            if level.is_empty() {
                break;
            }
            for step in level {
                let edges = self.edges_of(&step);
                let rows = edges
                    .iter()
                    .filter_map(|e| self.jobs.get(&e.job_id))
                    .map(dependent_row)
                    .collect();
                for settled in release.settle(&step, &edges, rows, now) {
                    let row = self
                        .jobs
                        .get_mut(settled.job_id())
                        .expect("a settled dependent was read");
                    let from = row.status;
                    apply_dependent_change(row, &settled, now);
                    change.moved(&row.queue, from, row.status);
                }
            }
        }
        for write in release.backlog() {
            match write {
                BacklogWrite::Put(entry) => {
                    self.backlog_news = true;
                    self.release_backlog.insert(entry.job_id.clone(), entry);
                }
                BacklogWrite::Remove(job_id) => {
                    self.release_backlog.remove(&job_id);
                }
            }
        }
        release.walked()
    }

    /// Whether any job depends on `job_id` (an ephemeral job with dependents
    /// is kept: they read its output).
    pub(super) fn has_dependents(&self, job_id: &str) -> bool {
        (self.jobs.values()).any(|j| j.depends_on.iter().any(|d| d.job_id == job_id))
    }

    /// Every edge from `job_id` to the jobs that depend on it (the reopen walk
    /// is an operator's action, not bounded).
    fn all_dependents_of(&self, job_id: &str) -> Vec<DependentEdge> {
        self.jobs
            .values()
            .filter_map(|j| {
                let dep = j.depends_on.iter().find(|d| d.job_id == job_id)?;
                Some(DependentEdge {
                    job_id: j.id.clone(),
                    on_failure: dep.on_failure,
                })
            })
            .collect()
    }

    /// After an operator retry of job `id`: gives back to `pending` the
    /// dependents it cancelled (and theirs, down the graph) that nothing else
    /// still cancels.
    pub(super) fn reopen_dependents(&mut self, id: &str, now: i64, change: &mut CountChange) {
        self.release_backlog.remove(id);
        let mut walk = VecDeque::from([id.to_owned()]);
        while let Some(done) = walk.pop_front() {
            for edge in self.all_dependents_of(&done) {
                let Some(open) = reopened_open_count(&self.jobs[&edge.job_id], |dep| {
                    self.jobs.get(dep).map(|j| j.status)
                }) else {
                    continue;
                };
                let row = self.jobs.get_mut(&edge.job_id).expect("listed");
                let from = row.status;
                reopen(row, open, now);
                // No longer terminal: what it had not settled waits for it.
                self.release_backlog.remove(&edge.job_id);
                change.moved(&row.queue, from, row.status);
                walk.push_back(edge.job_id);
            }
        }
    }
}

/// What release reads of a row.
pub(crate) fn dependent_row(job: &Job) -> DependentRow {
    DependentRow {
        job_id: job.id.clone(),
        queue: job.queue.clone(),
        status: job.status,
        open_dependencies: job.open_dependencies,
        scheduled_at_ms: job.scheduled_at_ms,
    }
}
