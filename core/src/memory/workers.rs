//! Registered workers and the due-job groups of the reference model.

use std::collections::BTreeMap;

use super::State;
use crate::job::JobStatus;
use crate::workers::{DueJobGroup, RunningJob, WorkerInfo, WorkerRecord};

impl State {
    pub(super) fn register_worker(&mut self, info: &WorkerInfo, now: i64) {
        self.heartbeats.insert(info.worker_id.clone(), now);
        (self.workers).insert(info.worker_id.clone(), (info.clone(), now));
    }

    pub(super) fn remove_worker(&mut self, worker_id: &str) -> bool {
        let registered = self.workers.remove(worker_id).is_some();
        self.heartbeats.remove(worker_id).is_some() || registered
    }

    /// Deletes the rows of workers last heard from before `cutoff`.
    pub(super) fn forget_workers(&mut self, cutoff: i64) {
        self.heartbeats.retain(|_, beat| *beat >= cutoff);
        let heartbeats = &self.heartbeats;
        self.workers.retain(|id, _| heartbeats.contains_key(id));
    }

    pub(super) fn list_workers(&self, now: i64, stale_after_ms: i64) -> Vec<WorkerRecord> {
        let mut running: BTreeMap<&str, Vec<RunningJob>> = BTreeMap::new();
        for job in self.jobs.values() {
            if let (JobStatus::HandedOff, Some(w)) = (job.status, job.worker_id.as_deref()) {
                running.entry(w).or_default().push(RunningJob {
                    id: job.id.clone(),
                    job_name: job.job_name.clone(),
                });
            }
        }
        self.workers
            .iter()
            .map(|(id, (info, started))| {
                let beat = self.heartbeats.get(id).copied().unwrap_or(*started);
                let jobs = running.remove(id.as_str()).unwrap_or_default();
                WorkerRecord::new(info.clone(), *started, beat, now, stale_after_ms, jobs)
            })
            .collect()
    }

    pub(super) fn due_job_names(&self, now: i64, limit: usize) -> Vec<DueJobGroup> {
        let mut due: Vec<_> = self
            .jobs
            .values()
            .filter(|j| j.status == JobStatus::Queued && j.scheduled_at_ms <= now)
            .collect();
        // The jobs without a fairness key in claim order, then those with one
        // by due time (as the stores read their two indexes).
        due.sort_by(|a, b| {
            (a.fairness_key.is_some().cmp(&b.fairness_key.is_some())).then_with(|| {
                if a.fairness_key.is_some() {
                    crate::transitions::due_order(a, b)
                } else {
                    crate::transitions::claim_order(a, b)
                }
            })
        });
        let mut groups: BTreeMap<(&[u8], &[u8]), DueJobGroup> = BTreeMap::new();
        for job in due.into_iter().take(limit) {
            let key = (job.queue.as_bytes(), job.job_name.as_bytes());
            let group = groups.entry(key).or_insert_with(|| DueJobGroup {
                queue: job.queue.clone(),
                job_name: job.job_name.clone(),
                due: 0,
                oldest_scheduled_at_ms: job.scheduled_at_ms,
            });
            group.due += 1;
            group.oldest_scheduled_at_ms = group.oldest_scheduled_at_ms.min(job.scheduled_at_ms);
        }
        groups.into_values().collect()
    }
}
