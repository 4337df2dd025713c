//! A worker's settings: the defaults every knob starts from, and the validated
//! configuration `WorkerBuilder::build` hands the runtime.
//! Plain data, apart from the builder that checks it and the runtime that
//! reads it, so both depend on it and not on each other.

use std::collections::BTreeMap;
use std::time::Duration;

use super::periodic::PeriodicJob;
use super::retention::RetentionPolicy;
use crate::requests::QueueConfig;

/// Default number of concurrent jobs per worker.
pub const DEFAULT_CONCURRENCY: usize = 10;
/// The most jobs a worker may claim ahead of its slots ([`WorkerBuilder::prefetch`](crate::worker::WorkerBuilder::prefetch)).
pub const MAX_PREFETCH: usize = 10_000;
/// The cap of the default, adaptive prefetch ([`PrefetchPolicy::default`]).
pub const DEFAULT_ADAPTIVE_PREFETCH: usize = 500;

/// How many jobs a worker claims beyond its slots, to wait in the worker for
/// a free slot ([`WorkerBuilder::prefetch_policy`](crate::worker::WorkerBuilder::prefetch_policy)).
///
/// A job claimed ahead is `handed_off` to this worker while it waits: its
/// attempt is counted at the claim and no other worker can take it. At
/// shutdown the waiting jobs go back to `queued` unstarted, their attempt not
/// counted; if the worker dies they are recovered with its running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefetchPolicy {
    /// Always up to this many ([`WorkerBuilder::prefetch`](crate::worker::WorkerBuilder::prefetch)). `Fixed(0)` never
    /// holds a job beyond the slots: each claim asks only for free slots, and
    /// claims and reports are made one at a time.
    Fixed(usize),
    /// The default: none while the queue has no backlog or its jobs are slow;
    /// while it has a backlog of fast jobs, growing up to `max`
    /// ([`WorkerBuilder::prefetch_adaptive`](crate::worker::WorkerBuilder::prefetch_adaptive)). A claim that comes back with
    /// every job it asked for means more is likely due: if at least a quarter
    /// of what the worker may hold (its slots, or the allowance if larger)
    /// ended since the claim before, the allowance grows (to the slots, then
    /// doubling, up to `max`), so jobs claimed ahead start within a few claims'
    /// time and jobs that end a few at a time are never claimed ahead. A claim
    /// that comes back short means the queue ran dry: the allowance drops to 0
    /// at once, so a worker that keeps up with its queue holds no job it is
    /// not running, and the jobs of a short burst are not locked away from
    /// other workers. While the allowance is 0 the worker works exactly as
    /// with `Fixed(0)` (its store calls one at a time); `Adaptive { max: 0 }`
    /// is `Fixed(0)`.
    Adaptive {
        /// The most jobs held beyond the slots (at most [`MAX_PREFETCH`]).
        max: usize,
    },
}

impl Default for PrefetchPolicy {
    /// [`PrefetchPolicy::Adaptive`] up to [`DEFAULT_ADAPTIVE_PREFETCH`].
    fn default() -> Self {
        Self::Adaptive {
            max: DEFAULT_ADAPTIVE_PREFETCH,
        }
    }
}

impl PrefetchPolicy {
    /// The most jobs this policy ever lets a worker hold beyond its slots.
    pub fn max(self) -> usize {
        match self {
            Self::Fixed(n) | Self::Adaptive { max: n } => n,
        }
    }
}
/// Default stale timeout (`docs/jobs.md`).
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(60);
/// Default attempt timeout for jobs without `timeoutMs`.
pub const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default graceful-shutdown drain deadline.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default fallback poll interval.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Default time a cancelled attempt's handler may take to return before the
/// runtime aborts it.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(10);
/// Default interval of the lease check: how often a worker holding jobs asks
/// the store which of their leases are gone (cancelled or recovered).
pub const DEFAULT_LEASE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The validated settings of a worker.
#[derive(Clone, Debug)]
pub(crate) struct WorkerConfig {
    pub(crate) worker_id: String,
    pub(crate) concurrency: usize,
    pub(crate) prefetch: PrefetchPolicy,
    pub(crate) queues: Option<Vec<String>>,
    pub(crate) queue_config: BTreeMap<String, QueueConfig>,
    /// Turns in a row per fairness key.
    pub(crate) fairness_weights: BTreeMap<String, u32>,
    pub(crate) aging: BTreeMap<String, crate::PriorityAging>,
    pub(crate) job_timeout: Option<Duration>,
    pub(crate) stale_after: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) recovery_interval: Duration,
    pub(crate) drain_timeout: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) cancel_grace: Duration,
    pub(crate) lease_check_interval: Duration,
    pub(crate) periodic: Vec<PeriodicJob>,
    pub(crate) retention: Option<RetentionPolicy>,
}

/// The shortest accepted `stale_after`: below it a heartbeat's own write (an
/// fsync) can take longer than the timeout, and a healthy worker would recover
/// its own leases.
pub const MIN_STALE_AFTER: Duration = Duration::from_secs(1);
