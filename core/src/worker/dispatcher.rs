//! The dispatcher: the one loop that owns a worker's slots. Everything that
//! changes which jobs the worker holds goes through it, one decision at a time:
//!
//! - **Claim** when slots are free and there is a reason to (startup, the
//!   store's work signal, a slot of its own freed, the timer of the earliest
//!   future job, the fallback poll).
//! - **Report** finished attempts in batches (those that end within
//!   [`REPORT_GATHER`] of each other go together, one transaction), fenced by
//!   each job's lease. While the queue has a backlog (the last claim filled every
//!   slot it asked for) the batch also refills the slots: [`Store::report_and_claim`]
//!   reports and claims in one transaction, so a drain costs one commit per batch
//!   instead of two. Whether a batch is "report" or "report and claim" is decided
//!   here and nowhere else.
//! - **Learn of lost leases**: about once a second while it holds jobs
//!   ([`crate::worker::WorkerBuilder::lease_check_interval`]) it asks the store which of
//!   its leases are no longer current ([`Store::lost_leases`], one read), and at
//!   once when the store announces a cancellation of a job it holds
//!   ([`Store::subscribe_cancellations`]). The attempt's context is told
//!   ([`crate::JobContext::cancelled`]); the attempt itself aborts the handler
//!   after the cancel grace period.
//!
//! A job is held from its claim until its report is made, and the worker never
//! holds more jobs than its slots plus its prefetch, whatever wakes it. The
//! prefetch is a policy ([`crate::worker::PrefetchPolicy`]): a fixed number, or by
//! default an allowance the ledger adapts after every claim (none until a claim
//! comes back full, then growing up to its cap; none again once one comes back
//! short). What it holds, what its calls in flight carry and whether it is running,
//! draining or abandoning is kept in the ledger ([`super::ledger`]), plain data
//! with the counting rules; this loop decides when to act. Claimed jobs start
//! through the local queue ([`super::local_queue`]), which runs at most `slots`
//! at once; with prefetch the rest wait there, and an attempt that ends hands
//! its slot to the next one itself.
//!
//! Store calls follow the ledger's [`CallMode`], which follows the allowance
//! of the moment: while the worker may hold nothing beyond its slots
//! (`prefetch(0)`, or the adaptive default with no backlog of short jobs) one
//! at a time, awaited in this loop, exactly as a worker without prefetch; while
//! it may hold jobs ahead (a fixed prefetch, or the adaptive allowance above
//! 0) up to two, each on a task of its
//! own ([`super::calls`]), while attempts go on running and their reports
//! queue up for the next batch, so under a backlog the batches (and their
//! refills) grow with the store's commit time by themselves; with no backlog a
//! claim is made at once, so latency is untouched. At shutdown the jobs still
//! waiting go back to the queue unstarted, their attempt not counted.
//!
//! [`Store::report_and_claim`]: crate::Store::report_and_claim
//! [`Store::lost_leases`]: crate::Store::lost_leases
//! [`Store::subscribe_cancellations`]: crate::Store::subscribe_cancellations

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::calls::{self, Done};
use super::events::{JobFinished, Telemetry, WorkerEvent};
use super::execute::{spawn_attempt, Report, Shared};
use super::ledger::{CallMode, Expiry, Ledger, Lost, Settled};
use crate::job::{Job, Lease};
use crate::requests::{ClaimRequest, LeaseLoss, LostLease};

/// How long a batch waits for attempts still running to join it.
const REPORT_GATHER: Duration = Duration::from_millis(1);
/// How long reports may take after the drain deadline before they are abandoned.
const REPORT_GRACE: Duration = Duration::from_secs(5);

/// The dispatcher's settings.
pub(crate) struct Settings {
    pub(crate) concurrency: usize,
    /// Jobs claimed beyond the slots, waiting in the local queue.
    pub(crate) prefetch: crate::worker::PrefetchPolicy,
    pub(crate) poll: Duration,
    pub(crate) lease_check: Duration,
    pub(crate) drain_timeout: Duration,
}

pub(crate) struct Dispatcher {
    shared: Arc<Shared>,
    /// `None` when the worker has no handlers (it never claims).
    claim: Option<ClaimRequest>,
    settings: Settings,
    /// The jobs held, the calls in flight and the phase.
    ledger: Ledger<watch::Sender<bool>>,
    reports: mpsc::UnboundedReceiver<Report>,
    /// Store calls on tasks of their own ([`CallMode::Overlapped`]).
    calls: JoinSet<Done>,
    /// A short claim asked for the next due time to be read.
    read_next_due: bool,
    /// After a failed report: not before this instant, and the next backoff.
    report_retry: Option<(Instant, Duration)>,
    /// Whether there is a reason to claim now.
    want_claim: bool,
    /// When to claim again without any other reason (timer or poll).
    next_claim_at: Instant,
    claim_backoff: Duration,
    next_lease_check: Instant,
}

impl Dispatcher {
    pub(crate) fn new(
        shared: Arc<Shared>,
        claim: Option<ClaimRequest>,
        settings: Settings,
        reports: mpsc::UnboundedReceiver<Report>,
    ) -> Self {
        let now = Instant::now();
        Self {
            shared,
            claim,
            claim_backoff: settings.poll,
            next_lease_check: now + settings.lease_check,
            ledger: Ledger::new(settings.concurrency, settings.prefetch),
            settings,
            reports,
            calls: JoinSet::new(),
            read_next_due: false,
            report_retry: None,
            want_claim: true,
            next_claim_at: now,
        }
    }

    /// Runs until `shutdown` resolves, then drains: no more claims, running
    /// attempts finish and are reported, up to the drain deadline (then they are
    /// aborted and given back to the queue) plus a grace for the reports.
    pub(crate) async fn run<F: Future<Output = ()>>(
        mut self,
        shutdown: F,
        stopping_tx: &watch::Sender<bool>,
        abort_tx: &watch::Sender<bool>,
    ) {
        let store = self.shared.store.clone();
        let mut signal = store.work_signal();
        let mut signal_alive = true;
        let mut cancels = store.subscribe_cancellations();
        let mut cancels_alive = true;
        let mut shutdown: Pin<&mut F> = std::pin::pin!(shutdown);
        let far = Duration::from_secs(86_400 * 365);
        if self.claim.is_none() {
            tracing::info!("no handlers registered; this worker only runs background duties");
        }
        loop {
            // Calls still on tasks are only next-due reads once the ledger
            // is finished (reports and claims are counted there).
            if self.ledger.is_finished() {
                break;
            }
            if !self.want_claim && Instant::now() >= self.next_claim_at {
                self.want_claim = true;
            }
            // 1. Reports waiting (and not backing off after an error).
            while let Ok(report) = self.reports.try_recv() {
                self.ledger.received(report);
            }
            let retry_ok = self.report_retry.is_none_or(|(at, _)| Instant::now() >= at);
            if retry_ok && self.ledger.may_call() && self.ledger.batch_ready() {
                self.gather().await;
                self.send_reports().await;
                continue;
            }
            // 2. A lease check that is due.
            if self.ledger.held() > 0 && Instant::now() >= self.next_lease_check {
                self.check_leases().await;
                continue;
            }
            // 3. A claim that is wanted.
            if self.should_claim() && self.ledger.may_call() {
                self.send_claim().await;
                continue;
            }
            // 4. Wait for a reason.
            let now = Instant::now();
            let claim_at = if !self.ledger.is_running() || self.claim.is_none() || self.want_claim {
                now + far
            } else {
                self.next_claim_at
            };
            let check_at = if self.ledger.held() == 0 {
                now + far
            } else {
                self.next_lease_check
            };
            let retry_at = match (self.ledger.has_pending(), self.report_retry) {
                (true, Some((at, _))) if self.ledger.may_call() => at,
                _ => now + far,
            };
            let deadline = self.ledger.deadline().unwrap_or(now + far);
            let wake_at = claim_at.min(check_at).min(retry_at);
            tokio::select! {
                biased;
                _ = shutdown.as_mut(), if self.ledger.is_running() => {
                    // Before handlers hear of the shutdown: one that returns
                    // at once must not hand its slot to a waiting job.
                    let unstarted = self.take_waiting();
                    let until = Instant::now() + self.settings.drain_timeout;
                    self.ledger.begin_shutdown(until, unstarted);
                    stopping_tx.send_replace(true);
                    tracing::info!(
                        running = self.ledger.held(),
                        deadline = ?self.settings.drain_timeout,
                        "shutting down: draining"
                    );
                }
                Some(done) = self.calls.join_next(), if !self.calls.is_empty() => match done {
                    Ok(done) => {
                        self.finish_call(done);
                        self.next_due().await;
                    }
                    Err(e) => tracing::error!("a store call's task failed: {e}"),
                },
                report = self.reports.recv() => {
                    if let Some(report) = report {
                        self.ledger.received(report);
                    }
                }
                id = cancels.recv(), if cancels_alive => match id {
                    Ok(id) => {
                        if self.ledger.is_live(&id) {
                            self.next_lease_check = Instant::now();
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.next_lease_check = Instant::now();
                    }
                    Err(broadcast::error::RecvError::Closed) => cancels_alive = false,
                },
                changed = signal.changed(), if signal_alive && self.ledger.is_running() => {
                    if changed.is_err() {
                        signal_alive = false;
                    } else {
                        self.want_claim = true;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    match self.ledger.deadline_passed(Instant::now(), REPORT_GRACE) {
                        Some(Expiry::AbortAttempts) => {
                            tracing::warn!(
                                running = self.ledger.held(),
                                "drain deadline passed; returning running jobs to the queue"
                            );
                            abort_tx.send_replace(true);
                        }
                        Some(Expiry::GiveUp { outstanding }) => {
                            Telemetry::add(&self.shared.telemetry.unreported, outstanding as u64);
                            tracing::error!(
                                outstanding,
                                "reports could not be made; stale recovery will return those jobs"
                            );
                            break;
                        }
                        None => {}
                    }
                }
                _ = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }

    /// Whether to make a plain claim now. (Under a backlog the slots are
    /// refilled by the report batches; a plain claim is left for free slots
    /// that no batch refilled: the first claim, a claim that found less than it
    /// asked for, slots beyond one claim's maximum.)
    fn should_claim(&self) -> bool {
        self.claim.is_some() && self.want_claim && self.ledger.may_claim()
    }

    /// Takes the reports already waiting; inline, attempts still running
    /// (short jobs of the same claim, typically) join if they end within
    /// [`REPORT_GATHER`]. (Overlapped, attempts run all the time and the
    /// batches form by themselves while the calls in flight commit.)
    async fn gather(&mut self) {
        let deadline = Instant::now() + REPORT_GATHER;
        while !self.ledger.batch_full() {
            match self.reports.try_recv() {
                Ok(r) => self.ledger.received(r),
                Err(_)
                    if self.ledger.mode() == CallMode::Inline
                        && self.shared.local.executing() > 0 =>
                {
                    match tokio::time::timeout_at(deadline, self.reports.recv()).await {
                        Ok(Some(r)) => self.ledger.received(r),
                        _ => break,
                    }
                }
                Err(_) => break,
            }
        }
    }

    /// Sends one report batch; with a backlog, it refills the slots in the
    /// same transaction.
    async fn send_reports(&mut self) {
        let (batch, refill) = self.ledger.begin_report(self.claim.is_some());
        let refill = match &self.claim {
            Some(template) if refill > 0 => Some(ClaimRequest {
                limit: refill,
                ..template.clone()
            }),
            _ => None,
        };
        let store = self.shared.store.clone();
        self.make(calls::report(store, batch, refill)).await;
    }

    /// Sends a plain claim for the free slots.
    async fn send_claim(&mut self) {
        let Some(template) = &self.claim else {
            return;
        };
        let req = ClaimRequest {
            limit: self.ledger.begin_claim(),
            ..template.clone()
        };
        self.make(calls::claim(self.shared.store.clone(), req))
            .await;
    }

    /// Makes a store call the way the call mode says: awaited here inline, on
    /// a task of its own overlapped (its result comes back through `calls`).
    async fn make(&mut self, call: impl Future<Output = Done> + Send + 'static) {
        match self.ledger.mode() {
            CallMode::Inline => {
                let done = call.await;
                self.finish_call(done);
                self.next_due().await;
            }
            CallMode::Overlapped => {
                self.calls.spawn(call);
            }
        }
    }

    /// Applies a finished store call to the ledger and starts what it claimed.
    fn finish_call(&mut self, done: Done) {
        match done {
            Done::Reported {
                batch,
                asked,
                results,
                claimed,
            } => {
                match results {
                    Ok(results) => {
                        self.report_retry = None;
                        let lost = results.iter().filter(|ok| !**ok).count();
                        tracing::debug!(count = batch.len(), lost, "reported");
                        for settled in self.ledger.report_done(batch, asked, &results) {
                            finished(&self.shared.telemetry, settled);
                        }
                    }
                    Err(e) => {
                        let backoff = self
                            .report_retry
                            .map_or(Duration::from_millis(100), |(_, b)| {
                                (b * 2).min(Duration::from_secs(5))
                            });
                        tracing::warn!(
                            count = batch.len(),
                            "reporting failed, retrying in {backoff:?}: {e}"
                        );
                        self.report_retry = Some((Instant::now() + backoff, backoff));
                        self.ledger.report_failed(batch, asked);
                    }
                }
                if let Some(jobs) = claimed {
                    self.start(jobs, asked);
                }
                // Slots freed: they may release a queue cap, so claim again.
                self.want_claim = true;
            }
            Done::Claimed { asked, result } => {
                self.ledger.claim_done(asked);
                self.claimed(asked, result);
            }
            Done::NextDue(wait) => {
                // Sooner than the poll set when the claim came back short.
                if let (Some(wait), false) = (wait, self.want_claim) {
                    self.next_claim_at = self.next_claim_at.min(Instant::now() + wait);
                }
            }
        }
    }

    /// The result of a plain claim.
    fn claimed(&mut self, asked: usize, result: crate::Result<Vec<Job>>) {
        let jobs = match result {
            Ok(jobs) => {
                self.claim_backoff = self.settings.poll;
                jobs
            }
            Err(e) => {
                let backoff = self.claim_backoff;
                tracing::warn!("claim failed, retrying in {backoff:?}: {e}");
                self.claim_backoff = (backoff * 2).min(Duration::from_secs(30));
                self.want_claim = false;
                self.next_claim_at = Instant::now() + backoff;
                return;
            }
        };
        let got = jobs.len();
        self.start(jobs, asked);
        if got == asked {
            return; // maybe more is due: want_claim stays
        }
        // Idle: claim again at the poll, a signal, or the earliest future job
        // (read next, after the jobs of this claim have started).
        self.want_claim = false;
        self.next_claim_at = Instant::now() + self.settings.poll;
        self.read_next_due = true;
    }

    /// Reads when the earliest future job is due, if a short claim asked for
    /// it: awaited here inline (so the loop claims no faster than it did
    /// before prefetch existed), on a task overlapped.
    async fn next_due(&mut self) {
        if !std::mem::take(&mut self.read_next_due) {
            return;
        }
        let Some(template) = &self.claim else {
            return;
        };
        let (store, clock) = (self.shared.store.clone(), self.shared.clock.clone());
        let call = calls::next_due(store, clock, template.clone());
        match self.ledger.mode() {
            CallMode::Inline => {
                let done = call.await;
                self.finish_call(done);
            }
            CallMode::Overlapped => {
                self.calls.spawn(call);
            }
        }
    }

    /// Shutdown: the jobs claimed ahead that have not started, as the reports
    /// that give them back to the queue unstarted (sent with the next batch).
    fn take_waiting(&mut self) -> Vec<Report> {
        let waiting = self.shared.local.take_waiting();
        if !waiting.is_empty() {
            tracing::info!(
                count = waiting.len(),
                "giving back jobs claimed ahead that did not start"
            );
        }
        waiting.iter().filter_map(Report::unstarted).collect()
    }

    /// Holds claimed `jobs` (of a claim that asked for `asked`) and hands them
    /// to the local queue, which starts those that have a slot.
    fn start(&mut self, jobs: Vec<Job>, asked: usize) {
        if let Some(template) = &mut self.claim {
            // The next claim's turns begin after the lane this one ended on.
            template.turns.advance(&jobs);
        }
        let first = self.ledger.held() == 0;
        let admitted = self.ledger.hold(jobs, asked, || watch::channel(false));
        let got = admitted.len();
        if got == 0 {
            return;
        }
        Telemetry::add(&self.shared.telemetry.claimed, got as u64);
        tracing::debug!(count = got, "claimed jobs");
        self.shared
            .telemetry
            .emit(WorkerEvent::Claimed { count: got });
        for (job, cancel) in self.shared.local.push(admitted) {
            spawn_attempt(self.shared.clone(), job, cancel);
        }
        if first {
            // The first jobs held: the lease check starts one interval from now.
            self.next_lease_check = Instant::now() + self.settings.lease_check;
        }
    }

    /// Asks the store which held leases are gone and tells their attempts.
    async fn check_leases(&mut self) {
        self.next_lease_check = Instant::now() + self.settings.lease_check;
        let leases: Vec<Lease> = self.ledger.live_leases();
        if leases.is_empty() {
            return;
        }
        let lost = match self.shared.store.lost_leases(&leases).await {
            Ok(lost) => lost,
            Err(e) => {
                tracing::warn!("lease check failed: {e}");
                return;
            }
        };
        let local = &self.shared.local;
        for LostLease { lease, loss } in lost {
            match self.ledger.lose(&lease, loss, |id| local.remove(id)) {
                Lost::Known => continue,
                // Claimed ahead and not started: nothing runs, nothing to report.
                Lost::Unstarted => tracing::info!(
                    job_id = %lease.job_id,
                    ?loss,
                    "the lease of a job waiting for a slot is gone; it will not start"
                ),
                Lost::Running(cancel) => {
                    cancel.send_replace(true);
                    match loss {
                        LeaseLoss::Cancelled => tracing::info!(
                            job_id = %lease.job_id,
                            "job cancelled while running; telling its handler to stop"
                        ),
                        LeaseLoss::Lost => tracing::warn!(
                            job_id = %lease.job_id,
                            "lease lost (recovered by another process); telling the handler to stop"
                        ),
                    }
                }
            }
            self.shared.telemetry.emit(WorkerEvent::LeaseLost {
                job_id: lease.job_id.clone(),
                loss,
            });
        }
    }
}

/// Counts and announces one reported attempt.
fn finished(telemetry: &Telemetry, settled: Settled) {
    let Settled {
        mut report,
        mut accepted,
        loss,
    } = settled;
    if let (false, Some(outcome)) = (accepted, report.in_transaction.take()) {
        // The handler's own transaction reported the attempt and committed:
        // that report took the lease, so the worker's own changed nothing.
        tracing::debug!(job_id = %report.lease.job_id, "attempt reported in the handler's transaction");
        report.outcome = outcome;
        accepted = true;
    }
    if !report.started {
        if accepted {
            Telemetry::add(&telemetry.returned_unstarted, 1);
        }
        return;
    }
    if !accepted {
        match loss {
            Some(LeaseLoss::Cancelled) => tracing::info!(
                job_id = %report.lease.job_id,
                "attempt of a cancelled job ended; its report was refused"
            ),
            _ => tracing::warn!(
                job_id = %report.lease.job_id,
                handoff_id = %report.lease.handoff_id,
                "report lost its lease (recovered or replaced); nothing changed"
            ),
        }
    }
    // Only a known cancellation counts as one (a cancel the worker had not
    // learned of yet counts as a lost lease).
    let loss = if accepted { None } else { loss };
    telemetry.count_outcome(&report.outcome, report.retries_left, accepted, loss);
    if report.aborted_after_cancel && loss == Some(LeaseLoss::Cancelled) {
        Telemetry::add(&telemetry.cancel_aborted, 1);
    }
    telemetry.emit(WorkerEvent::Finished(JobFinished {
        job_id: report.lease.job_id.clone(),
        job_name: report.job_name.clone(),
        queue: report.queue.clone(),
        attempt: report.attempt,
        outcome: report.outcome.clone(),
        accepted,
        duration: report.duration,
    }));
}
