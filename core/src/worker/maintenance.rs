//! Liveness duties. A worker heartbeats so that others know its leases are still
//! held, and every worker recovers the leases of workers that stopped heartbeating
//! (`docs/jobs.md`), and cancels the expired jobs no claim reached — there is no
//! leader, and each is one idempotent store call, so several processes doing it at
//! once is harmless. Both loops start one interval
//! after startup, which heartbeats and recovers once itself before claiming.
//!
//! The history sampler ([`history_loop`]) is a liveness duty of the same kind:
//! every worker calls [`Operate::record_history`] once a minute, and the store
//! keeps the first sample of each minute, so the throughput history
//! (`docs/history.md`) has a sample per minute while any worker runs.
//!
//! So is the store's own upkeep ([`upkeep_loop`]): every worker runs
//! [`WorkerStore::upkeep`] at startup (before its first claim: on PostgreSQL
//! that reclaims the dead row versions the claim would otherwise walk) and then
//! every [`UPKEEP_INTERVAL`], until the store says it needs none. What the
//! upkeep does and how often it acts is the store's: core knows no backend.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::events::{Telemetry, WorkerEvent};
use super::handler::duration_ms;
use crate::history::MINUTE_MS;
use crate::store::{Operate, Upkeep, WorkerStore};

/// How often a worker runs its store's upkeep.
pub(crate) const UPKEEP_INTERVAL: Duration = Duration::from_secs(2);

/// Heartbeats every `every` until aborted (it runs through the drain, so the
/// jobs being finished are not recovered from under the worker).
pub(crate) async fn heartbeat_loop(
    store: Arc<dyn WorkerStore>,
    worker_id: String,
    every: Duration,
) {
    let mut ticker = interval_at(Instant::now() + every, every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if let Err(e) = store.heartbeat(&worker_id).await {
            tracing::warn!(worker_id = %worker_id, "heartbeat failed: {e}");
        }
    }
}

/// Recovers stale leases every `every` until aborted.
pub(crate) async fn recovery_loop(
    store: Arc<dyn WorkerStore>,
    stale_after: Duration,
    every: Duration,
    telemetry: Arc<Telemetry>,
) {
    let mut ticker = interval_at(Instant::now() + every, every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        recover_once(store.as_ref(), stale_after, &telemetry).await;
    }
}

/// The most expired jobs one recovery pass cancels (the next pass goes on).
pub(crate) const EXPIRE_BATCH: usize = 1_000;

/// One recovery pass: the leases of stale workers, the expired jobs no
/// claim reached ([`WorkerStore::expire_due`]) and the signal waits whose
/// time is up ([`WorkerStore::end_timed_out_waits`]); errors are logged.
pub(crate) async fn recover_once(
    store: &dyn WorkerStore,
    stale_after: Duration,
    telemetry: &Telemetry,
) {
    match store.recover_stale(duration_ms(stale_after)).await {
        Ok(ids) if !ids.is_empty() => {
            Telemetry::add(&telemetry.recovered, ids.len() as u64);
            tracing::warn!(count = ids.len(), job_ids = ?ids, "recovered leases of stale workers");
            telemetry.emit(WorkerEvent::Recovered { job_ids: ids });
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("recovering stale leases failed: {e}"),
    }
    match store.expire_due(EXPIRE_BATCH).await {
        Ok(ids) if !ids.is_empty() => {
            tracing::info!(count = ids.len(), job_ids = ?ids, "cancelled expired jobs");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("cancelling expired jobs failed: {e}"),
    }
    match store.end_timed_out_waits(EXPIRE_BATCH).await {
        Ok(ids) if !ids.is_empty() => {
            tracing::debug!(count = ids.len(), job_ids = ?ids, "ended timed-out signal waits");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("ending timed-out signal waits failed: {e}"),
    }
}

/// Samples the throughput history now and then once a minute until aborted;
/// errors are logged (a missed minute is a gap in the charts, nothing more).
pub(crate) async fn history_loop(store: Arc<dyn Operate>) {
    let every = Duration::from_millis(MINUTE_MS as u64);
    let mut ticker = interval_at(Instant::now(), every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if let Err(e) = store.record_history().await {
            tracing::warn!("sampling the throughput history failed: {e}");
        }
    }
}

/// Runs the store's upkeep once; `false` when the store needs none (errors
/// are logged and count as "ask again").
pub(crate) async fn upkeep_once(store: &dyn WorkerStore) -> bool {
    match store.upkeep().await {
        Ok(Upkeep::Unneeded) => false,
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("the store's upkeep failed: {e}");
            true
        }
    }
}

/// After the worker's first [`upkeep_once`] (at startup, before it claims),
/// runs the store's upkeep every [`UPKEEP_INTERVAL`] until aborted or until
/// the store says it needs none.
pub(crate) async fn upkeep_loop(store: Arc<dyn WorkerStore>) {
    let mut ticker = interval_at(Instant::now() + UPKEEP_INTERVAL, UPKEEP_INTERVAL);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if !upkeep_once(store.as_ref()).await {
            return;
        }
    }
}
