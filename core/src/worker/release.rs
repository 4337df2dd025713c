//! The release backlog duty (`docs/workflows.md`, "Cost"). A job that becomes
//! terminal settles at most [`crate::rules::RELEASE_BATCH`] of its dependency
//! edges in the transaction that finished it; the rest waits in the store's
//! release backlog, and every worker continues it in bounded transactions
//! ([`WorkerStore::settle_release_backlog`]) until nothing is left.
//!
//! No leader: on PostgreSQL each step takes its entry `FOR UPDATE SKIP
//! LOCKED`, so workers share a wide fan-out, and on the other stores the
//! steps are serialized by the store anyway. A worker drains the backlog at
//! startup, at once whenever a commit through its store left an entry
//! ([`WorkerStore::release_backlog_signal`]: its own reports, a cancel in the
//! same process), and every recovery interval for entries other processes
//! left (an operator's cancel from `duraq`, a worker that died mid-backlog:
//! the entries are durable). Each step signals work when it released jobs, so
//! the dispatchers claim them as they would any released dependent.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};

use crate::store::WorkerStore;

/// Backlog steps per call: each is its own bounded transaction; the call
/// returns between batches of them so that errors and shutdown are noticed.
pub(crate) const STEPS_PER_CALL: usize = 16;

/// Drains the release backlog at startup, on the store's backlog signal and
/// every `every`, until aborted.
pub(crate) async fn release_backlog_loop(store: Arc<dyn WorkerStore>, every: Duration) {
    let mut signal = store.release_backlog_signal();
    let mut signal_open = true;
    let mut ticker = interval_at(Instant::now(), every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            changed = signal.changed(), if signal_open => signal_open = changed.is_ok(),
        }
        // Entries left while draining move the signal again: another pass.
        signal.borrow_and_update();
        drain_once(store.as_ref()).await;
    }
}

/// Continues the backlog until the store reports nothing left (or fails:
/// logged, and tried again at the next signal or tick). Returns the steps made.
pub(crate) async fn drain_once<S: WorkerStore + ?Sized>(store: &S) -> usize {
    let mut steps = 0;
    loop {
        match store.settle_release_backlog(STEPS_PER_CALL).await {
            Ok(progress) => {
                steps += progress.steps;
                if !progress.more {
                    if steps > 0 {
                        tracing::debug!(steps, "continued the release backlog");
                    }
                    return steps;
                }
            }
            Err(e) => {
                tracing::warn!("continuing the release backlog failed: {e}");
                return steps;
            }
        }
    }
}
