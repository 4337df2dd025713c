//! One attempt, from start to report. Each handler runs on its own tokio task so
//! that a panic unwinds only that task (a failed attempt, never a dead worker) and
//! a timeout, a cancellation's grace period or the drain deadline can abort it. The
//! outcome goes to the dispatcher ([`super::dispatcher`]), which sends reports in
//! batches, fenced by each job's lease. The dispatcher never holds more
//! `handed_off` jobs than its slots plus its prefetch, and the local queue
//! ([`super::local_queue`]) never runs more attempts at once than its slots.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use super::events::{JobStarted, Telemetry, WorkerEvent};
use super::handler::{attempt_number, duration_ms, failed, outcome_of, JobContext};
use super::local_queue::LocalQueue;
use super::progress_sink::ProgressSink;
use super::registry::Registry;
use crate::clock::Clock;
use crate::job::{Job, Lease};
use crate::requests::Outcome;
use crate::store::Store;

/// What every attempt of one worker shares.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) registry: Registry,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) telemetry: Arc<Telemetry>,
    pub(crate) worker_id: Arc<str>,
    pub(crate) job_timeout: Option<Duration>,
    /// How long a cancelled attempt may run on before it is aborted.
    pub(crate) cancel_grace: Duration,
    /// Turns true when the graceful shutdown begins.
    pub(crate) stopping: watch::Receiver<bool>,
    /// Turns true at the drain deadline: running attempts are given back.
    pub(crate) abort: watch::Receiver<bool>,
    pub(crate) reports: mpsc::UnboundedSender<Report>,
    /// Claimed jobs waiting for a slot, and the attempts executing (the one
    /// count of what is running).
    pub(crate) local: LocalQueue,
}

/// A finished attempt waiting to be reported.
pub(crate) struct Report {
    pub(crate) lease: Lease,
    pub(crate) outcome: Outcome,
    pub(crate) job_name: String,
    pub(crate) queue: String,
    pub(crate) attempt: i64,
    /// Whether a failure of this attempt re-queues the job (a retry) or fails
    /// it for good; for the worker's totals only (the store decides).
    pub(crate) retries_left: bool,
    pub(crate) duration: Duration,
    /// Whether the runtime aborted the handler because it outlived the grace
    /// period after a cancellation.
    pub(crate) aborted_after_cancel: bool,
    /// Whether the attempt began (false: a job claimed ahead and given back
    /// unstarted at shutdown).
    pub(crate) started: bool,
    /// How a store reported the attempt on the handler's own transaction, if
    /// it did ([`crate::driver::note_reported_in_transaction`]).
    pub(crate) in_transaction: Option<Outcome>,
}

impl Report {
    /// The report that gives back a claimed job that never started: `queued`
    /// again, its attempt not counted ([`Outcome::ReturnToQueue`]).
    pub(crate) fn unstarted(job: &Job) -> Option<Self> {
        Some(Self {
            lease: job.lease()?,
            outcome: Outcome::ReturnToQueue,
            job_name: job.job_name.clone(),
            queue: job.queue.clone(),
            attempt: job.attempts,
            retries_left: job.retries_left(),
            duration: Duration::ZERO,
            aborted_after_cancel: false,
            started: false,
            in_transaction: None,
        })
    }
}

/// Starts the attempt of a claimed `job` that holds a slot of the local queue;
/// `cancel` turns true when the dispatcher learns the job's lease is gone
/// (cancelled or lost). When it ends, the same task runs the next job waiting
/// in the local queue, if any, so the slot passes on without the dispatcher.
/// The slot is passed on (or freed) before the report is sent, so the local
/// queue's executing count never includes an attempt whose report the
/// dispatcher may already have.
pub(crate) fn spawn_attempt(shared: Arc<Shared>, job: Job, cancel: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let mut next = Some((job, cancel));
        while let Some((job, cancel)) = next {
            // With the `otel` feature the span links to the job's stored trace
            // context and carries the outcome (`crate::trace`).
            let span = crate::trace::attempt_span(&job);
            let report = supervise(shared.clone(), job, cancel)
                .instrument(span.clone())
                .await;
            crate::trace::record_outcome(&span, &report.outcome);
            drop(span);
            next = shared.local.next_after();
            if shared.reports.send(report).is_err() {
                tracing::error!("the dispatcher is gone; the attempt's report is dropped");
            }
        }
    });
}

/// Runs one attempt to its end; returns its report.
async fn supervise(shared: Arc<Shared>, job: Job, cancel: watch::Receiver<bool>) -> Report {
    let lease = job.lease().unwrap_or_else(|| crate::job::Lease {
        // The dispatcher admits only leased jobs; an unleased one reports
        // under an empty lease, which the store refuses.
        job_id: job.id.clone(),
        handoff_id: String::new(),
    });
    let attempt = job.attempts;
    // `attempts` already counts this attempt: a failure re-queues the job only
    // while it stays within `maxRetries` retries.
    let retries_left = job.retries_left();
    let latency_ms = (shared.clock.now_ms() - job.scheduled_at_ms.max(job.created_at_ms)).max(0);
    tracing::debug!(latency_ms, "job started");
    shared.telemetry.emit(WorkerEvent::Started(JobStarted {
        job_id: job.id.clone(),
        job_name: job.job_name.clone(),
        queue: job.queue.clone(),
        attempt,
        latency_ms,
    }));
    let timeout = match job.timeout_ms {
        Some(ms) => Some(Duration::from_millis(ms.max(1) as u64)),
        None => shared.job_timeout,
    };
    let (job_name, queue) = (job.job_name.clone(), job.queue.clone());
    let started = Instant::now();
    let mut aborted_after_cancel = false;
    let reported: Arc<std::sync::Mutex<Option<Outcome>>> = Arc::default();
    let outcome = match shared.registry.get(&job.job_name).cloned() {
        None => failed(
            format!("no handler for {job_name} on worker {}", shared.worker_id),
            None,
            false,
        ),
        Some(entry) => {
            let progress = ProgressSink::new(
                shared.store.clone(),
                shared.clock.clone(),
                lease.clone(),
                attempt,
            );
            let ctx = JobContext {
                job: Arc::new(job),
                worker_id: shared.worker_id.clone(),
                store: shared.store.clone(),
                clock: shared.clock.clone(),
                stopping: shared.stopping.clone(),
                cancel: cancel.clone(),
                progress: progress.clone(),
                reported: reported.clone(),
                journal: Arc::default(),
            };
            let handler = entry.handler.clone();
            let mut task = tokio::spawn(
                async move {
                    let args = ctx.job.args.clone();
                    handler.perform(&ctx, args).await
                }
                .in_current_span(),
            );
            let attempt = attempt_number(attempt);
            let mut abort = shared.abort.clone();
            let mut cancel = cancel;
            let grace = shared.cancel_grace;
            let outcome = tokio::select! {
                biased;
                joined = &mut task => match joined {
                    Ok(result) => outcome_of(result, attempt, &|a| entry.backoff(a)),
                    Err(e) if e.is_panic() => {
                        let message = panic_message(e.into_panic());
                        failed(format!("panic: {message}"), entry.backoff(attempt), false)
                    }
                    Err(e) => failed(format!("handler task ended: {e}"), entry.backoff(attempt), false),
                },
                _ = sleep_for(timeout) => {
                    task.abort();
                    let ms = timeout.map(duration_ms).unwrap_or_default();
                    failed(format!("timeout: attempt exceeded {ms} ms"), entry.backoff(attempt), false)
                }
                _ = turned_true(&mut abort) => {
                    task.abort();
                    Outcome::ReturnToQueue
                }
                _ = async { turned_true(&mut cancel).await; tokio::time::sleep(grace).await } => {
                    task.abort();
                    aborted_after_cancel = true;
                    tracing::warn!(
                        job_id = %lease.job_id,
                        grace = ?grace,
                        "cancelled handler did not return within the grace period; aborted"
                    );
                    // Refused by the store (the lease is gone); said for the record.
                    failed("cancelled: aborted after the grace period".to_owned(), None, true)
                }
            };
            // What the attempt said is stored before its outcome is reported.
            progress.finish().await;
            outcome
        }
    };
    let duration = started.elapsed();
    let in_transaction = reported
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match &outcome {
        // At `warn` the job's (info) span may be filtered out, so the event
        // names the job itself.
        Outcome::Failed { error, .. } => tracing::warn!(
            job_id = %lease.job_id,
            job_name = %job_name,
            attempt,
            ?duration,
            error = %error,
            "attempt failed"
        ),
        other => tracing::debug!(?duration, outcome = ?other, "attempt ended"),
    }
    Report {
        lease,
        outcome,
        job_name,
        queue,
        attempt,
        retries_left,
        duration,
        aborted_after_cancel,
        started: true,
        in_transaction,
    }
}

async fn sleep_for(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Resolves when `rx` turns true; never if its sender goes away first.
pub(crate) async fn turned_true(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(s) => (*s).to_owned(),
            Err(_) => "(non-string panic payload)".to_owned(),
        },
    }
}
