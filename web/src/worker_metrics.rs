//! [`WorkerMetrics`]: a worker's Prometheus metrics, fed by its events.
//!
//! The worker runtime already broadcasts what it does ([`WorkerEvent`]); this
//! collector turns those events into the usual series, so the runtime itself
//! stays free of any metrics crate. Events are best-effort (a subscriber that
//! falls 4,096 events behind misses some); the running gauge is clamped to
//! `0..=slots` so a missed event cannot make it absurd. Each family's series
//! come in label order (`Sorted`), the same at every scrape.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use duraq_core::driver::LeaseLoss;
use duraq_core::worker::WorkerEvent;
use duraq_core::Outcome;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio::sync::broadcast;

use crate::series::{Label, Sorted};

type Name = [Label; 1];
type NameOutcome = [Label; 2];

/// A worker's metrics: attempts by job name and outcome, run time and wait time
/// histograms, slot utilization (`duraq_worker_slot_utilization_ratio`). Cheap
/// to clone (shared).
///
/// ```
/// use duraq_web::WorkerMetrics;
/// let metrics = WorkerMetrics::new(10);
/// let text = metrics.render();
/// assert!(text.contains("duraq_worker_slots 10"));
/// ```
#[derive(Clone)]
pub struct WorkerMetrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    attempts: Sorted<NameOutcome, Counter>,
    run_time: Sorted<Name, Histogram>,
    wait_time: Sorted<Name, Histogram>,
    running: Gauge,
    slots: i64,
    utilization: Gauge<f64, AtomicU64>,
    /// Running jobs this worker learned were cancelled, until their attempt ends.
    cancelled: std::sync::Mutex<std::collections::HashSet<String>>,
}

fn run_buckets() -> Histogram {
    // 1 ms … about 70 min.
    Histogram::new(exponential_buckets(0.001, 4.0, 12))
}

fn wait_buckets() -> Histogram {
    // 5 ms … about 6 h.
    Histogram::new(exponential_buckets(0.005, 4.0, 12))
}

impl WorkerMetrics {
    /// Metrics for a worker with `slots` slots (its concurrency).
    pub fn new(slots: usize) -> Self {
        let mut registry = Registry::default();
        let attempts = Sorted::<NameOutcome, Counter>::default();
        let run_time = Sorted::new(run_buckets);
        let wait_time = Sorted::new(wait_buckets);
        let running = Gauge::default();
        let slots_gauge = Gauge::<i64>::default();
        let utilization = Gauge::<f64, AtomicU64>::default();
        let slots = i64::try_from(slots).unwrap_or(i64::MAX);
        slots_gauge.set(slots);
        registry.register(
            "duraq_attempts",
            "Attempts this worker finished, by job name and outcome (completed, failed, rescheduled, returned_to_queue, cancelled, lost_lease)",
            attempts.clone(),
        );
        registry.register(
            "duraq_job_run_seconds",
            "How long handlers ran, by job name",
            run_time.clone(),
        );
        registry.register(
            "duraq_job_wait_seconds",
            "From the moment a job was due to the start of its attempt, by job name",
            wait_time.clone(),
        );
        registry.register("duraq_worker_running", "Jobs running now", running.clone());
        registry.register(
            "duraq_worker_slots",
            "Jobs this worker runs at once at most",
            slots_gauge,
        );
        registry.register(
            "duraq_worker_slot_utilization_ratio",
            "Running jobs divided by slots (0 to 1)",
            utilization.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                attempts,
                run_time,
                wait_time,
                running,
                slots,
                utilization,
                cancelled: Default::default(),
            }),
        }
    }

    /// Counts one event.
    pub fn observe(&self, event: &WorkerEvent) {
        let m = &self.inner;
        match event {
            WorkerEvent::Started(started) => {
                let wait = started.latency_ms.max(0) as f64 / 1000.0;
                m.wait_time
                    .with([("job_name", started.job_name.as_str().into())], |h| {
                        h.observe(wait)
                    });
                self.set_running(m.running.get() + 1);
            }
            WorkerEvent::LeaseLost {
                job_id,
                loss: LeaseLoss::Cancelled,
            } => {
                self.cancelled_jobs().insert(job_id.clone());
            }
            WorkerEvent::Finished(finished) => {
                let was_cancelled = self.cancelled_jobs().remove(&finished.job_id);
                let outcome = match (&finished.outcome, finished.accepted) {
                    (_, false) if was_cancelled => "cancelled",
                    (_, false) => "lost_lease",
                    (Outcome::Completed | Outcome::CompletedWith { .. }, true) => "completed",
                    (Outcome::Failed { .. }, true) => "failed",
                    (Outcome::Reschedule { .. } | Outcome::AwaitSignal { .. }, true) => {
                        "rescheduled"
                    }
                    (Outcome::ReturnToQueue, true) => "returned_to_queue",
                };
                let name = finished.job_name.clone();
                m.attempts.with(
                    [
                        ("job_name", name.as_str().into()),
                        ("outcome", outcome.into()),
                    ],
                    |c| {
                        c.inc();
                    },
                );
                m.run_time.with([("job_name", name.into())], |h| {
                    h.observe(finished.duration.as_secs_f64())
                });
                self.set_running(m.running.get() - 1);
            }
            _ => {}
        }
    }

    fn cancelled_jobs(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.inner
            .cancelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_running(&self, n: i64) {
        let m = &self.inner;
        let n = n.clamp(0, m.slots);
        m.running.set(n);
        m.utilization.set(if m.slots > 0 {
            n as f64 / m.slots as f64
        } else {
            0.0
        });
    }

    /// Observes every event of `events` until the worker stops (spawns a task).
    pub fn follow(
        &self,
        mut events: broadcast::Receiver<WorkerEvent>,
    ) -> tokio::task::JoinHandle<()> {
        let metrics = self.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => metrics.observe(&event),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        })
    }

    /// The OpenMetrics text of these metrics alone (with `# EOF`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.encode_into(&mut out);
        let _ = prometheus_client::encoding::text::encode_eof(&mut out);
        out
    }

    /// Appends the series without `# EOF` (for a combined exposition).
    pub(crate) fn encode_into(&self, out: &mut String) {
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.inner.registry);
    }
}

impl std::fmt::Debug for WorkerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerMetrics")
            .field("slots", &self.inner.slots)
            .finish()
    }
}
