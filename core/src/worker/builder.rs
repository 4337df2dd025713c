//! Building a [`Worker`] and driving it. Every knob has a default that suits a
//! production worker; [`WorkerBuilder::build`] checks the combination once, so
//! the runtime never meets an impossible configuration (zero slots, a heartbeat
//! slower than the stale timeout).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::config::{
    PrefetchPolicy, WorkerConfig, DEFAULT_CANCEL_GRACE, DEFAULT_CONCURRENCY, DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_JOB_TIMEOUT, DEFAULT_LEASE_CHECK_INTERVAL, DEFAULT_POLL_INTERVAL, DEFAULT_STALE_AFTER,
    MAX_PREFETCH, MIN_STALE_AFTER,
};
use super::events::EVENT_CAPACITY;
use super::handle::Worker;
use super::periodic::PeriodicJob;
use super::registry::Registry;
use super::retention::RetentionPolicy;
use super::WorkerError;
use crate::aging::PriorityAging;
use crate::clock::{system_clock, Clock};
use crate::error::Error;
use crate::keys::QueueName;
use crate::requests::QueueConfig;
use crate::store::Store;

/// Configures a [`Worker`]; start with [`Worker::builder`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use duraq_core::{MemoryStore, QueueConfig, Registry, Store, Worker};
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let registry = Registry::new().register_fn("duraq.noop", |_ctx, _args| async { Ok(()) }).unwrap();
/// let worker = Worker::builder(store, registry)
///     .concurrency(64)
///     .queue("mail", QueueConfig { max_concurrent: Some(5), priority: 10 })
///     .drain_timeout(Duration::from_secs(10))
///     .build()
///     .unwrap();
/// assert_eq!(worker.concurrency(), 64);
/// ```
pub struct WorkerBuilder {
    store: Arc<dyn Store>,
    registry: Registry,
    clock: Arc<dyn Clock>,
    worker_id: Option<String>,
    concurrency: usize,
    prefetch: PrefetchPolicy,
    queues: Option<Vec<String>>,
    queue_config: BTreeMap<String, QueueConfig>,
    fairness_weights: BTreeMap<String, u32>,
    aging: BTreeMap<String, PriorityAging>,
    job_timeout: Option<Duration>,
    stale_after: Duration,
    heartbeat_interval: Option<Duration>,
    recovery_interval: Option<Duration>,
    drain_timeout: Duration,
    poll_interval: Duration,
    cancel_grace: Duration,
    lease_check_interval: Duration,
    periodic: Vec<PeriodicJob>,
    retention: Option<RetentionPolicy>,
    /// The first invalid queue name given to `queues`/`queue`, reported by `build`.
    bad_queue: Option<Error>,
}

impl Worker {
    /// Starts configuring a worker over `store` running `registry`'s handlers.
    pub fn builder(store: Arc<dyn Store>, registry: Registry) -> WorkerBuilder {
        WorkerBuilder::new(store, registry)
    }
}

impl WorkerBuilder {
    fn new(store: Arc<dyn Store>, registry: Registry) -> Self {
        Self {
            store,
            registry,
            clock: system_clock(),
            worker_id: None,
            concurrency: DEFAULT_CONCURRENCY,
            prefetch: PrefetchPolicy::default(),
            queues: None,
            queue_config: BTreeMap::new(),
            fairness_weights: BTreeMap::new(),
            aging: BTreeMap::new(),
            job_timeout: Some(DEFAULT_JOB_TIMEOUT),
            stale_after: DEFAULT_STALE_AFTER,
            heartbeat_interval: None,
            recovery_interval: None,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            poll_interval: DEFAULT_POLL_INTERVAL,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            lease_check_interval: DEFAULT_LEASE_CHECK_INTERVAL,
            periodic: Vec::new(),
            retention: None,
            bad_queue: None,
        }
    }

    /// The worker's id (default: a fresh UUIDv7). Must be unique among live workers.
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// Slots: at most this many attempts run at once (default 10, at least 1).
    /// With [`prefetch(0)`](Self::prefetch) it is also the most jobs held.
    pub fn concurrency(mut self, slots: usize) -> Self {
        self.concurrency = slots;
        self
    }

    /// Claims up to `jobs` more than the slots, always ([`PrefetchPolicy::Fixed`];
    /// at most [`MAX_PREFETCH`]): they wait in the worker, each starting when a
    /// slot frees, so claims and reports overlap the work and one commit serves
    /// more jobs. It pays for many short jobs on a store whose commits are slow
    /// (PostgreSQL); the `cargo xtask bench` in-process drain shows the settings.
    /// `prefetch(0)` never holds a job beyond the slots: the worker claims only
    /// for free slots, one store call at a time. Without any `prefetch*` call
    /// the worker uses the adaptive default ([`prefetch_adaptive`](Self::prefetch_adaptive)).
    ///
    /// The cost: a job waiting here is `handed_off` to this worker (its
    /// attempt is counted at the claim, and other workers cannot take it) while
    /// it has not started. At shutdown the waiting jobs go back to `queued`
    /// unstarted, their attempt not counted ([`crate::worker::WorkerReport::returned_unstarted`]);
    /// if the worker dies they are recovered like its running jobs. A waiting
    /// job whose lease is gone (cancelled) never starts.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use duraq_core::{MemoryStore, Registry, Store, Worker};
    /// # let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// # let registry = Registry::new().register_fn("duraq.noop", |_ctx, _args| async { Ok(()) }).unwrap();
    /// let worker = Worker::builder(store, registry)
    ///     .concurrency(10)
    ///     .prefetch(100)
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn prefetch(self, jobs: usize) -> Self {
        self.prefetch_policy(PrefetchPolicy::Fixed(jobs))
    }

    /// Claims ahead of the slots only while the queue has a backlog of jobs
    /// that end quickly, up to `max` jobs ([`PrefetchPolicy::Adaptive`]; the
    /// default, with [`DEFAULT_ADAPTIVE_PREFETCH`](super::DEFAULT_ADAPTIVE_PREFETCH)). While claims come back
    /// full and the slots turn over fast the worker drains like
    /// [`prefetch(max)`](Self::prefetch); once a claim comes back short it
    /// claims only for free slots again, so an idle or keeping-up worker holds
    /// nothing it is not running. The price is that of
    /// [`prefetch`](Self::prefetch) while a backlog lasts: up to `max` jobs wait
    /// here that another worker could have run. The allowance grows only while
    /// a quarter of what the worker holds ends between two claims, so those
    /// jobs wait a few claims' time; but it does not shrink until the queue runs
    /// dry, so if a backlog of fast jobs is followed without a gap by slow ones,
    /// the slow ones may be held ahead. Give workers of long jobs `prefetch(0)`.
    pub fn prefetch_adaptive(self, max: usize) -> Self {
        self.prefetch_policy(PrefetchPolicy::Adaptive { max })
    }

    /// Sets how many jobs the worker claims beyond its slots (default
    /// [`PrefetchPolicy::default`]: adaptive, up to [`DEFAULT_ADAPTIVE_PREFETCH`](super::DEFAULT_ADAPTIVE_PREFETCH)).
    pub fn prefetch_policy(mut self, policy: PrefetchPolicy) -> Self {
        self.prefetch = policy;
        self
    }

    /// Validates a queue name like an enqueued one; a bad one fails `build`.
    fn queue_name(&mut self, name: String) -> String {
        match QueueName::new(&name) {
            Ok(q) => q.as_str().to_owned(),
            Err(e) => {
                self.bad_queue.get_or_insert(e);
                name
            }
        }
    }

    /// Claims only from these queues (default: every queue). Names are normalized
    /// and validated like enqueued ones (trimmed; empty means `default`).
    pub fn queues<I, S>(mut self, queues: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut list: Vec<String> = queues
            .into_iter()
            .map(|q| self.queue_name(q.into()))
            .collect();
        list.sort();
        list.dedup();
        self.queues = Some(list);
        self
    }

    /// Priority and cap of queue `name` (`docs/queues.md`). Does not restrict which queues
    /// are claimed; see [`WorkerBuilder::queues`].
    pub fn queue(mut self, name: impl Into<String>, config: QueueConfig) -> Self {
        let name = self.queue_name(name.into());
        self.queue_config.insert(name, config);
        self
    }

    /// Ages queue `name`'s priorities (`docs/queues.md`): with its recovery,
    /// the worker raises each due job of the queue by one step of priority
    /// per `aging.every_ms` it has waited, up to `aging.max_steps`, so that
    /// low-priority jobs never starve behind a stream of higher ones.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use duraq_core::{MemoryStore, PriorityAging, Registry, Worker};
    /// let aging = PriorityAging::new(Duration::from_secs(60), 10).unwrap();
    /// let worker = Worker::builder(Arc::new(MemoryStore::new()), Registry::new())
    ///     .priority_aging("reports", aging)
    ///     .build()
    ///     .unwrap();
    /// # drop(worker);
    /// ```
    pub fn priority_aging(mut self, name: impl Into<String>, aging: PriorityAging) -> Self {
        let name = self.queue_name(name.into());
        self.aging.insert(name, aging);
        self
    }

    /// Gives fairness key `key` `turns` turns in a row where jobs of its
    /// queue take turns by key (see
    /// [`EnqueueOptions::fairness_key`](crate::EnqueueOptions::fairness_key)):
    /// a weight of 3 lets it start three jobs for every one of a key of
    /// weight 1. Keys without a weight have 1; `turns` must be at least 1.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use duraq_core::{MemoryStore, Registry, Worker};
    /// let worker = Worker::builder(Arc::new(MemoryStore::new()), Registry::new())
    ///     .fairness_weight("tenant:enterprise", 3)
    ///     .build()
    ///     .unwrap();
    /// # drop(worker);
    /// ```
    pub fn fairness_weight(mut self, key: impl Into<String>, turns: u32) -> Self {
        self.fairness_weights.insert(key.into(), turns);
        self
    }

    /// Priority and cap of several queues at once (see [`WorkerBuilder::queue`]).
    pub fn queue_configs<I, S>(mut self, configs: I) -> Self
    where
        I: IntoIterator<Item = (S, QueueConfig)>,
        S: Into<String>,
    {
        for (name, config) in configs {
            self = self.queue(name, config);
        }
        self
    }

    /// Timeout of an attempt whose job has no `timeoutMs` (default 30 min).
    pub fn job_timeout(mut self, timeout: Duration) -> Self {
        self.job_timeout = Some(timeout);
        self
    }

    /// Attempts of jobs without `timeoutMs` never time out.
    pub fn no_job_timeout(mut self) -> Self {
        self.job_timeout = None;
        self
    }

    /// A worker silent for longer is presumed dead (default 60 s, at least
    /// [`MIN_STALE_AFTER`] and three heartbeat intervals).
    pub fn stale_after(mut self, stale_after: Duration) -> Self {
        self.stale_after = stale_after;
        self
    }

    /// How often to heartbeat (default: a sixth of `stale_after`).
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = Some(interval);
        self
    }

    /// How often to recover dead workers' leases (default: half of `stale_after`).
    pub fn recovery_interval(mut self, interval: Duration) -> Self {
        self.recovery_interval = Some(interval);
        self
    }

    /// How long a graceful shutdown waits for running jobs (default 30 s).
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// The longest an idle worker waits before claiming again when nothing
    /// signalled new work (default 1 s; covers other processes' cap releases).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How long the handler of a cancelled job may take to return after it was
    /// told ([`crate::JobContext::cancelled`]) before the runtime aborts its task
    /// (default 10 s; zero aborts at once). Either way the attempt's report is
    /// refused: the job is already `cancelled`.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// How often a worker that holds jobs asks the store which of their leases
    /// are gone (default 1 s): how soon a handler learns that its job was
    /// cancelled by another process when the store does not announce it (SQLite),
    /// or that its lease was recovered.
    pub fn lease_check_interval(mut self, interval: Duration) -> Self {
        self.lease_check_interval = interval;
        self
    }

    /// The clock used for latencies, timers and periodic ticks (default: the
    /// system clock; use the store's clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Enqueues a periodic job's ticks (see [`PeriodicJob`]).
    pub fn periodic(mut self, job: PeriodicJob) -> Self {
        self.periodic.push(job);
        self
    }

    /// Runs retention sweeps (see [`RetentionPolicy`]).
    pub fn retention(mut self, policy: RetentionPolicy) -> Self {
        self.retention = Some(policy);
        self
    }

    /// Checks the settings. Errors (`invalid-worker-config`): zero slots, a zero
    /// interval or timeout, a `stale_after` under [`MIN_STALE_AFTER`] or under
    /// three heartbeat intervals, a queue cap below 1, an empty worker id, two
    /// periodic jobs with one name; `invalid-queue` for a bad queue name.
    pub fn build(self) -> Result<Worker, WorkerError> {
        let bad = |m: &str| Err(WorkerError::InvalidConfig(m.to_owned()));
        if let Some(e) = self.bad_queue {
            return Err(e.into());
        }
        let stale = self.stale_after;
        let heartbeat = self.heartbeat_interval.unwrap_or(stale / 6);
        let recovery = self.recovery_interval.unwrap_or(stale / 2);
        if self.concurrency == 0 || self.concurrency > u32::MAX as usize >> 4 {
            return bad("concurrency must be between 1 and 2^28");
        }
        if self.prefetch.max() > MAX_PREFETCH {
            return bad("prefetch must be at most 10,000");
        }
        if [
            stale,
            heartbeat,
            recovery,
            self.poll_interval,
            self.lease_check_interval,
        ]
        .contains(&Duration::ZERO)
            || self.job_timeout == Some(Duration::ZERO)
        {
            return bad("intervals and timeouts must be greater than zero");
        }
        if stale < MIN_STALE_AFTER {
            return bad("stale_after must be at least 1s (a heartbeat must fit in it)");
        }
        if heartbeat.saturating_mul(3) > stale {
            return bad("stale_after must be at least three heartbeat intervals");
        }
        if self
            .queue_config
            .values()
            .any(|c| matches!(c.max_concurrent, Some(n) if n < 1))
        {
            return bad("a queue's max_concurrent must be at least 1");
        }
        if self.fairness_weights.values().any(|w| *w < 1) {
            return bad("a fairness weight must be at least 1");
        }
        let worker_id = self
            .worker_id
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        if worker_id.trim().is_empty() {
            return bad("worker id must not be empty");
        }
        let mut names: Vec<&str> = self.periodic.iter().map(|p| p.name()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return bad("two periodic jobs share one name");
        }
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        Ok(Worker {
            store: self.store,
            registry: self.registry,
            clock: self.clock,
            events,
            config: WorkerConfig {
                worker_id,
                concurrency: self.concurrency,
                prefetch: self.prefetch,
                queues: self.queues,
                queue_config: self.queue_config,
                fairness_weights: self.fairness_weights,
                aging: self.aging,
                job_timeout: self.job_timeout,
                stale_after: stale,
                heartbeat_interval: heartbeat,
                recovery_interval: recovery,
                drain_timeout: self.drain_timeout,
                poll_interval: self.poll_interval,
                cancel_grace: self.cancel_grace,
                lease_check_interval: self.lease_check_interval,
                periodic: self.periodic,
                retention: self.retention,
            },
        })
    }
}
