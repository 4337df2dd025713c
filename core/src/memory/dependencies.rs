//! Dependencies on the in-memory state: [`crate::rules`]'s release loop and
//! reopen walk over the rows themselves. The reference model finds a job's
//! dependents by scanning every row; the SQL stores keep an edge table for it,
//! and must reach the same rows.

use std::collections::VecDeque;

use super::State;
use crate::counts::CountChange;
use crate::error::Result;
use crate::job::Job;
use crate::options::NewJob;
use crate::rules::{
    apply_dependent_change, reopen, reopened_open_count, start_of, DependencyRelease,
    DependencyStart, DependentEdge, DependentRow,
};

impl State {
    /// How `job` starts, from its dependencies' current statuses.
    pub(super) fn dependency_start(&self, job: &NewJob) -> Result<DependencyStart> {
        start_of(job.dependencies(), |id| self.jobs.get(id).map(|j| j.status))
    }

    /// The edges from `job_id` to the jobs that depend on it.
    fn dependents_of(&self, job_id: &str) -> Vec<DependentEdge> {
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

    /// Settles the dependents of job `id` if it is now terminal, and theirs in
    /// turn when it cancels them (the same transaction, as in every store).
    pub(super) fn release_dependents(&mut self, id: &str, now: i64, change: &mut CountChange) {
        let Some(status) = self.jobs.get(id).map(|j| j.status) else {
            return;
        };
        let mut release = DependencyRelease::new();
        release.finished(id, status);
        while let Some(done) = release.next() {
            let edges = self.dependents_of(&done.job_id);
            let rows = edges
                .iter()
                .filter_map(|e| self.jobs.get(&e.job_id))
                .map(dependent_row)
                .collect();
            for settled in release.settle(&done, &edges, rows, now) {
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

    /// After an operator retry of job `id`: gives back to `pending` the
    /// dependents it cancelled (and theirs, down the graph) that nothing else
    /// still cancels.
    pub(super) fn reopen_dependents(&mut self, id: &str, now: i64, change: &mut CountChange) {
        let mut walk = VecDeque::from([id.to_owned()]);
        while let Some(done) = walk.pop_front() {
            for edge in self.dependents_of(&done) {
                let Some(open) = reopened_open_count(&self.jobs[&edge.job_id], |dep| {
                    self.jobs.get(dep).map(|j| j.status)
                }) else {
                    continue;
                };
                let row = self.jobs.get_mut(&edge.job_id).expect("listed");
                let from = row.status;
                reopen(row, open, now);
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
