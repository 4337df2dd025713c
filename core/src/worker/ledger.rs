//! The dispatcher's ledger: which jobs the worker holds, what each store call in
//! flight carries, and which phase of its life the worker is in. It is plain
//! data (no tasks, no channels, no clock of its own), so every rule about
//! counting is here in one place and is tested without a runtime; the
//! dispatcher ([`super::dispatcher`]) decides *when* to act and asks the ledger
//! *how much*.
//!
//! The invariants, checked after every step of the tests' random walks:
//!
//! - every report waiting or in flight is for a job held (`pending + reporting
//!   <= held`);
//! - the jobs held, less those whose report is in flight, plus those asked for
//!   by claims in flight, never exceed the capacity (slots plus prefetch): a
//!   claim counts the jobs of report batches in flight as given back (a refill
//!   commits with its batch). The one exception is a report batch that fails
//!   while another call is made ([`CallMode::Overlapped`] only): a claim made
//!   meanwhile counted its jobs as given back and may bring jobs, so the worker
//!   holds up to that batch more than its capacity, claims nothing more, and
//!   is back within it as its reports are made. The ledger keeps that excess
//!   as an overdraft;
//! - no more store calls are in flight than the call mode allows.
//!
//! How far ahead of its slots the worker claims is the ledger's too
//! ([`Ahead`]): a fixed number ([`PrefetchPolicy::Fixed`]), or, by default,
//! an allowance that follows the queue ([`PrefetchPolicy::Adaptive`]): none
//! until a claim comes back with every job it asked for while the jobs turn
//! over fast, then growing with each such claim up to its cap, and none again
//! as soon as a claim comes back short (the queue ran dry). Jobs already held
//! when the allowance shrinks stay held (they run); only the claims that
//! follow ask for less. The invariants
//! above hold against the policy's ceiling (slots plus the cap), and a claim
//! never asks for more than the allowance of the moment leaves free.
//!
//! What is *running* is not counted here: the local queue
//! ([`super::local_queue`]) counts the attempts executing, once.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::execute::Report;
use super::PrefetchPolicy;
use crate::job::{Job, Lease};
use crate::requests::LeaseLoss;

/// The most jobs asked for in one claim.
pub(crate) const MAX_CLAIM_BATCH: usize = 256;
/// The most reports sent in one batch.
pub(crate) const MAX_REPORT_BATCH: usize = 256;
/// Store calls in flight at once in [`CallMode::Overlapped`].
const MAX_OVERLAPPED_CALLS: usize = 2;

/// How the dispatcher makes its store calls (reports and claims). It follows
/// the allowance of the moment ([`Ledger::mode`]): a worker that may hold
/// nothing beyond its slots (`prefetch(0)`, or an adaptive one while its
/// allowance is 0) calls inline; one that may hold jobs ahead, overlapped.
/// Only a call's end changes the allowance, so when an adaptive worker drops
/// back to inline at most one call (the other of the pair) is still in
/// flight, which the inline bound allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallMode {
    /// Without jobs ahead: one call at a time, awaited in the dispatcher's
    /// loop, so there is no task hop between a claim and its jobs' start, and a
    /// report batch waits briefly for the attempts still running to join it. A
    /// second call would only split the batch the first one makes.
    Inline,
    /// With jobs ahead: up to two calls at once, each on a task of its own.
    /// Jobs claimed ahead keep the slots busy while a batch commits, so the
    /// batches form by themselves and the next one runs its statements while
    /// the previous one commits.
    Overlapped,
}

impl CallMode {
    /// Reports and claims in flight at once.
    pub(crate) fn max_calls(self) -> usize {
        match self {
            Self::Inline => 1,
            Self::Overlapped => MAX_OVERLAPPED_CALLS,
        }
    }
}

/// How many jobs the worker may hold beyond its slots now: the rule of
/// [`PrefetchPolicy`], as plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ahead {
    slots: usize,
    policy: PrefetchPolicy,
    /// The allowance of the moment.
    now: usize,
}

impl Ahead {
    pub(crate) fn new(slots: usize, policy: PrefetchPolicy) -> Self {
        let now = match policy {
            PrefetchPolicy::Fixed(n) => n,
            PrefetchPolicy::Adaptive { .. } => 0,
        };
        Self { slots, policy, now }
    }

    /// The allowance now.
    pub(crate) fn now(&self) -> usize {
        self.now
    }

    /// The most it can ever be.
    pub(crate) fn max(&self) -> usize {
        self.policy.max()
    }

    /// A claim that asked for `asked` jobs came back with `got`, and
    /// `finished` attempts ended since the claim before it came back.
    /// Adaptive:
    ///
    /// - a short claim (the queue ran dry) drops the allowance to 0, so a
    ///   worker that keeps up holds nothing beyond what it runs;
    /// - a full claim (more is likely due) grows it (to the slots at first,
    ///   then doubling, up to the cap), but only while the jobs turn over fast:
    ///   at least a quarter of what the worker may hold now (the slots, or the
    ///   allowance if larger) ended between the two claims. Jobs claimed ahead
    ///   then start within a few claims' time; long jobs, which end a few at a
    ///   time, never make a worker claim ahead (nor would it gain anything);
    /// - otherwise it stays as it is.
    ///
    /// Fixed: unchanged.
    pub(crate) fn after_claim(&mut self, asked: usize, got: usize, finished: usize) {
        let PrefetchPolicy::Adaptive { max } = self.policy else {
            return;
        };
        if asked == 0 {
            return;
        }
        if got < asked {
            self.now = 0;
        } else if finished.saturating_mul(4) >= self.now.max(self.slots) {
            self.now = self.now.saturating_mul(2).max(self.slots).min(max);
        }
    }
}

/// Where the worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Claiming and running jobs.
    Running,
    /// Shutdown began: no more claims; attempts finish and are reported until
    /// the drain deadline.
    Draining { until: Instant },
    /// The drain deadline passed: attempts still running were aborted (they
    /// give their jobs back); their reports may be made until the grace ends.
    Abandoning { until: Instant },
}

/// What the end of the phase's deadline calls for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Abort the attempts still running.
    AbortAttempts,
    /// Stop: these many jobs are held with no report made (stale recovery
    /// will return them).
    GiveUp { outstanding: usize },
}

/// A job held from its claim until its report is made.
struct Held<S> {
    lease: Lease,
    /// Tells the attempt its lease is gone.
    signal: S,
    /// Set once the worker learned the lease is gone.
    loss: Option<LeaseLoss>,
    /// The attempt ended (its report is pending or in flight): its lease is no
    /// longer checked.
    ended: bool,
}

/// A report the store answered.
pub(crate) struct Settled {
    pub(crate) report: Report,
    /// Whether the store accepted it (false: the lease was gone).
    pub(crate) accepted: bool,
    /// What the worker had learned about the lease, if it was lost.
    pub(crate) loss: Option<LeaseLoss>,
}

/// What a lease check's news means for a held job.
pub(crate) enum Lost<'a, S> {
    /// Not news: not held, held under another lease, or already known.
    Known,
    /// The job was waiting for a slot and now never starts; it is no longer held.
    Unstarted,
    /// The job is running: tell its attempt through this signal.
    Running(&'a S),
}

/// See the module docs. `S` is how an attempt is told its lease is gone (a
/// watch sender in the worker, `()` in tests).
pub(crate) struct Ledger<S> {
    slots: usize,
    /// How many jobs may be held beyond the slots now.
    ahead: Ahead,
    phase: Phase,
    held: HashMap<String, Held<S>>,
    /// Finished attempts whose report is not yet sent, in order.
    pending: Vec<Report>,
    /// Reports in the batches in flight (their jobs are still held).
    reporting: usize,
    /// Jobs asked for by the claims in flight (plain or refill).
    claiming: usize,
    /// Reports and claims in flight.
    calls: usize,
    /// Whether the last claim filled every slot it asked for (more is likely
    /// due, so report batches refill the slots).
    backlog: bool,
    /// Attempts that ended since the last claim came back ([`Ahead::after_claim`]).
    finished: usize,
    /// Jobs of failed report batches that claims in flight had counted as
    /// given back (see the module docs); 0 once the books are within capacity.
    overdraft: usize,
}

impl<S> Ledger<S> {
    /// An empty ledger for `slots` and the jobs `prefetch` lets it claim ahead.
    pub(crate) fn new(slots: usize, prefetch: PrefetchPolicy) -> Self {
        Self {
            slots,
            ahead: Ahead::new(slots, prefetch),
            phase: Phase::Running,
            held: HashMap::new(),
            pending: Vec::new(),
            reporting: 0,
            claiming: 0,
            calls: 0,
            backlog: false,
            finished: 0,
            overdraft: 0,
        }
    }

    /// How store calls are made now: inline while nothing may be held beyond
    /// the slots, overlapped while jobs may be held ahead.
    pub(crate) fn mode(&self) -> CallMode {
        if self.ahead.now() == 0 {
            CallMode::Inline
        } else {
            CallMode::Overlapped
        }
    }

    /// The most jobs that may be held now: the slots plus the allowance.
    fn capacity(&self) -> usize {
        self.slots.saturating_add(self.ahead.now())
    }

    /// The most jobs that may ever be held: the slots plus the policy's cap.
    fn ceiling(&self) -> usize {
        self.slots.saturating_add(self.ahead.max())
    }

    /// Jobs that may be held beyond the slots now.
    #[cfg(test)]
    pub(crate) fn ahead(&self) -> usize {
        self.ahead.now()
    }

    #[cfg(test)]
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    pub(crate) fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }

    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Shutdown is complete: nothing held and no call in flight.
    pub(crate) fn is_finished(&self) -> bool {
        !self.is_running() && self.held.is_empty() && self.calls == 0
    }

    /// How many more jobs may be claimed now (see the module docs).
    pub(crate) fn free(&self) -> usize {
        let after = self.held.len().saturating_sub(self.reporting) + self.claiming;
        self.capacity().saturating_sub(after)
    }

    /// Whether another report or claim may be sent now.
    pub(crate) fn may_call(&self) -> bool {
        self.calls < self.mode().max_calls()
    }

    /// Whether a plain claim is allowed now (running, and a slot free).
    pub(crate) fn may_claim(&self) -> bool {
        self.is_running() && self.free() > 0
    }

    /// Whether the pending reports make a batch worth a call now: always when
    /// no call is in flight (latency), otherwise once they are a good part of
    /// the capacity (a call's fixed cost is most of a small batch's).
    pub(crate) fn batch_ready(&self) -> bool {
        !self.pending.is_empty()
            && (self.calls == 0
                || self.pending.len() >= (self.capacity() / 2).min(MAX_REPORT_BATCH))
    }

    /// Whether a report batch is as large as it may be.
    pub(crate) fn batch_full(&self) -> bool {
        self.pending.len() >= MAX_REPORT_BATCH
    }

    /// Takes a finished attempt's report.
    pub(crate) fn received(&mut self, report: Report) {
        if let Some(held) = self.held.get_mut(&report.lease.job_id) {
            held.ended = true;
        }
        if report.started {
            self.finished += 1;
        }
        self.pending.push(report);
    }

    /// Starts a report call: the batch to send and how many jobs its refill
    /// claim asks for (0: no refill; one is made only under a backlog, while
    /// running, when `claims` says the worker claims at all).
    pub(crate) fn begin_report(&mut self, claims: bool) -> (Vec<Report>, usize) {
        let take = self.pending.len().min(MAX_REPORT_BATCH);
        let batch: Vec<Report> = self.pending.drain(..take).collect();
        self.reporting += take;
        let refill = if claims && self.backlog && self.is_running() {
            self.free().min(MAX_CLAIM_BATCH)
        } else {
            0
        };
        self.claiming += refill;
        self.calls += 1;
        (batch, refill)
    }

    /// Starts a plain claim call; returns how many jobs it asks for.
    pub(crate) fn begin_claim(&mut self) -> usize {
        let limit = self.free().min(MAX_CLAIM_BATCH);
        self.claiming += limit;
        self.calls += 1;
        limit
    }

    /// A report call failed: its batch goes back to the front, in order, for
    /// the retry; its refill (`asked`) claimed nothing.
    pub(crate) fn report_failed(&mut self, mut batch: Vec<Report>, asked: usize) {
        self.end_call(batch.len(), asked);
        // Claims made while the batch was in flight (returned or not) counted
        // its jobs as given back: what exceeds the capacity now is overdrawn.
        let over =
            (self.held.len() - self.reporting + self.claiming).saturating_sub(self.ceiling());
        self.overdraft = self.overdraft.max(over);
        batch.append(&mut self.pending);
        self.pending = batch;
    }

    /// A report call succeeded: its jobs are no longer held. `results` has one
    /// entry per report (a missing one counts as refused).
    pub(crate) fn report_done(
        &mut self,
        batch: Vec<Report>,
        asked: usize,
        results: &[bool],
    ) -> Vec<Settled> {
        self.end_call(batch.len(), asked);
        let settled = batch
            .into_iter()
            .enumerate()
            .map(|(i, report)| {
                let loss = self.held.remove(&report.lease.job_id).and_then(|h| h.loss);
                Settled {
                    accepted: results.get(i).copied().unwrap_or(false),
                    loss,
                    report,
                }
            })
            .collect();
        // A refill's jobs are still to be held ([`Self::hold`] settles then):
        // settling before them would forget an overdraft they may extend.
        if asked == 0 {
            self.settle_overdraft();
        }
        settled
    }

    /// A plain claim call ended (its jobs, if any, are then [`Self::hold`]).
    pub(crate) fn claim_done(&mut self, asked: usize) {
        self.end_call(0, asked);
    }

    fn end_call(&mut self, reported: usize, asked: usize) {
        self.calls -= 1;
        self.reporting -= reported;
        self.claiming -= asked;
    }

    /// Clears the overdraft once the books are within capacity again.
    fn settle_overdraft(&mut self) {
        if self.held.len().saturating_sub(self.reporting) + self.claiming <= self.ceiling() {
            self.overdraft = 0;
        }
    }

    /// Holds the jobs a claim for `asked` returned and gives each a signal
    /// (`signal()` makes the sender kept here and the receiver handed to the
    /// attempt). Jobs beyond `asked` (a store bug) and jobs without a lease
    /// are left out. Returns the jobs to start, with their receivers.
    pub(crate) fn hold<R>(
        &mut self,
        mut jobs: Vec<Job>,
        asked: usize,
        mut signal: impl FnMut() -> (S, R),
    ) -> Vec<(Job, R)> {
        self.backlog = jobs.len() == asked;
        self.ahead
            .after_claim(asked, jobs.len(), std::mem::take(&mut self.finished));
        if jobs.len() > asked {
            tracing::error!(
                asked,
                got = jobs.len(),
                "the store returned more jobs than asked for; ignoring the rest"
            );
            jobs.truncate(asked);
        }
        let mut admitted = Vec::with_capacity(jobs.len());
        for job in jobs {
            let Some(lease) = job.lease() else {
                tracing::error!(job_id = %job.id, "claimed job has no lease; skipping it");
                continue;
            };
            let (sender, receiver) = signal();
            self.held.insert(
                lease.job_id.clone(),
                Held {
                    lease,
                    signal: sender,
                    loss: None,
                    ended: false,
                },
            );
            admitted.push((job, receiver));
        }
        self.settle_overdraft();
        admitted
    }

    /// The leases worth checking: held, attempt not ended, loss not known.
    pub(crate) fn live_leases(&self) -> Vec<Lease> {
        self.held
            .values()
            .filter(|h| h.loss.is_none() && !h.ended)
            .map(|h| h.lease.clone())
            .collect()
    }

    /// Whether a cancellation notice for `job_id` is news (held, loss not known).
    pub(crate) fn is_live(&self, job_id: &str) -> bool {
        self.held.get(job_id).is_some_and(|h| h.loss.is_none())
    }

    /// Records that `lease` is gone. `unstart(job_id)` takes the job out of the
    /// local queue if it is still waiting there (then it never starts and is no
    /// longer held) and says whether it was.
    pub(crate) fn lose(
        &mut self,
        lease: &Lease,
        loss: LeaseLoss,
        unstart: impl FnOnce(&str) -> bool,
    ) -> Lost<'_, S> {
        let news = self
            .held
            .get(&lease.job_id)
            .is_some_and(|h| h.lease == *lease && h.loss.is_none());
        if !news {
            return Lost::Known;
        }
        if unstart(&lease.job_id) {
            self.held.remove(&lease.job_id);
            return Lost::Unstarted;
        }
        match self.held.get_mut(&lease.job_id) {
            Some(held) => {
                held.loss = Some(loss);
                Lost::Running(&held.signal)
            }
            None => Lost::Known,
        }
    }

    /// Shutdown begins: no more claims or refills; `unstarted` (jobs claimed
    /// ahead that never started) go back with the next batch; attempts may
    /// run until `until`.
    pub(crate) fn begin_shutdown(&mut self, until: Instant, unstarted: Vec<Report>) {
        if self.is_running() {
            self.phase = Phase::Draining { until };
            self.backlog = false;
            self.pending.extend(unstarted);
        }
    }

    /// The current phase's deadline.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Running => None,
            Phase::Draining { until } | Phase::Abandoning { until } => Some(until),
        }
    }

    /// The phase's deadline passed at `now`: draining turns to abandoning
    /// (reports may still be made for `grace`), abandoning gives up.
    pub(crate) fn deadline_passed(&mut self, now: Instant, grace: Duration) -> Option<Expiry> {
        match self.phase {
            Phase::Running => None,
            Phase::Draining { .. } => {
                self.phase = Phase::Abandoning { until: now + grace };
                Some(Expiry::AbortAttempts)
            }
            Phase::Abandoning { .. } => Some(Expiry::GiveUp {
                outstanding: self.held.len(),
            }),
        }
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        assert!(self.pending.len() + self.reporting <= self.held.len());
        assert!(
            self.held.len() + self.claiming <= self.ceiling() + self.reporting + self.overdraft,
            "held {} + claiming {} > ceiling {} + reporting {} + overdraft {}",
            self.held.len(),
            self.claiming,
            self.ceiling(),
            self.reporting,
            self.overdraft,
        );
        if self.ahead.max() == 0 {
            assert_eq!(self.overdraft, 0, "one call at a time never overdraws");
        }
        assert!(self.calls <= self.mode().max_calls());
        assert!(self.ahead.now() <= self.ahead.max());
        let mut ids = std::collections::HashSet::new();
        for r in &self.pending {
            assert!(
                self.held.contains_key(&r.lease.job_id),
                "a pending report's job is held"
            );
            assert!(ids.insert(&r.lease.job_id), "one pending report per job");
        }
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
