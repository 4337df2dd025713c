//! Durable steps in `MemoryStore`: a job's records beside the jobs (as the
//! stores' `duraq_job_steps` table), fenced by the lease, deleted with the job.

use super::State;
use crate::durable::{StepRecord, StepWrite};

impl State {
    /// A fenced step record; `None` when the lease is not current, else what
    /// is stored under the name (the first write's).
    pub(super) fn record_step(&mut self, write: StepWrite, now: i64) -> Option<StepRecord> {
        let job = self.jobs.get(&write.lease.job_id)?;
        if !write.lease.holds(job) {
            return None;
        }
        let records = self.steps.entry(write.lease.job_id).or_default();
        if let Some(stored) = records.iter().find(|r| r.name == write.name) {
            return Some(stored.clone());
        }
        let record = StepRecord {
            name: write.name,
            output: write.output,
            at_ms: now,
            attempt: write.attempt,
        };
        records.push(record.clone());
        Some(record)
    }

    /// A job's records in the order of [`crate::Inspect::job_steps`].
    pub(super) fn job_steps(&self, id: &str) -> Vec<StepRecord> {
        let mut records = self.steps.get(id).cloned().unwrap_or_default();
        records.sort_by(|a, b| (a.at_ms, &a.name).cmp(&(b.at_ms, &b.name)));
        records
    }
}
