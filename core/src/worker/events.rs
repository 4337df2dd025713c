//! What a running worker tells the outside: a broadcast of per-job events (for
//! progress bars and latency percentiles) and the totals it returns when it stops.
//! Events are best-effort (a slow subscriber sees `Lagged`); the totals are exact.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::requests::{LeaseLoss, Outcome};

/// Capacity of the event broadcast; a subscriber further behind sees `Lagged`.
pub const EVENT_CAPACITY: usize = 4096;

/// Something a worker did. Subscribe with [`crate::Worker::subscribe`] or
/// [`crate::worker::WorkerHandle::subscribe`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum WorkerEvent {
    /// One claim round trip returned jobs (only sent when it returned some).
    Claimed {
        /// How many jobs the claim returned.
        count: usize,
    },
    /// A handler started.
    Started(JobStarted),
    /// An attempt ended and its report was made (`accepted` says whether the lease
    /// was still current).
    Finished(JobFinished),
    /// The worker learned that the lease of a job it is running is gone: the
    /// job was cancelled (`Cancelled`) or its lease recovered by another process
    /// (`Lost`). The handler's context is told at once
    /// ([`crate::JobContext::cancelled`]); the attempt's report will be refused.
    LeaseLost {
        /// The job.
        job_id: String,
        /// Why the lease is gone.
        loss: LeaseLoss,
    },
    /// This worker recovered the leases of dead workers.
    Recovered {
        /// The recovered jobs, sorted.
        job_ids: Vec<String>,
    },
    /// A periodic tick was enqueued.
    PeriodicEnqueued {
        /// The periodic job's name.
        name: String,
        /// The tick (its `scheduledAtMs`).
        tick_ms: i64,
        /// The tick's job.
        job_id: String,
        /// False when another process had already enqueued the tick (a replay).
        created: bool,
    },
    /// A retention sweep deleted terminal jobs.
    Pruned {
        /// How many jobs the sweep deleted.
        deleted: u64,
    },
}

/// A handler started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStarted {
    /// The job's id.
    pub job_id: String,
    /// The job's name.
    pub job_name: String,
    /// The job's queue.
    pub queue: String,
    /// This attempt's number, 1-based.
    pub attempt: i64,
    /// From the moment the job was due (`max(createdAtMs, scheduledAtMs)`) to the
    /// start, by the worker's clock; never negative.
    pub latency_ms: i64,
}

/// An attempt ended.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFinished {
    /// The job's id.
    pub job_id: String,
    /// The job's name.
    pub job_name: String,
    /// The job's queue.
    pub queue: String,
    /// 1-based.
    pub attempt: i64,
    /// What was reported.
    pub outcome: Outcome,
    /// Whether the report changed the row (false: the lease had been recovered).
    pub accepted: bool,
    /// How long the handler ran.
    pub duration: Duration,
}

/// Totals of one [`crate::Worker::run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    /// Jobs claimed.
    pub claimed: u64,
    /// Attempts reported completed.
    pub completed: u64,
    /// Failed attempts (including timeouts and panics) whose job went back to
    /// the queue for a retry.
    pub retried: u64,
    /// Failed attempts whose job failed for good (no retries left, or the
    /// handler discarded it).
    pub failed: u64,
    /// Attempts that asked for a reschedule.
    pub rescheduled: u64,
    /// Jobs given back at the drain deadline.
    pub returned_to_queue: u64,
    /// Jobs claimed ahead ([`crate::worker::WorkerBuilder::prefetch`]) and given back
    /// unstarted at shutdown: `queued` again, no attempt used.
    pub returned_unstarted: u64,
    /// Reports that lost to recovery (returned false; changed nothing).
    pub lost_leases: u64,
    /// Attempts whose job was cancelled while they ran (`duraq jobs cancel`, a
    /// keyed cancel or replace that stops the running owner); their reports
    /// were refused. Not counted in `lost_leases`.
    pub cancelled: u64,
    /// Of `cancelled`, the attempts whose handler did not return within the
    /// cancel grace period and was aborted.
    pub cancel_aborted: u64,
    /// Reports that could not be delivered at all (store errors until shutdown).
    pub unreported: u64,
    /// Dead workers' leases this worker recovered.
    pub recovered: u64,
    /// Periodic ticks this worker created (replays not counted).
    pub periodic_enqueued: u64,
    /// Terminal jobs deleted by retention sweeps.
    pub pruned: u64,
}

/// The live counters behind [`WorkerReport`] plus the event sender.
#[derive(Debug)]
pub(crate) struct Telemetry {
    pub(crate) events: broadcast::Sender<WorkerEvent>,
    pub(crate) claimed: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) rescheduled: AtomicU64,
    pub(crate) returned_to_queue: AtomicU64,
    pub(crate) returned_unstarted: AtomicU64,
    pub(crate) lost_leases: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) cancel_aborted: AtomicU64,
    pub(crate) unreported: AtomicU64,
    pub(crate) recovered: AtomicU64,
    pub(crate) periodic_enqueued: AtomicU64,
    pub(crate) pruned: AtomicU64,
}

impl Telemetry {
    pub(crate) fn new(events: broadcast::Sender<WorkerEvent>) -> Self {
        Self {
            events,
            claimed: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            rescheduled: AtomicU64::new(0),
            returned_to_queue: AtomicU64::new(0),
            returned_unstarted: AtomicU64::new(0),
            lost_leases: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            cancel_aborted: AtomicU64::new(0),
            unreported: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
            periodic_enqueued: AtomicU64::new(0),
            pruned: AtomicU64::new(0),
        }
    }

    /// Sends `event` if anyone listens.
    pub(crate) fn emit(&self, event: WorkerEvent) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(event);
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a delivered report by its outcome; a failure counts as a retry
    /// when the job had `retries_left` and was not discarded. A refused report
    /// counts as `cancelled` when the worker knew its job was cancelled.
    pub(crate) fn count_outcome(
        &self,
        outcome: &Outcome,
        retries_left: bool,
        accepted: bool,
        loss: Option<LeaseLoss>,
    ) {
        if !accepted {
            let counter = match loss {
                Some(LeaseLoss::Cancelled) => &self.cancelled,
                _ => &self.lost_leases,
            };
            Self::add(counter, 1);
            return;
        }
        let counter = match outcome {
            Outcome::Completed | Outcome::CompletedWith { .. } => &self.completed,
            Outcome::Failed { discard: false, .. } if retries_left => &self.retried,
            Outcome::Failed { .. } => &self.failed,
            Outcome::Reschedule { .. } | Outcome::AwaitSignal { .. } => &self.rescheduled,
            Outcome::ReturnToQueue => &self.returned_to_queue,
        };
        Self::add(counter, 1);
    }

    pub(crate) fn snapshot(&self) -> WorkerReport {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerReport {
            claimed: get(&self.claimed),
            completed: get(&self.completed),
            retried: get(&self.retried),
            failed: get(&self.failed),
            rescheduled: get(&self.rescheduled),
            returned_to_queue: get(&self.returned_to_queue),
            returned_unstarted: get(&self.returned_unstarted),
            lost_leases: get(&self.lost_leases),
            cancelled: get(&self.cancelled),
            cancel_aborted: get(&self.cancel_aborted),
            unreported: get(&self.unreported),
            recovered: get(&self.recovered),
            periodic_enqueued: get(&self.periodic_enqueued),
            pruned: get(&self.pruned),
        }
    }
}
