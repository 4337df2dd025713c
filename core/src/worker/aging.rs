//! The worker's aging passes ([`crate::PriorityAging`]): for each queue it was
//! configured to age, a pass with every recovery (and one at startup, over
//! every due job of the queue). A later pass visits only the jobs that could
//! still earn a step since the previous one
//! ([`crate::PriorityAging::oldest_due_to_visit`]), so a pass costs the jobs
//! that are aging, not the queue's whole backlog. Like recovery it is
//! idempotent and leaderless: several workers aging one queue agree.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};

use crate::aging::{AgingPass, PriorityAging};
use crate::clock::Clock;
use crate::store::WorkerStore;

/// The most jobs one pass raises per queue (the next pass goes on).
pub(crate) const AGING_BATCH: usize = 1_000;

/// Runs an aging pass at once and then every `every` until aborted.
pub(crate) async fn aging_loop(
    store: Arc<dyn WorkerStore>,
    clock: Arc<dyn Clock>,
    aging: BTreeMap<String, PriorityAging>,
    every: Duration,
) {
    let mut last_pass: Option<i64> = None;
    let mut ticker = interval_at(Instant::now(), every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let now = clock.now_ms();
        let mut complete = true;
        for (queue, aging) in &aging {
            let pass = AgingPass {
                queue: queue.clone(),
                aging: *aging,
                oldest_due_ms: last_pass.map(|at| aging.oldest_due_to_visit(now, at)),
                limit: AGING_BATCH,
            };
            match store.age_priorities(&pass).await {
                // A full batch: the next pass starts where this one began.
                Ok(raised) if raised as usize >= AGING_BATCH => complete = false,
                Ok(_) => {}
                Err(e) => {
                    complete = false;
                    tracing::warn!(queue = %queue, "aging the queue's priorities failed: {e}");
                }
            }
        }
        if complete {
            last_pass = Some(now);
        }
    }
}
