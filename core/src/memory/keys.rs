//! Stable schedule keys (SPEC §5) on the in-memory state.

use super::State;
use crate::counts::CountChange;
use crate::error::{Error, ErrorCode, Result};
use crate::job::{Job, JobStatus};
use crate::keys::ScheduleKey;
use crate::options::NewJob;
use crate::requests::{
    CancelOutcome, KeyedOutcome, ReplaceOutcome, RunningOwner, ScheduledJobs, WakeOutcome,
};
use crate::transitions::{new_job_row, operator_cancel};

impl State {
    pub(super) fn replace_scheduled(
        &mut self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
        now: i64,
        change: &mut CountChange,
    ) -> Result<ReplaceOutcome> {
        if job.idempotency_key().is_some() || job.deduplicate_while_queued() {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "replace_scheduled takes neither an idempotency key nor dedupe",
            ));
        }
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
            if prev.status == JobStatus::Queued {
                let prev = self.jobs.get_mut(&prev.id).expect("owner row exists");
                operator_cancel(prev, now).expect("queued job can be cancelled");
                change.moved(&prev.queue, JobStatus::Queued, JobStatus::Cancelled);
            } else if running == RunningOwner::Stop {
                self.cancel_job(&prev.id, now, change)?;
                previous_stopped = true;
            }
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
        let outcome = if owner.status == JobStatus::Queued {
            let row = self.jobs.get_mut(&owner.id).expect("owner row exists");
            operator_cancel(row, now).expect("queued job can be cancelled");
            change.moved(&row.queue, JobStatus::Queued, JobStatus::Cancelled);
            CancelOutcome::Cancelled
        } else if running == RunningOwner::Stop {
            self.cancel_job(&owner.id, now, change)
                .expect("a handed-off job can be cancelled");
            CancelOutcome::Stopped
        } else {
            CancelOutcome::HandedOff
        };
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
        let outcome = match row.status {
            JobStatus::Queued if row.scheduled_at_ms > now => {
                row.scheduled_at_ms = now;
                WakeOutcome::Woken
            }
            JobStatus::Queued => WakeOutcome::AlreadyDue,
            _ => WakeOutcome::HandedOff,
        };
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
