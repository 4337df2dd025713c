//! Liveness duties. A worker heartbeats so that others know its leases are still
//! held, and every worker recovers the leases of workers that stopped heartbeating
//! (`docs/jobs.md`) — there is no leader, and recovery is one idempotent store call, so
//! several processes doing it at once is harmless. Both loops start one interval
//! after startup, which heartbeats and recovers once itself before claiming.
//!
//! The history sampler ([`history_loop`]) is a liveness duty of the same kind:
//! every worker calls [`Inspect::record_history`] once a minute, and the store
//! keeps the first sample of each minute, so the throughput history
//! (`docs/history.md`) has a sample per minute while any worker runs.
//!
//! So is reclaiming dead row versions ([`reclaim_loop`]): every worker looks
//! at startup (before its first claim, which would otherwise walk them) and
//! then every [`RECLAIM_CHECK`], and reclaims when
//! [`crate::rules::reclaim_due`] says so; the rule counts a reclaim by any
//! worker, so a fleet reclaims about as often as one worker would.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::events::{Telemetry, WorkerEvent};
use super::handler::duration_ms;
use crate::history::MINUTE_MS;
use crate::rules::reclaim_due;
use crate::store::{Inspect, WorkerStore};

/// How often a worker asks its store about dead row versions.
pub(crate) const RECLAIM_CHECK: Duration = Duration::from_secs(2);

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

/// One recovery pass; errors are logged.
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
}

/// Samples the throughput history now and then once a minute until aborted;
/// errors are logged (a missed minute is a gap in the charts, nothing more).
pub(crate) async fn history_loop(store: Arc<dyn Inspect>) {
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

/// Reclaims the live jobs' dead row versions if [`reclaim_due`] says so, and
/// returns how long that took (`None`: nothing to do, or it failed; errors are
/// logged, autovacuum still runs). `Err(())` when the store keeps no dead rows.
pub(crate) async fn reclaim_once(
    store: &dyn WorkerStore,
    last_took_ms: Option<i64>,
) -> Result<Option<i64>, ()> {
    let rows = match store.dead_rows().await {
        Ok(Some(rows)) => rows,
        Ok(None) => return Err(()),
        Err(e) => {
            tracing::debug!("reading the live jobs' dead rows failed: {e}");
            return Ok(None);
        }
    };
    if !reclaim_due(&rows, last_took_ms) {
        return Ok(None);
    }
    let started = Instant::now();
    match store.reclaim_dead_rows().await {
        Ok(()) => {
            let took = duration_ms(started.elapsed());
            tracing::debug!(
                dead = rows.dead,
                took_ms = took,
                "reclaimed the live jobs' dead rows"
            );
            Ok(Some(took))
        }
        Err(e) => {
            tracing::warn!("reclaiming the live jobs' dead rows failed: {e}");
            Ok(None)
        }
    }
}

/// After the worker's first [`reclaim_once`] (at startup, before it claims,
/// which took `first`), reclaims whenever [`reclaim_due`] says so, looking
/// every [`RECLAIM_CHECK`], until aborted.
pub(crate) async fn reclaim_loop(store: Arc<dyn WorkerStore>, first: Option<i64>) {
    let mut ticker = interval_at(Instant::now() + RECLAIM_CHECK, RECLAIM_CHECK);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last_took_ms = first;
    loop {
        ticker.tick().await;
        match reclaim_once(store.as_ref(), last_took_ms).await {
            Ok(Some(took)) => last_took_ms = Some(took),
            Ok(None) => {}
            // This store keeps no dead row versions: nothing to ever do.
            Err(()) => return,
        }
    }
}
