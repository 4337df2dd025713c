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
//!   ([`crate::WorkerBuilder::lease_check_interval`]) it asks the store which of
//!   its leases are no longer current ([`Store::lost_leases`], one read), and at
//!   once when the store announces a cancellation of a job it holds
//!   ([`Store::subscribe_cancellations`]). The attempt's context is told
//!   ([`crate::JobContext::cancelled`]); the attempt itself aborts the handler
//!   after the cancel grace period.
//!
//! A job is held from its claim until its report is made, and the worker never
//! holds more jobs than its slots plus its prefetch (default 0), whatever wakes
//! it. Claimed jobs start through the local queue ([`super::local_queue`]),
//! which runs at most `slots` at once; with prefetch the rest wait there, and an
//! attempt that ends hands its slot to the next one itself. Store calls are
//! made on tasks of their own ([`super::calls`]), one at a time without
//! prefetch and up to [`MAX_CALLS_WITH_PREFETCH`] with it: attempts go on
//! running meanwhile and their reports queue up for the next batch, so under a
//! backlog the batches (and their refills) grow with the store's commit time by
//! themselves; with no backlog a claim is made at once, so latency is untouched. At shutdown the jobs still
//! waiting go back to the queue unstarted, their attempt not counted.
//!
//! [`Store::report_and_claim`]: crate::Store::report_and_claim
//! [`Store::lost_leases`]: crate::Store::lost_leases
//! [`Store::subscribe_cancellations`]: crate::Store::subscribe_cancellations

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::calls::{self, Done};
use super::events::{JobFinished, Telemetry, WorkerEvent};
use super::execute::{spawn_attempt, Report, Shared};
use super::local_queue::Waiting;
use crate::job::{Job, Lease};
use crate::requests::{ClaimRequest, LeaseLoss, LostLease};

/// The most jobs asked for in one claim.
const MAX_CLAIM_BATCH: usize = 256;
/// The most reports sent in one batch.
const MAX_REPORT_BATCH: usize = 256;
/// How long a batch waits for attempts still running to join it.
const REPORT_GATHER: Duration = Duration::from_millis(1);
/// How long reports may take after the drain deadline before they are abandoned.
const REPORT_GRACE: Duration = Duration::from_secs(5);
/// Store calls in flight at once when the worker prefetches (without prefetch,
/// one: a second call would only split the batch the first one makes).
const MAX_CALLS_WITH_PREFETCH: usize = 2;

/// A job this worker holds (claimed, report not yet made).
struct Held {
    lease: Lease,
    /// Tells the attempt its lease is gone.
    cancel: watch::Sender<bool>,
    /// Set once the worker learned the lease is gone.
    loss: Option<LeaseLoss>,
    /// The attempt ended (its report is pending or being made): its lease is
    /// no longer checked.
    ended: bool,
}

/// The dispatcher's settings.
pub(crate) struct Settings {
    pub(crate) concurrency: usize,
    /// Jobs claimed beyond the slots, waiting in the local queue.
    pub(crate) prefetch: usize,
    pub(crate) poll: Duration,
    pub(crate) lease_check: Duration,
    pub(crate) drain_timeout: Duration,
}

pub(crate) struct Dispatcher {
    shared: Arc<Shared>,
    /// `None` when the worker has no handlers (it never claims).
    claim: Option<ClaimRequest>,
    settings: Settings,
    held: HashMap<String, Held>,
    reports: mpsc::UnboundedReceiver<Report>,
    /// Finished attempts whose report is not yet sent.
    pending: Vec<Report>,
    /// Store calls in flight.
    calls: JoinSet<Done>,
    /// Of those, the reports and claims (a read of the next due time is not
    /// counted: it never holds up a report).
    busy: usize,
    /// A short claim asked for the next due time to be read.
    read_next_due: bool,
    /// Reports in the batches in flight (their jobs are still held).
    reporting: usize,
    /// Jobs asked for by the claims in flight.
    claiming: usize,
    /// After a failed report: not before this instant, and the next backoff.
    report_retry: Option<(Instant, Duration)>,
    /// Whether the last claim filled every slot it asked for (more is likely due).
    backlog: bool,
    /// Whether there is a reason to claim now.
    want_claim: bool,
    /// When to claim again without any other reason (timer or poll).
    next_claim_at: Instant,
    claim_backoff: Duration,
    next_lease_check: Instant,
    stopping: bool,
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
            settings,
            held: HashMap::new(),
            reports,
            pending: Vec::new(),
            calls: JoinSet::new(),
            busy: 0,
            read_next_due: false,
            reporting: 0,
            claiming: 0,
            report_retry: None,
            backlog: false,
            want_claim: true,
            next_claim_at: now,
            stopping: false,
        }
    }

    /// The most jobs held at once: slots plus prefetch.
    fn capacity(&self) -> usize {
        self.settings
            .concurrency
            .saturating_add(self.settings.prefetch)
    }

    /// How many more jobs may be claimed now: the capacity less the jobs held
    /// (those of report batches in flight count as already given back: a
    /// refill commits with their reports) and those asked for in flight.
    fn free(&self) -> usize {
        let after = self.held.len().saturating_sub(self.reporting) + self.claiming;
        self.capacity().saturating_sub(after)
    }

    /// Whether another store call may be sent now.
    fn may_call(&self) -> bool {
        let max = if self.settings.prefetch > 0 {
            MAX_CALLS_WITH_PREFETCH
        } else {
            1
        };
        self.busy < max
    }

    /// Whether the pending reports make a batch worth a call now: always when
    /// no call is in flight (latency), otherwise once they are a good part
    /// of the capacity: a second call in flight pays for itself only when it
    /// carries enough jobs (a call's fixed cost is most of a small batch's).
    fn batch_ready(&self) -> bool {
        self.busy == 0 || self.pending.len() >= (self.capacity() / 2).min(MAX_REPORT_BATCH)
    }

    /// Takes a finished attempt's report.
    fn received(&mut self, report: Report) {
        if let Some(held) = self.held.get_mut(&report.lease.job_id) {
            held.ended = true;
        }
        self.pending.push(report);
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
        let mut drain_deadline: Option<Instant> = None;
        let mut aborted = false;
        if self.claim.is_none() {
            tracing::info!("no handlers registered; this worker only runs background duties");
        }
        loop {
            if self.stopping && self.held.is_empty() && self.calls.is_empty() {
                break;
            }
            if !self.want_claim && Instant::now() >= self.next_claim_at {
                self.want_claim = true;
            }
            // 1. Reports waiting (and not backing off after an error).
            while let Ok(report) = self.reports.try_recv() {
                self.received(report);
            }
            let retry_ok = self.report_retry.is_none_or(|(at, _)| Instant::now() >= at);
            if !self.pending.is_empty() && retry_ok && self.may_call() && self.batch_ready() {
                self.gather().await;
                self.send_reports().await;
                continue;
            }
            // 2. A lease check that is due.
            if !self.held.is_empty() && Instant::now() >= self.next_lease_check {
                self.check_leases().await;
                continue;
            }
            // 3. A claim that is wanted.
            if self.should_claim() && self.may_call() {
                self.send_claim().await;
                continue;
            }
            // 4. Wait for a reason.
            let now = Instant::now();
            let claim_at = if self.stopping || self.claim.is_none() || self.want_claim {
                now + far
            } else {
                self.next_claim_at
            };
            let check_at = if self.held.is_empty() {
                now + far
            } else {
                self.next_lease_check
            };
            let retry_at = match (self.pending.is_empty(), self.report_retry) {
                (false, Some((at, _))) if self.may_call() => at,
                _ => now + far,
            };
            let drain_at = drain_deadline.unwrap_or(now + far);
            let wake_at = claim_at.min(check_at).min(retry_at);
            tokio::select! {
                biased;
                _ = shutdown.as_mut(), if !self.stopping => {
                    self.stopping = true;
                    self.backlog = false;
                    // Before handlers hear of the shutdown: one that returns
                    // at once must not hand its slot to a waiting job.
                    self.give_back_waiting();
                    stopping_tx.send_replace(true);
                    drain_deadline = Some(Instant::now() + self.settings.drain_timeout);
                    tracing::info!(
                        running = self.held.len(),
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
                        self.received(report);
                    }
                }
                id = cancels.recv(), if cancels_alive => match id {
                    Ok(id) => {
                        if self.held.get(&id).is_some_and(|h| h.loss.is_none()) {
                            self.next_lease_check = Instant::now();
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.next_lease_check = Instant::now();
                    }
                    Err(broadcast::error::RecvError::Closed) => cancels_alive = false,
                },
                changed = signal.changed(), if signal_alive && !self.stopping => {
                    if changed.is_err() {
                        signal_alive = false;
                    } else {
                        self.want_claim = true;
                    }
                }
                _ = tokio::time::sleep_until(drain_at) => {
                    if aborted {
                        let outstanding = self.held.len() as u64;
                        Telemetry::add(&self.shared.telemetry.unreported, outstanding);
                        tracing::error!(
                            outstanding,
                            "reports could not be made; stale recovery will return those jobs"
                        );
                        break;
                    }
                    tracing::warn!(
                        running = self.held.len(),
                        "drain deadline passed; returning running jobs to the queue"
                    );
                    abort_tx.send_replace(true);
                    aborted = true;
                    drain_deadline = Some(Instant::now() + REPORT_GRACE);
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
        !self.stopping && self.claim.is_some() && self.want_claim && self.free() > 0
    }

    /// Takes the reports already waiting; attempts still running (short jobs of
    /// the same claim, typically) join if they end within [`REPORT_GATHER`].
    async fn gather(&mut self) {
        let deadline = Instant::now() + REPORT_GATHER;
        while self.pending.len() < MAX_REPORT_BATCH {
            match self.reports.try_recv() {
                Ok(r) => self.received(r),
                // With prefetch attempts run all the time, and the batches
                // form by themselves while the calls in flight commit.
                Err(_)
                    if self.settings.prefetch == 0
                        && self.shared.running.load(Ordering::SeqCst) > 0 =>
                {
                    match tokio::time::timeout_at(deadline, self.reports.recv()).await {
                        Ok(Some(r)) => self.received(r),
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
        let take = self.pending.len().min(MAX_REPORT_BATCH);
        let batch: Vec<Report> = self.pending.drain(..take).collect();
        self.reporting += take;
        // The claim that refills the slots this batch frees (and any free ones).
        let refill = match &self.claim {
            Some(template) if self.backlog && !self.stopping && self.free() > 0 => {
                Some(ClaimRequest {
                    limit: self.free().min(MAX_CLAIM_BATCH),
                    ..template.clone()
                })
            }
            _ => None,
        };
        self.claiming += refill.as_ref().map_or(0, |r| r.limit);
        let store = self.shared.store.clone();
        self.make(calls::report(store, batch, refill)).await;
    }

    /// Sends a plain claim for the free slots.
    async fn send_claim(&mut self) {
        let Some(template) = &self.claim else {
            return;
        };
        let req = ClaimRequest {
            limit: self.free().min(MAX_CLAIM_BATCH),
            ..template.clone()
        };
        self.claiming += req.limit;
        self.make(calls::claim(self.shared.store.clone(), req))
            .await;
    }

    /// Makes a report or claim call: awaited here without prefetch (one call
    /// at a time, and no task hop between a claim and its jobs' start), on a
    /// task of its own with prefetch (its result comes back through `calls`).
    async fn make(&mut self, call: impl Future<Output = Done> + Send + 'static) {
        self.busy += 1;
        if self.settings.prefetch == 0 {
            let done = call.await;
            self.finish_call(done);
            self.next_due().await;
        } else {
            self.calls.spawn(call);
        }
    }

    /// Applies a finished store call to the jobs held.
    fn finish_call(&mut self, done: Done) {
        match done {
            Done::Reported {
                batch,
                asked,
                results,
                claimed,
            } => {
                self.busy -= 1;
                self.reporting -= batch.len();
                self.claiming -= asked;
                self.reported(batch, results);
                if let Some(jobs) = claimed {
                    self.backlog = jobs.len() == asked;
                    self.start(jobs, asked);
                }
                // Slots freed: they may release a queue cap, so claim again.
                self.want_claim = true;
            }
            Done::Claimed { asked, result } => {
                self.busy -= 1;
                self.claiming -= asked;
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

    /// The results of a report batch.
    fn reported(&mut self, mut batch: Vec<Report>, results: crate::Result<Vec<bool>>) {
        let results = match results {
            Ok(results) => results,
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
                // Back to the front, in their order, for the retry.
                batch.append(&mut self.pending);
                self.pending = batch;
                return;
            }
        };
        self.report_retry = None;
        let lost = results.iter().filter(|ok| !**ok).count();
        tracing::debug!(count = batch.len(), lost, "reported");
        for (i, report) in batch.into_iter().enumerate() {
            let accepted = results.get(i).copied().unwrap_or(false);
            let loss = self.held.remove(&report.lease.job_id).and_then(|h| h.loss);
            finished(&self.shared.telemetry, &report, accepted, loss);
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
        self.backlog = got == asked;
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
    /// it: awaited here without prefetch (so the loop claims no faster than it
    /// did before prefetch existed), on a task with prefetch.
    async fn next_due(&mut self) {
        if !std::mem::take(&mut self.read_next_due) {
            return;
        }
        let Some(template) = &self.claim else {
            return;
        };
        let (store, clock) = (self.shared.store.clone(), self.shared.clock.clone());
        let call = calls::next_due(store, clock, template.clone());
        if self.settings.prefetch == 0 {
            let done = call.await;
            self.finish_call(done);
        } else {
            self.calls.spawn(call);
        }
    }

    /// Shutdown: the jobs claimed ahead that have not started go back to the
    /// queue unstarted (reported with the next batch).
    fn give_back_waiting(&mut self) {
        let waiting = self.shared.local.take_waiting();
        if waiting.is_empty() {
            return;
        }
        tracing::info!(
            count = waiting.len(),
            "giving back jobs claimed ahead that did not start"
        );
        self.pending
            .extend(waiting.iter().filter_map(Report::unstarted));
    }

    /// Holds claimed `jobs` (of a claim that asked for `asked`) and hands them
    /// to the local queue, which starts those that have a slot. (While another
    /// call reports, the jobs held may exceed the capacity by the jobs of that
    /// report: the claim counted them as given back, see [`Self::free`].)
    fn start(&mut self, mut jobs: Vec<Job>, asked: usize) {
        if jobs.len() > asked {
            tracing::error!(
                asked,
                got = jobs.len(),
                "the store returned more jobs than asked for; ignoring the rest"
            );
            jobs.truncate(asked);
        }
        let got = jobs.len();
        if got == 0 {
            return;
        }
        Telemetry::add(&self.shared.telemetry.claimed, got as u64);
        tracing::debug!(count = got, "claimed jobs");
        self.shared
            .telemetry
            .emit(WorkerEvent::Claimed { count: got });
        let mut admitted: Vec<Waiting> = Vec::with_capacity(got);
        for job in jobs {
            let Some(lease) = job.lease() else {
                tracing::error!(job_id = %job.id, "claimed job has no lease; skipping it");
                continue;
            };
            let (cancel, cancel_rx) = watch::channel(false);
            self.held.insert(
                lease.job_id.clone(),
                Held {
                    lease,
                    cancel,
                    loss: None,
                    ended: false,
                },
            );
            admitted.push((job, cancel_rx));
        }
        for (job, cancel) in self.shared.local.push(admitted) {
            spawn_attempt(self.shared.clone(), job, cancel);
        }
        if self.held.len() == got {
            // The first jobs held: the lease check starts one interval from now.
            self.next_lease_check = Instant::now() + self.settings.lease_check;
        }
    }

    /// Asks the store which held leases are gone and tells their attempts.
    async fn check_leases(&mut self) {
        self.next_lease_check = Instant::now() + self.settings.lease_check;
        let leases: Vec<Lease> = self
            .held
            .values()
            .filter(|h| h.loss.is_none() && !h.ended)
            .map(|h| h.lease.clone())
            .collect();
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
        for LostLease { lease, loss } in lost {
            let Some(held) = self.held.get_mut(&lease.job_id) else {
                continue;
            };
            if held.lease != lease || held.loss.is_some() {
                continue;
            }
            if self.shared.local.remove(&lease.job_id) {
                // Claimed ahead and not started: nothing runs, nothing to report.
                self.held.remove(&lease.job_id);
                tracing::info!(
                    job_id = %lease.job_id,
                    ?loss,
                    "the lease of a job waiting for a slot is gone; it will not start"
                );
                self.shared.telemetry.emit(WorkerEvent::LeaseLost {
                    job_id: lease.job_id.clone(),
                    loss,
                });
                continue;
            }
            held.loss = Some(loss);
            held.cancel.send_replace(true);
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
            self.shared.telemetry.emit(WorkerEvent::LeaseLost {
                job_id: lease.job_id.clone(),
                loss,
            });
        }
    }
}

/// Counts and announces one reported attempt.
fn finished(telemetry: &Telemetry, report: &Report, accepted: bool, loss: Option<LeaseLoss>) {
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
