//! Claim, fenced reports, recovery, operator actions and pruning on the in-memory state.

use std::collections::HashMap;

use super::{Cap, State};
use crate::counts::CountChange;
use crate::durable::ChildNotice;
use crate::error::{Error, Result};
use crate::job::{Job, JobStatus, Lease};
use crate::rate::RateLimit;
use crate::rate::{rate_log_horizon, RateWindow};
use crate::requests::{ClaimRequest, Outcome, PruneRequest};
use crate::rules::{claim_levels, give_back, is_prunable, prune_order, GiveBack, SequenceHead};
use crate::steps::{run_ready, take_turns, AdmissionReads, Claim, Taken, Turn, TurnReads};
use crate::transitions::{self, due_order};

/// The admission's reads from the maps the claim is about to change.
struct Reads<'s> {
    caps: &'s HashMap<String, Cap>,
    rate_starts: &'s HashMap<String, Vec<i64>>,
    jobs: &'s std::collections::BTreeMap<String, Job>,
}

impl AdmissionReads for Reads<'_> {
    async fn active_reservations(&mut self, key: &str, _max: i64) -> Result<i64> {
        Ok(self.caps.get(key).map_or(0, |c| c.active))
    }

    async fn rate_window(&mut self, limit: &RateLimit) -> Result<Option<RateWindow>> {
        let starts = self
            .rate_starts
            .get(&limit.key)
            .cloned()
            .unwrap_or_default();
        Ok(Some(RateWindow::new(starts)))
    }

    async fn sequence_head(&mut self, key: &str) -> Result<SequenceHead> {
        let of_key = || (self.jobs.values()).filter(|j| j.sequence_key.as_deref() == Some(key));
        Ok(SequenceHead {
            first: of_key()
                .filter(|j| j.blocks_its_sequence())
                .map(|j| (j.created_at_ms, j.id.clone()))
                .min(),
            running: of_key().any(|j| j.status == JobStatus::HandedOff),
        })
    }
}

/// One walk's due candidates, in claim order, as lanes of fair turns.
struct Lanes<'j>(Vec<&'j Job>);

impl TurnReads for Lanes<'_> {
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<(String, String)>> {
        let lanes =
            (self.0.iter()).filter_map(|j| Some((j.queue.as_str(), j.fairness_key.as_deref()?)));
        let next = lanes
            .filter(|lane| after.is_none_or(|after| *lane > after))
            .min();
        Ok(next.map(|(q, k)| (q.to_owned(), k.to_owned())))
    }

    async fn candidates(&mut self, lane: &Turn, after: Option<&Job>, n: usize) -> Result<Vec<Job>> {
        let after = |j: &Job| after.is_none_or(|a| due_order(j, a).is_gt());
        let of_lane = (self.0.iter()).filter(|j| Turn::of(j) == *lane && after(j));
        Ok(of_lane.take(n).map(|j| (*j).clone()).collect())
    }
}

impl State {
    pub(super) fn claim(
        &mut self,
        req: &ClaimRequest,
        now: i64,
        change: &mut CountChange,
    ) -> Vec<Job> {
        self.heartbeats.insert(req.worker_id.clone(), now);
        let candidates: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| {
                j.status == JobStatus::Queued
                    && j.scheduled_at_ms <= now
                    && req.job_names.contains(&j.job_name)
                    && req.queues.as_ref().is_none_or(|qs| qs.contains(&j.queue))
                    && !self.paused.contains_key(&j.queue)
            })
            .collect();
        let mut claim = Claim::new(req, now);
        let mut reads = Reads {
            caps: &self.caps,
            rate_starts: &self.rate_starts,
            jobs: &self.jobs,
        };
        // Level by level, job priority by job priority, in fair turns.
        'walk: for level in claim_levels(req) {
            let in_level: Vec<&Job> = (candidates.iter().copied())
                .filter(|j| level.contains(&j.queue))
                .collect();
            let mut priorities: Vec<i64> = in_level.iter().map(|j| j.priority).collect();
            priorities.sort_unstable_by(|a, b| b.cmp(a));
            priorities.dedup();
            for priority in priorities {
                let mut jobs: Vec<&Job> = (in_level.iter().copied())
                    .filter(|j| j.priority == priority)
                    .collect();
                jobs.sort_by(|a, b| due_order(a, b));
                let mut lanes = Lanes(jobs);
                run_ready(take_turns(&mut claim, &req.turns, &mut lanes, &mut reads))
                    .expect("the memory store's reads never wait and never fail");
                if claim.is_full() {
                    break 'walk;
                }
            }
        }
        let plan = claim.finish();
        for job in plan.postponed {
            self.jobs.insert(job.id.clone(), job);
        }
        for job in plan.moved {
            change.moved(&job.queue, JobStatus::Queued, job.status);
            let id = job.id.clone();
            self.jobs.insert(id.clone(), job);
            self.give_back(JobStatus::Queued, &id, now, change);
        }
        for limit in &plan.rate_starts {
            let log = self.rate_starts.entry(limit.key.clone()).or_default();
            let horizon = rate_log_horizon(limit, now);
            log.retain(|at| *at > horizon);
            log.push(now);
        }
        let mut claimed = Vec::with_capacity(plan.taken.len());
        for Taken { job, reservation } in plan.taken {
            if let Some((key, max)) = reservation {
                let cap = self
                    .caps
                    .entry(key.clone())
                    .or_insert(Cap { max, active: 0 });
                cap.max = max;
                cap.active += job.cost;
                self.reservations.insert(job.id.clone(), key);
            }
            change.moved(&job.queue, JobStatus::Queued, JobStatus::HandedOff);
            self.jobs.insert(job.id.clone(), job.clone());
            claimed.push(job);
        }
        claimed
    }

    /// Job `id` just moved out of `from`: it gives back what [`give_back`]
    /// says. (Workers are woken after every change of this store.)
    fn give_back(&mut self, from: JobStatus, id: &str, now: i64, change: &mut CountChange) {
        let GiveBack {
            reservation,
            schedule_key,
            dependents,
            wake_workers: _,
            parent,
        } = give_back(from, &self.jobs[id]);
        if let (true, Some(notice)) = (parent, ChildNotice::of(&self.jobs[id])) {
            let delivered =
                self.signal(&notice.parent_id, &notice.name, notice.payload, now, change);
            ChildNotice::settle(delivered).expect("a memory delivery fails only as settled");
        }
        if reservation {
            self.release_reservation(id);
        }
        if schedule_key {
            self.release_owner(id);
        }
        if dependents {
            self.release_dependents(id, now, change);
        }
    }

    pub(super) fn report(
        &mut self,
        lease: &Lease,
        outcome: &Outcome,
        now: i64,
        change: &mut CountChange,
    ) -> bool {
        let Some(job) = self.jobs.get_mut(&lease.job_id) else {
            return false;
        };
        if !lease.holds(job) {
            return false;
        }
        let delivered =
            (outcome.awaited_signal()).is_some_and(|name| self.has_signal(&lease.job_id, name));
        let outcome = &outcome.clone().given_signals(delivered);
        let job = self.jobs.get_mut(&lease.job_id).expect("checked above");
        transitions::apply_outcome(job, outcome, now);
        change.reported(&job.queue, outcome, job.status);
        let deleted = job.is_deleted_on_completion();
        self.give_back(JobStatus::HandedOff, &lease.job_id, now, change);
        if deleted && !self.has_dependents(&lease.job_id) {
            self.delete(std::slice::from_ref(&lease.job_id), change);
        }
        true
    }

    pub(super) fn recover_stale(
        &mut self,
        stale_after_ms: i64,
        now: i64,
        change: &mut CountChange,
    ) -> Vec<String> {
        let cutoff = now.saturating_sub(stale_after_ms);
        let lost: Vec<String> = self
            .jobs
            .values()
            .filter(|j| j.status == JobStatus::HandedOff)
            .filter(|j| {
                let beat = j.worker_id.as_ref().and_then(|w| self.heartbeats.get(w));
                beat.is_none_or(|at| *at < cutoff)
            })
            .map(|j| j.id.clone())
            .collect();
        for id in &lost {
            let job = self.jobs.get_mut(id).expect("listed job exists");
            transitions::recover_lost(job, now);
            change.recovered(&job.queue, job.status);
            self.give_back(JobStatus::HandedOff, id, now, change);
        }
        self.forget_workers(crate::workers::worker_forget_cutoff_ms(now, stale_after_ms));
        lost
    }

    /// Cancels up to `limit` queued jobs whose expiry has passed, oldest
    /// expiry first (see `WorkerStore::expire_due`); the ids, sorted.
    pub(super) fn expire_due(
        &mut self,
        limit: usize,
        now: i64,
        change: &mut CountChange,
    ) -> Vec<String> {
        let mut due: Vec<(i64, String)> = (self.jobs.values())
            .filter(|j| j.status == JobStatus::Queued && j.is_expired(now))
            .filter_map(|j| Some((j.expires_at_ms?, j.id.clone())))
            .collect();
        due.sort_unstable();
        due.truncate(limit);
        let mut ids: Vec<String> = due.into_iter().map(|(_, id)| id).collect();
        for id in &ids {
            let job = self.jobs.get_mut(id).expect("listed job exists");
            transitions::expire(job, now);
            change.moved(&job.queue, JobStatus::Queued, job.status);
            self.give_back(JobStatus::Queued, id, now, change);
        }
        ids.sort_unstable();
        ids
    }

    pub(super) fn retry_job(
        &mut self,
        id: &str,
        now: i64,
        change: &mut CountChange,
    ) -> Result<Job> {
        let job = self.operate(id, now, change, transitions::operator_retry)?;
        if let Some(key) = &job.schedule_key {
            self.owners
                .entry(key.clone())
                .or_insert_with(|| job.id.clone());
        }
        self.reopen_dependents(id, now, change);
        Ok(job)
    }

    pub(super) fn cancel_job(
        &mut self,
        id: &str,
        now: i64,
        change: &mut CountChange,
    ) -> Result<Job> {
        let from = self.jobs.get(id).map(|j| j.status);
        self.operate(id, now, change, transitions::operator_cancel)?;
        let from = from.expect("operate found the job");
        self.give_back(from, id, now, change);
        Ok(self.jobs[id].clone())
    }

    /// An operator's action on job `id`: the transition, counted.
    fn operate(
        &mut self,
        id: &str,
        now: i64,
        change: &mut CountChange,
        transition: fn(&mut Job, i64) -> Result<()>,
    ) -> Result<Job> {
        let job = self
            .jobs
            .get_mut(id)
            .ok_or_else(|| Error::job_not_found(id))?;
        let from = job.status;
        transition(job, now)?;
        change.moved(&job.queue, from, job.status);
        Ok(job.clone())
    }

    /// Terminal jobs old enough to prune, oldest first.
    pub(super) fn prunable(&self, req: &PruneRequest, now: i64) -> Vec<String> {
        let mut rows: Vec<(i64, &str)> = self
            .jobs
            .values()
            .filter(|j| is_prunable(j, req, now))
            .filter_map(|j| Some((j.terminal_at_ms()?, j.id.as_str())))
            .collect();
        rows.sort_by(|a, b| prune_order(*a, *b));
        rows.into_iter().map(|(_, id)| id.to_owned()).collect()
    }

    pub(super) fn delete(&mut self, ids: &[String], change: &mut CountChange) {
        for id in ids {
            if let Some(job) = self.jobs.remove(id) {
                change.removed(&job.queue, job.status);
                self.progress.remove(id);
                self.steps.remove(id);
                self.signals.remove(id);
                self.release_backlog.remove(id);
            }
        }
    }

    pub(super) fn reconcile_reservations(&mut self) -> u64 {
        let mut held: HashMap<&str, i64> = HashMap::new();
        for (id, key) in &self.reservations {
            if let Some(job) = (self.jobs.get(id)).filter(|j| j.status == JobStatus::HandedOff) {
                *held.entry(key.as_str()).or_default() += job.cost;
            }
        }
        let mut changed = 0;
        for (key, cap) in self.caps.iter_mut() {
            let actual = held.get(key.as_str()).copied().unwrap_or(0);
            if cap.active != actual {
                cap.active = actual;
                changed += 1;
            }
        }
        changed
    }
}
