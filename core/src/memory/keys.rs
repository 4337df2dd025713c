//! Stable schedule keys on the in-memory state.

use super::State;
use crate::counts::CountChange;
use crate::error::Result;
use crate::job::Job;
use crate::keys::ScheduleKey;
use crate::new_job::NewJob;
use crate::requests::{
    CancelOutcome, KeyedOutcome, ReplaceOutcome, RunningOwner, ScheduledJobs, WakeOutcome,
};
use crate::rules::{
    check_replacement, owner_on_cancel, owner_on_replace, owner_on_wake, OwnerFate,
};
use crate::transitions::new_job_row;

impl State {
    pub(super) fn replace_scheduled(
        &mut self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
        now: i64,
        change: &mut CountChange,
    ) -> Result<ReplaceOutcome> {
        check_replacement(&job)?;
        self.check_insert(&job)?;
        let key = key.as_str().to_owned();
        let previous = self
            .owners
            .get(&key)
            .and_then(|id| self.jobs.get(id))
            .cloned();
        let mut previous_status = None;
        let mut previous_stopped = false;
        if let Some(prev) = &previous {
            previous_status = Some(prev.status);
            let fate = owner_on_replace(prev.status, running);
            self.apply_owner_fate(&prev.id, fate, now, change)?;
            previous_stopped = fate == OwnerFate::Stop;
        }
        let order = self.high_water.get(&key).copied().unwrap_or(0) + 1;
        self.high_water.insert(key.clone(), order);
        let mut row = new_job_row(&job, now);
        row.schedule_key = Some(key.clone());
        row.schedule_order = Some(order);
        self.insert(&job, row, now, change);
        self.owners.insert(key, job.id().to_owned());
        Ok(ReplaceOutcome {
            job_id: job.id().to_owned(),
            previous_job_id: previous.map(|p| p.id),
            previous_status,
            previous_stopped,
        })
    }

    /// Persists what a replace or cancel decided for the key's owner: a
    /// cancel as by an operator (a stopped owner gives back its reservation).
    fn apply_owner_fate(
        &mut self,
        id: &str,
        fate: OwnerFate,
        now: i64,
        change: &mut CountChange,
    ) -> Result<()> {
        if fate.cancels() {
            self.cancel_job(id, now, change)?;
        }
        Ok(())
    }

    fn owner(&self, key: &ScheduleKey) -> Option<&Job> {
        self.owners
            .get(key.as_str())
            .and_then(|id| self.jobs.get(id))
    }

    pub(super) fn cancel_scheduled(
        &mut self,
        key: &ScheduleKey,
        running: RunningOwner,
        now: i64,
        change: &mut CountChange,
    ) -> KeyedOutcome<CancelOutcome> {
        let Some(owner) = self.owner(key).cloned() else {
            return KeyedOutcome {
                job_id: None,
                outcome: CancelOutcome::NotFound,
            };
        };
        self.owners.remove(key.as_str());
        let (fate, outcome) = owner_on_cancel(owner.status, running);
        self.apply_owner_fate(&owner.id, fate, now, change)
            .expect("a live owner can be cancelled");
        KeyedOutcome {
            job_id: Some(owner.id),
            outcome,
        }
    }

    pub(super) fn wake_scheduled(
        &mut self,
        key: &ScheduleKey,
        now: i64,
    ) -> KeyedOutcome<WakeOutcome> {
        let Some(id) = self.owner(key).map(|j| j.id.clone()) else {
            return KeyedOutcome {
                job_id: None,
                outcome: WakeOutcome::NotFound,
            };
        };
        let row = self.jobs.get_mut(&id).expect("owner row exists");
        let outcome = owner_on_wake(row, now);
        if outcome == WakeOutcome::Woken {
            row.scheduled_at_ms = now;
        }
        KeyedOutcome {
            job_id: Some(id),
            outcome,
        }
    }

    pub(super) fn get_scheduled(
        &self,
        key: &ScheduleKey,
        include_latest_terminal: bool,
    ) -> ScheduledJobs {
        let latest_terminal_job = include_latest_terminal
            .then(|| {
                self.jobs
                    .values()
                    .filter(|j| {
                        j.schedule_key.as_deref() == Some(key.as_str()) && j.status.is_terminal()
                    })
                    .max_by(|a, b| {
                        (a.schedule_order, a.created_at_ms, a.id.as_bytes()).cmp(&(
                            b.schedule_order,
                            b.created_at_ms,
                            b.id.as_bytes(),
                        ))
                    })
                    .cloned()
            })
            .flatten();
        ScheduledJobs {
            current_job: self.owner(key).cloned(),
            latest_terminal_job,
        }
    }
}
