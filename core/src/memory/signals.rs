//! Signals in `MemoryStore`: a job's delivered signals beside the jobs (as
//! the stores' `duraq_job_signals` table), deleted with the job; a delivery
//! decided by [`crate::driver::rules::plan_signal`], and the waits it and
//! the recovery pass end.

use serde_json::Value;

use super::State;
use crate::counts::CountChange;
use crate::durable::{plan_signal, SignalPlan, SignalRecord, Signalled};
use crate::job::JobStatus;
use crate::transitions::end_wait;
use crate::Result;

impl State {
    pub(super) fn signal(
        &mut self,
        job_id: &str,
        name: &str,
        payload: Value,
        now: i64,
        change: &mut CountChange,
    ) -> Result<Signalled> {
        let stored = (self.signals.get(job_id))
            .and_then(|all| all.iter().find(|s| s.name == name))
            .map(|s| &s.payload);
        let plan = plan_signal(job_id, self.jobs.get(job_id), name, &payload, stored)?;
        let SignalPlan::Store { wake } = plan else {
            return Ok(Signalled {
                replayed: true,
                woke: false,
            });
        };
        self.signals
            .entry(job_id.to_owned())
            .or_default()
            .push(SignalRecord {
                name: name.to_owned(),
                payload,
                at_ms: now,
            });
        if wake {
            self.end_wait(job_id, now, change);
        }
        Ok(Signalled {
            replayed: false,
            woke: wake,
        })
    }

    /// Whether job `job_id` has received signal `name`.
    pub(super) fn has_signal(&self, job_id: &str, name: &str) -> bool {
        (self.signals.get(job_id)).is_some_and(|all| all.iter().any(|s| s.name == name))
    }

    fn end_wait(&mut self, job_id: &str, now: i64, change: &mut CountChange) {
        let job = self.jobs.get_mut(job_id).expect("a waiting job exists");
        end_wait(job, now);
        change.moved(&job.queue, JobStatus::Pending, JobStatus::Queued);
    }

    /// Ends up to `limit` timed-out waits, oldest first; the ids, sorted.
    pub(super) fn end_timed_out_waits(
        &mut self,
        limit: usize,
        now: i64,
        change: &mut CountChange,
    ) -> Vec<String> {
        let mut due: Vec<(i64, String)> = (self.jobs.values())
            .filter(|j| j.is_awaiting_signal() && j.scheduled_at_ms <= now)
            .map(|j| (j.scheduled_at_ms, j.id.clone()))
            .collect();
        due.sort_unstable();
        due.truncate(limit);
        let mut ids: Vec<String> = due.into_iter().map(|(_, id)| id).collect();
        for id in &ids {
            self.end_wait(id, now, change);
        }
        ids.sort_unstable();
        ids
    }

    /// A job's signals, by time then name.
    pub(super) fn job_signals(&self, id: &str) -> Vec<SignalRecord> {
        let mut all = self.signals.get(id).cloned().unwrap_or_default();
        all.sort_by(|a, b| (a.at_ms, &a.name).cmp(&(b.at_ms, &b.name)));
        all
    }
}
