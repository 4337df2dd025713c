//! Worker runtime tests against the `MemoryStore`. They synchronize on the
//! worker's event broadcast, channels and `Notify`, never on sleeps; the only
//! sleeps are behaviour under test (a handler outliving its timeout) or timeouts
//! that turn a hang into a failure.

mod admission;
mod cancel;
mod cron;
mod cron_zones;
mod dependencies;
mod drain;
mod faulty;
mod periodic;
mod prefetch;
mod progress;
mod registry;
mod running;
mod typed;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::worker::{JobFinished, JobStarted, WorkerEvent};
use crate::{EnqueueOptions, Job, ManualClock, MemoryStore, NewJob, Store};

/// Far enough that a correct test never meets it.
const PATIENCE: Duration = Duration::from_secs(10);

/// A store on a manual clock (stopped at a round instant).
fn manual_store() -> (Arc<dyn Store>, ManualClock) {
    let clock = ManualClock::new(1_700_000_000_000);
    (
        Arc::new(MemoryStore::with_clock(Arc::new(clock.clone()))),
        clock,
    )
}

fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

async fn enqueue(store: &Arc<dyn Store>, name: &str, args: Value, opts: EnqueueOptions) -> String {
    let job = NewJob::new(name, args, opts).unwrap();
    store.enqueue(job).await.unwrap().job_id().to_owned()
}

async fn job(store: &Arc<dyn Store>, id: &str) -> Job {
    store.get_job(id).await.unwrap().expect("job exists")
}

/// The next event `pick` accepts (others are skipped); panics after [`PATIENCE`].
async fn next_event<T>(
    rx: &mut broadcast::Receiver<WorkerEvent>,
    mut pick: impl FnMut(WorkerEvent) -> Option<T>,
) -> T {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    if let Some(found) = pick(event) {
                        return found;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    panic!("test receiver lagged by {n}")
                }
                Err(broadcast::error::RecvError::Closed) => panic!("worker events closed"),
            }
        }
    })
    .await
    .expect("event did not arrive in time")
}

async fn next_finished(rx: &mut broadcast::Receiver<WorkerEvent>) -> JobFinished {
    next_event(rx, |e| match e {
        WorkerEvent::Finished(f) => Some(f),
        _ => None,
    })
    .await
}

async fn next_started(rx: &mut broadcast::Receiver<WorkerEvent>) -> JobStarted {
    next_event(rx, |e| match e {
        WorkerEvent::Started(s) => Some(s),
        _ => None,
    })
    .await
}

/// Waits for `n` finished attempts.
async fn finished(rx: &mut broadcast::Receiver<WorkerEvent>, n: usize) -> Vec<JobFinished> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.push(next_finished(rx).await);
    }
    out
}
