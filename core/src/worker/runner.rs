//! Running a worker: startup (reservation repair, a heartbeat, one recovery
//! pass), the background duties (heartbeats, recovery, the release backlog,
//! periodic schedules, retention), the dispatcher that owns the slots ([`super::dispatcher`]) and,
//! once it has drained, their shutdown. The store itself is left open: it
//! belongs to the caller, who closes it ([`crate::Producer::close`]) when the
//! process is done with it.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::config::WorkerConfig;
use super::dispatcher::{Dispatcher, Settings};
use super::events::{Telemetry, WorkerEvent, WorkerReport};
use super::execute::Shared;
use super::local_queue::LocalQueue;
use super::maintenance::{
    heartbeat_loop, history_loop, recover_once, recovery_loop, upkeep_loop, upkeep_once,
};
use super::periodic::run_periodic;
use super::registry::Registry;
use super::release::release_backlog_loop;
use super::retention::run_retention;
use super::WorkerError;
use crate::clock::Clock;
use crate::requests::ClaimRequest;
use crate::steps::Turns;
use crate::store::Store;

/// Runs a built worker (its parts, as [`super::handle::Worker::run`] hands
/// them over, inside its span) until `shutdown` resolves and the drain ends.
pub(crate) async fn run<F>(
    store: Arc<dyn Store>,
    registry: Registry,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<WorkerEvent>,
    config: WorkerConfig,
    shutdown: F,
) -> Result<WorkerReport, WorkerError>
where
    F: Future<Output = ()> + Send,
{
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
    let upkeep_wanted = upkeep_once(store.as_ref()).await;

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
    background.spawn(history_loop(store.clone()).in_current_span());
    if !config.aging.is_empty() {
        let aging = super::aging::aging_loop(
            store.clone(),
            clock.clone(),
            config.aging.clone(),
            config.recovery_interval,
        );
        background.spawn(aging.in_current_span());
    }
    background
        .spawn(release_backlog_loop(store.clone(), config.recovery_interval).in_current_span());
    if upkeep_wanted {
        background.spawn(upkeep_loop(store.clone()).in_current_span());
    }
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
    let claim = ClaimRequest {
        worker_id: config.worker_id.clone(),
        job_names: registry.names(),
        queues: config.queues.clone(),
        queue_config: config.queue_config.clone(),
        limit: 0,
        turns: Turns {
            after: None,
            weights: config.fairness_weights.clone(),
        },
    };
    let shared = Arc::new(Shared {
        store: store.clone(),
        registry,
        clock: clock.clone(),
        telemetry: telemetry.clone(),
        worker_id,
        job_timeout: config.job_timeout,
        cancel_grace: config.cancel_grace,
        stopping,
        abort,
        reports,
        local: LocalQueue::new(config.concurrency),
    });
    tracing::info!(
        concurrency = config.concurrency,
        handlers = ?claim.job_names,
        queues = ?claim.queues,
        "worker started"
    );
    let claim = (!claim.job_names.is_empty()).then_some(claim);
    let dispatcher = Dispatcher::new(
        shared.clone(),
        claim,
        Settings {
            concurrency: config.concurrency,
            prefetch: config.prefetch,
            poll: config.poll_interval,
            lease_check: config.lease_check_interval,
            drain_timeout: config.drain_timeout,
        },
        reports_rx,
    );
    // The dispatcher runs on a task of its own: attempts' reports then wake it
    // through the scheduler, not through the thread that polls `run` (often a
    // runtime's `block_on`, where every wake-up is a cross-thread unpark; that
    // cost a 1-worker drain about a tenth of its speed). The caller's shutdown
    // future is forwarded to it; dropping `run` aborts it with the JoinSet.
    let (shutdown_tx, mut shutdown_rx) = watch::channel(false);
    let mut dispatch = JoinSet::new();
    dispatch.spawn(
        async move {
            let shutdown = async move {
                let _ = shutdown_rx.wait_for(|s| *s).await;
            };
            dispatcher.run(shutdown, &stopping_tx, &abort_tx).await;
            (stopping_tx, abort_tx)
        }
        .in_current_span(),
    );
    let forward = async move {
        shutdown.await;
        shutdown_tx.send_replace(true);
        // Keeps the sender (the dispatcher drains and returns meanwhile).
        std::future::pending::<()>().await;
    };
    let (stopping_tx, _abort_tx) = tokio::select! {
        joined = dispatch.join_next() => match joined {
            Some(Ok(senders)) => senders,
            Some(Err(e)) => {
                background.abort_all();
                return Err(WorkerError::Internal(format!("dispatcher failed: {e}")));
            }
            None => unreachable!("the dispatcher was spawned"),
        },
        _ = forward => unreachable!("forwarding never ends"),
    };

    // Stop the helpers (heartbeats, recovery, periodic, retention) and wait
    // until they are gone, so that the event broadcast closes when `run`
    // returns. (Dropping `run` early aborts them too: the JoinSet owns them.)
    stopping_tx.send_replace(true);
    background.abort_all();
    while background.join_next().await.is_some() {}
    drop(shared);
    // Gone from `duraq workers` (and any lease left unreported is recoverable now).
    if let Err(e) = store.remove_worker(&config.worker_id).await {
        tracing::warn!("removing the worker's registration failed: {e}");
    }
    let report = telemetry.snapshot();
    tracing::info!(?report, "worker stopped");
    Ok(report)
}
