//! `MemoryStore`: the reference model of the `Store` contract.
//!
//! Small and obviously correct rather than fast: one mutex around plain maps, every
//! rule applied through [`crate::transitions`], every call atomic (batch calls work
//! on a copy that replaces the state only on success). The property suite runs the
//! same operations here and on a real store and demands identical answers.

mod dependencies;
mod enqueue;
mod history;
mod keys;
mod lifecycle;
mod progress;
mod signals;
mod steps;
mod store_impl;
mod workers;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, watch};

use crate::clock::{system_clock, Clock};
use crate::counts::{CountChange, CountDelta};
use crate::job::Job;
use crate::requests::Operation;

/// Reservation count of one concurrency key.
#[derive(Clone, Debug, Default)]
struct Cap {
    max: i64,
    active: i64,
}

/// Everything a database would hold.
#[derive(Clone, Debug, Default)]
struct State {
    jobs: BTreeMap<String, Job>,
    /// job id → the concurrency key whose reservation it holds.
    reservations: HashMap<String, String>,
    caps: HashMap<String, Cap>,
    /// scope digest → (request digest, job id). Never pruned.
    idempotency: HashMap<String, (String, String)>,
    /// schedule key → owning job id.
    owners: HashMap<String, String>,
    /// schedule key → highest `scheduleOrder` handed out. Never pruned.
    high_water: HashMap<String, i64>,
    heartbeats: HashMap<String, i64>,
    /// Registered workers: id → (registration, `startedAtMs`); the heartbeat is
    /// in `heartbeats`, as in the stores' one `duraq_workers` row.
    workers: BTreeMap<String, (crate::workers::WorkerInfo, i64)>,
    operations: HashMap<String, Operation>,
    counts: [i64; crate::job::STATUS_COUNT],
    /// queue → counts per status (all-zero entries are kept, like the stores' rows).
    queue_counts: BTreeMap<String, [i64; crate::job::STATUS_COUNT]>,
    /// Rate key → (max, period ms) it was registered with. Never pruned.
    rate_limits: HashMap<String, (i64, i64)>,
    /// Rate key → logged start times (`duraq_rate_starts` in the stores).
    rate_starts: HashMap<String, Vec<i64>>,
    /// Paused queue → when it was paused (`duraq_paused_queues` in the stores).
    paused: BTreeMap<String, i64>,
    /// queue → monotonic outcome totals (extra columns of the stores' per-queue
    /// counter rows).
    queue_totals: BTreeMap<String, crate::history::OutcomeTotals>,
    /// (minute, queue) → sampled totals (`duraq_history` in the stores).
    history: BTreeMap<(i64, String), crate::history::OutcomeTotals>,
    /// job id → its progress and newest log lines (`duraq_job_progress` and
    /// `duraq_job_logs` in the stores); deleted with the job.
    progress: BTreeMap<String, progress::Stored>,
    /// job id → its durable step records (`duraq_job_steps` in the stores);
    /// deleted with the job.
    steps: BTreeMap<String, Vec<crate::durable::StepRecord>>,
    /// job id → the signals delivered to it (`duraq_job_signals` in the
    /// stores); deleted with the job.
    signals: BTreeMap<String, Vec<crate::durable::SignalRecord>>,
    /// job id → its release backlog entry (`duraq_release_backlog` in the
    /// stores); dropped when the job is retried, reopened or deleted.
    release_backlog: BTreeMap<String, crate::rules::BacklogEntry>,
    /// A mutation put a backlog entry: [`MemoryStore::commit`] signals it.
    backlog_news: bool,
    revision: i64,
}

impl State {
    fn release_reservation(&mut self, job_id: &str) {
        if let Some(key) = self.reservations.remove(job_id) {
            let cost = self.jobs.get(job_id).map_or(1, |j| j.cost);
            if let Some(cap) = self.caps.get_mut(&key) {
                cap.active = (cap.active - cost).max(0);
            }
        }
    }

    /// Drops the key's ownership if (and only if) it still points at `job`.
    fn release_owner(&mut self, job_id: &str) {
        let key = self.jobs.get(job_id).and_then(|j| j.schedule_key.clone());
        if let Some(key) = key {
            if self.owners.get(&key).map(String::as_str) == Some(job_id) {
                self.owners.remove(&key);
            }
        }
    }
}

/// The in-memory reference store. Cloning shares the same data.
///
/// ```
/// use duraq_core::{ManualClock, MemoryStore};
/// let store = MemoryStore::with_clock(std::sync::Arc::new(ManualClock::new(0)));
/// # let _ = store;
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    clock: Arc<dyn Clock>,
    deltas: broadcast::Sender<CountDelta>,
    work: Arc<watch::Sender<u64>>,
    /// Moves when a mutation leaves a release backlog entry.
    backlog: Arc<watch::Sender<u64>>,
    /// Running jobs cancelled through this store (see `subscribe_cancellations`).
    cancels: broadcast::Sender<String>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(system_clock())
    }

    /// An empty store on `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Arc::default(),
            clock,
            deltas: broadcast::channel(1024).0,
            work: Arc::new(watch::channel(0).0),
            backlog: Arc::new(watch::channel(0).0),
            cancels: broadcast::channel(1024).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Applies a finished mutation's count change: one revision, one delta;
    /// signals a release backlog entry it left.
    fn commit(&self, st: &mut State, change: CountChange) {
        if std::mem::take(&mut st.backlog_news) {
            self.backlog.send_modify(|n| *n = n.wrapping_add(1));
        }
        if change.is_zero() {
            return;
        }
        st.revision += 1;
        for (count, delta) in st.counts.iter_mut().zip(change.per_status()) {
            *count += delta;
        }
        for (queue, deltas, totals) in change.per_queue_with_totals() {
            let counts = st.queue_counts.entry(queue.to_owned()).or_default();
            for (count, delta) in counts.iter_mut().zip(deltas) {
                *count += delta;
            }
            let sum = st.queue_totals.entry(queue.to_owned()).or_default();
            *sum = *sum + totals;
        }
        let _ = self.deltas.send(change.to_delta(st.revision));
    }

    fn signal_work(&self) {
        self.work.send_modify(|n| *n = n.wrapping_add(1));
    }
}
