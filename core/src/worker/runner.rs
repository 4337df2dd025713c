//! The claim loop and the graceful drain.
//!
//! Slot admission is a semaphore with one permit per slot: the loop reserves
//! permits *before* claiming (waiting for at least one, taking every other free
//! one), claims at most that many jobs, and gives the unused permits straight back.
//! A permit travels with its job until the job's report is made, so the worker
//! never holds more jobs than slots, whatever wakes it. While the queue has a
//! backlog (the last claim filled every slot it asked for), the loop gathers
//! slots until half of them are free or no report is outstanding, so a drain
//! claims in large batches instead of one commit per handful of jobs; with no
//! backlog it claims at once, so latency is untouched. (With a backlog the
//! reporter also refills the slots of each report batch itself: see
//! [`super::reporter`].)
//!
//! When idle, the loop sleeps until the first of: the store's work signal, a slot
//! of its own freeing up (it may release a queue cap), the earliest future
//! `scheduledAtMs` among its jobs, or the fallback poll interval — never a busy loop.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::events::{Telemetry, WorkerReport};
use super::execute::{InFlight, Shared};
use super::handle::Worker;
use super::maintenance::{heartbeat_loop, recover_once, recovery_loop};
use super::periodic::run_periodic;
use super::reporter::{reporter, start_claimed};
use super::retention::run_retention;
use super::WorkerError;
use crate::requests::ClaimRequest;

/// The most jobs asked for in one claim.
const MAX_CLAIM_BATCH: usize = 256;
/// How long reports may take after the drain deadline before they are abandoned.
const REPORT_GRACE: Duration = Duration::from_secs(5);

pub(crate) async fn run<F>(worker: Worker, shutdown: F) -> Result<WorkerReport, WorkerError>
where
    F: Future<Output = ()> + Send,
{
    let span = tracing::info_span!("worker", worker_id = %worker.config.worker_id);
    run_inner(worker, shutdown).instrument(span).await
}

async fn run_inner<F>(worker: Worker, shutdown: F) -> Result<WorkerReport, WorkerError>
where
    F: Future<Output = ()> + Send,
{
    let Worker {
        store,
        registry,
        clock,
        events,
        config,
    } = worker;
    let telemetry = Arc::new(Telemetry::new(events));
    let worker_id: Arc<str> = Arc::from(config.worker_id.as_str());

    // Startup: repair reservation counts a crash may have left, register (liveness
    // and what this process handles, for `duraq workers`), and recover whatever
    // dead workers left behind.
    let fixed = store.reconcile_reservations().await?;
    if fixed > 0 {
        tracing::info!(keys = fixed, "reconciled concurrency reservations");
    }
    let info = crate::workers::WorkerInfo {
        worker_id: config.worker_id.clone(),
        host: crate::workers::this_host(),
        pid: std::process::id(),
        queues: config.queues.clone(),
        job_names: registry.names(),
        slots: config.concurrency as u64,
    };
    store.register_worker(&info).await?;
    recover_once(store.as_ref(), config.stale_after, &telemetry).await;

    let (stopping_tx, stopping) = watch::channel(false);
    let (abort_tx, abort) = watch::channel(false);
    let mut background = JoinSet::new();
    background.spawn(
        heartbeat_loop(
            store.clone(),
            config.worker_id.clone(),
            config.heartbeat_interval,
        )
        .in_current_span(),
    );
    background.spawn(
        recovery_loop(
            store.clone(),
            config.stale_after,
            config.recovery_interval,
            telemetry.clone(),
        )
        .in_current_span(),
    );
    for job in config.periodic.iter().cloned() {
        let task = run_periodic(
            job,
            store.clone(),
            clock.clone(),
            telemetry.clone(),
            stopping.clone(),
        );
        background.spawn(task.in_current_span());
    }
    if let Some(policy) = config.retention.clone() {
        background.spawn(
            run_retention(policy, store.clone(), telemetry.clone(), stopping.clone())
                .in_current_span(),
        );
    }

    let (reports, reports_rx) = mpsc::unbounded_channel();
    let freed = Arc::new(Notify::new());
    let in_flight = Arc::new(InFlight::default());

    let slots = Arc::new(Semaphore::new(config.concurrency));
    let claim = ClaimRequest {
        worker_id: config.worker_id.clone(),
        job_names: registry.names(),
        queues: config.queues.clone(),
        queue_config: config.queue_config.clone(),
        limit: 0,
    };
    let shared = Arc::new(Shared {
        store: store.clone(),
        registry,
        clock: clock.clone(),
        telemetry: telemetry.clone(),
        worker_id,
        job_timeout: config.job_timeout,
        stopping,
        abort,
        reports,
        in_flight,
        refill: (!claim.job_names.is_empty()).then(|| claim.clone()),
        backlog: AtomicBool::new(false),
    });
    background
        .spawn(reporter(Arc::downgrade(&shared), reports_rx, freed.clone()).in_current_span());
    tracing::info!(
        concurrency = config.concurrency,
        handlers = ?claim.job_names,
        queues = ?claim.queues,
        "worker started"
    );

    let mut shutdown = std::pin::pin!(shutdown);
    claim_loop(
        &shared,
        claim,
        &slots,
        &freed,
        config.poll_interval,
        &mut shutdown,
    )
    .await;

    // Graceful drain: stop claiming (done, and no more refills by the reporter),
    // let running jobs finish and report.
    shared.backlog.store(false, Ordering::SeqCst);
    stopping_tx.send_replace(true);
    let all = config.concurrency as u32;
    let running = config.concurrency - slots.available_permits();
    tracing::info!(running, deadline = ?config.drain_timeout, "shutting down: draining");
    if tokio::time::timeout(config.drain_timeout, slots.acquire_many(all))
        .await
        .is_err()
    {
        let running = config.concurrency - slots.available_permits();
        tracing::warn!(
            running,
            "drain deadline passed; returning running jobs to the queue"
        );
        abort_tx.send_replace(true);
        if tokio::time::timeout(REPORT_GRACE, slots.acquire_many(all))
            .await
            .is_err()
        {
            let outstanding = (config.concurrency - slots.available_permits()) as u64;
            Telemetry::add(&telemetry.unreported, outstanding);
            tracing::error!(
                outstanding,
                "reports could not be made; stale recovery will return those jobs"
            );
        }
    }
    // Stop the helpers (reporter, heartbeats, recovery, periodic, retention) and
    // wait until they are gone, so that the event broadcast closes when `run`
    // returns. (Dropping `run` early aborts them too: the JoinSet owns them.)
    background.abort_all();
    while background.join_next().await.is_some() {}
    drop(shared);
    // Gone from `duraq workers` (and any lease left unreported is recoverable now).
    if let Err(e) = store.remove_worker(&config.worker_id).await {
        tracing::warn!("removing the worker's registration failed: {e}");
    }
    // The last reports' announcements must leave before the process may exit.
    if let Err(e) = store.flush_announcements().await {
        tracing::warn!("flushing announcements failed: {e}");
    }
    let report = telemetry.snapshot();
    tracing::info!(?report, "worker stopped");
    Ok(report)
}

/// Moves every free slot (up to [`MAX_CLAIM_BATCH`]) into `permits`.
fn take_free_slots(slots: &Arc<Semaphore>, permits: &mut Vec<OwnedSemaphorePermit>) {
    while permits.len() < MAX_CLAIM_BATCH {
        match slots.clone().try_acquire_owned() {
            Ok(p) => permits.push(p),
            Err(_) => break,
        }
    }
}

/// Claims and starts jobs until `shutdown` resolves.
async fn claim_loop<F: Future<Output = ()>>(
    shared: &Arc<Shared>,
    mut claim: ClaimRequest,
    slots: &Arc<Semaphore>,
    freed: &Notify,
    poll: Duration,
    shutdown: &mut std::pin::Pin<&mut F>,
) {
    let store = shared.store.clone();
    if claim.job_names.is_empty() {
        tracing::info!("no handlers registered; this worker only runs background duties");
        shutdown.await;
        return;
    }
    let mut signal = store.work_signal();
    let mut signal_alive = true;
    let mut error_backoff = poll;
    let gather_target = (slots.available_permits() / 2).clamp(1, MAX_CLAIM_BATCH);
    loop {
        // Reserve at least one slot, then every other free one.
        let first = tokio::select! {
            biased;
            _ = shutdown.as_mut() => return,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let mut permits: Vec<OwnedSemaphorePermit> = vec![first];
        take_free_slots(slots, &mut permits);
        // With a backlog, a claim for a few slots while reports that free many
        // more are already on their way costs a commit per handful of jobs:
        // gather until half the slots are ours or no report is outstanding.
        while shared.backlog.load(Ordering::SeqCst)
            && permits.len() < gather_target
            && shared.in_flight.awaiting_report.load(Ordering::SeqCst) > 0
        {
            tokio::select! {
                biased;
                _ = shutdown.as_mut() => return,
                _ = freed.notified() => {}
            }
            take_free_slots(slots, &mut permits);
        }
        signal.borrow_and_update();
        claim.limit = permits.len();
        let wanted = permits.len();
        let jobs = match store.claim(&claim).await {
            Ok(jobs) => {
                error_backoff = poll;
                jobs
            }
            Err(e) => {
                drop(permits);
                tracing::warn!("claim failed, retrying in {error_backoff:?}: {e}");
                tokio::select! {
                    biased;
                    _ = shutdown.as_mut() => return,
                    _ = tokio::time::sleep(error_backoff) => {}
                }
                error_backoff = (error_backoff * 2).min(Duration::from_secs(30));
                continue;
            }
        };
        let got = jobs.len();
        shared.backlog.store(got == wanted, Ordering::SeqCst);
        start_claimed(shared, jobs, &mut permits);
        drop(permits); // give back the slots the claim did not fill
        if got == wanted {
            continue; // maybe more is due
        }

        // Idle: wait for a reason to claim again.
        let now = shared.clock.now_ms();
        let next = match store
            .next_scheduled_at(&claim.job_names, claim.queues.as_deref())
            .await
        {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!("next_scheduled_at failed: {e}");
                None
            }
        };
        let wait = match next {
            Some(at) if at > now => poll.min(Duration::from_millis((at - now) as u64)),
            _ => poll,
        };
        tokio::select! {
            biased;
            _ = shutdown.as_mut() => return,
            changed = signal.changed(), if signal_alive => {
                if changed.is_err() {
                    signal_alive = false;
                }
            }
            _ = freed.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}
