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
//! A job holds its slot from its claim until its report is made, so the worker
//! never holds more jobs than slots, whatever wakes it. Store calls are awaited
//! one at a time: attempts go on running meanwhile and their reports queue up
//! for the next batch, so under a backlog the batches (and their refills) grow
//! with the store's commit time by themselves; with no backlog a claim is made
//! at once, so latency is untouched.
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
use tokio::time::Instant;

use super::events::{JobFinished, Telemetry, WorkerEvent};
use super::execute::{spawn_attempt, Report, Shared};
use crate::job::{Job, Lease};
use crate::requests::{ClaimRequest, LeaseLoss, LostLease, Outcome};

/// The most jobs asked for in one claim.
const MAX_CLAIM_BATCH: usize = 256;
/// The most reports sent in one batch.
const MAX_REPORT_BATCH: usize = 256;
/// How long a batch waits for attempts still running to join it.
const REPORT_GATHER: Duration = Duration::from_millis(1);
/// How long reports may take after the drain deadline before they are abandoned.
const REPORT_GRACE: Duration = Duration::from_secs(5);

/// A job this worker holds (claimed, report not yet made).
struct Held {
    lease: Lease,
    /// Tells the attempt its lease is gone.
    cancel: watch::Sender<bool>,
    /// Set once the worker learned the lease is gone.
    loss: Option<LeaseLoss>,
}

/// The dispatcher's settings.
pub(crate) struct Settings {
    pub(crate) concurrency: usize,
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
    /// Finished attempts whose report is not yet made.
    pending: Vec<Report>,
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
            report_retry: None,
            backlog: false,
            want_claim: true,
            next_claim_at: now,
            stopping: false,
        }
    }

    /// Free slots.
    fn free(&self) -> usize {
        self.settings.concurrency.saturating_sub(self.held.len())
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
            if self.stopping && self.held.is_empty() {
                break;
            }
            if !self.want_claim && Instant::now() >= self.next_claim_at {
                self.want_claim = true;
            }
            // 1. Reports waiting (and not backing off after an error).
            self.pending
                .extend(std::iter::from_fn(|| self.reports.try_recv().ok()));
            let retry_ok = self.report_retry.is_none_or(|(at, _)| Instant::now() >= at);
            if !self.pending.is_empty() && retry_ok {
                self.gather().await;
                self.report().await;
                continue;
            }
            // 2. A lease check that is due.
            if !self.held.is_empty() && Instant::now() >= self.next_lease_check {
                self.check_leases().await;
                continue;
            }
            // 3. A claim that is wanted.
            if self.should_claim() {
                self.claim_now().await;
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
                (false, Some((at, _))) => at,
                _ => now + far,
            };
            let drain_at = drain_deadline.unwrap_or(now + far);
            let wake_at = claim_at.min(check_at).min(retry_at);
            tokio::select! {
                biased;
                _ = shutdown.as_mut(), if !self.stopping => {
                    self.stopping = true;
                    self.backlog = false;
                    stopping_tx.send_replace(true);
                    drain_deadline = Some(Instant::now() + self.settings.drain_timeout);
                    tracing::info!(
                        running = self.held.len(),
                        deadline = ?self.settings.drain_timeout,
                        "shutting down: draining"
                    );
                }
                report = self.reports.recv() => {
                    if let Some(report) = report {
                        self.pending.push(report);
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
                Ok(r) => self.pending.push(r),
                Err(_) if self.shared.running.load(Ordering::SeqCst) > 0 => {
                    match tokio::time::timeout_at(deadline, self.reports.recv()).await {
                        Ok(Some(r)) => self.pending.push(r),
                        _ => break,
                    }
                }
                Err(_) => break,
            }
        }
    }

    /// Reports one batch; with a backlog, refills the slots in the same call.
    async fn report(&mut self) {
        let take = self.pending.len().min(MAX_REPORT_BATCH);
        let items: Vec<(Lease, Outcome)> = self.pending[..take]
            .iter()
            .map(|r| (r.lease.clone(), r.outcome.clone()))
            .collect();
        // The claim that refills the slots this batch frees (and any free ones).
        let refill = match &self.claim {
            Some(template) if self.backlog && !self.stopping => Some(ClaimRequest {
                limit: (self.free() + take).min(MAX_CLAIM_BATCH),
                ..template.clone()
            }),
            _ => None,
        };
        let store = self.shared.store.clone();
        let mut claimed: Option<(usize, Vec<Job>)> = None;
        let mut results = None;
        if let Some(req) = refill {
            match store.report_and_claim(items.clone(), &req).await {
                Ok(done) => {
                    results = Some(done.reported);
                    claimed = Some((req.limit, done.claimed));
                }
                Err(e) => tracing::warn!(
                    count = take,
                    "reporting with a refill failed; reporting alone: {e}"
                ),
            }
        }
        let results = match results {
            Some(r) => r,
            None => match store.report_batch(items).await {
                Ok(r) => r,
                Err(e) => {
                    let backoff = self
                        .report_retry
                        .map_or(Duration::from_millis(100), |(_, b)| {
                            (b * 2).min(Duration::from_secs(5))
                        });
                    tracing::warn!(
                        count = take,
                        "reporting failed, retrying in {backoff:?}: {e}"
                    );
                    self.report_retry = Some((Instant::now() + backoff, backoff));
                    return;
                }
            },
        };
        self.report_retry = None;
        let lost = results.iter().filter(|ok| !**ok).count();
        tracing::debug!(count = take, lost, "reported");
        for (i, report) in self.pending.drain(..take).enumerate() {
            let accepted = results.get(i).copied().unwrap_or(false);
            let loss = self.held.remove(&report.lease.job_id).and_then(|h| h.loss);
            finished(&self.shared.telemetry, &report, accepted, loss);
        }
        // Slots freed: they may release a queue cap, so claim again (unless
        // this call already refilled them).
        match claimed {
            Some((asked, jobs)) => {
                self.backlog = jobs.len() == asked;
                self.start(jobs);
                self.want_claim = true;
            }
            None => self.want_claim = true,
        }
    }

    /// A plain claim for the free slots.
    async fn claim_now(&mut self) {
        let Some(template) = &self.claim else {
            return;
        };
        let wanted = self.free().min(MAX_CLAIM_BATCH);
        let req = ClaimRequest {
            limit: wanted,
            ..template.clone()
        };
        let store = self.shared.store.clone();
        let jobs = match store.claim(&req).await {
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
        self.backlog = got == wanted;
        self.start(jobs);
        if got == wanted {
            return; // maybe more is due: want_claim stays
        }
        // Idle: claim again at the earliest future job, the poll, or a signal.
        self.want_claim = false;
        let now_ms = self.shared.clock.now_ms();
        let next = match store
            .next_scheduled_at(&req.job_names, req.queues.as_deref())
            .await
        {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!("next_scheduled_at failed: {e}");
                None
            }
        };
        let poll = self.settings.poll;
        let wait = match next {
            Some(at) if at > now_ms => poll.min(Duration::from_millis((at - now_ms) as u64)),
            _ => poll,
        };
        self.next_claim_at = Instant::now() + wait;
    }

    /// Starts claimed `jobs`, each holding one slot.
    fn start(&mut self, jobs: Vec<Job>) {
        let got = jobs.len();
        if got == 0 {
            return;
        }
        Telemetry::add(&self.shared.telemetry.claimed, got as u64);
        tracing::debug!(count = got, "claimed jobs");
        self.shared
            .telemetry
            .emit(WorkerEvent::Claimed { count: got });
        for job in jobs {
            let Some(lease) = job.lease() else {
                tracing::error!(job_id = %job.id, "claimed job has no lease; skipping it");
                continue;
            };
            if self.held.len() >= self.settings.concurrency {
                tracing::error!("the store returned more jobs than asked for; ignoring the rest");
                return;
            }
            let (cancel, cancel_rx) = watch::channel(false);
            self.held.insert(
                lease.job_id.clone(),
                Held {
                    lease,
                    cancel,
                    loss: None,
                },
            );
            spawn_attempt(self.shared.clone(), job, cancel_rx);
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
            .filter(|h| h.loss.is_none())
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
