//! Retention sweeps: terminal jobs are history, and history grows without bound
//! unless something deletes it. Any worker may run the sweep; `Operate::prune` works
//! in batches (each its own transaction), so concurrent sweeps from several
//! processes only share the work. Idempotency ownership, operation rows and
//! schedule high-water marks are never pruned (the store guarantees it).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::events::{Telemetry, WorkerEvent};
use super::periodic::wait_or_stop;
use crate::requests::PruneRequest;
use crate::store::Operate;

/// How long terminal jobs are kept, and how often a worker sweeps.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::worker::RetentionPolicy;
/// let policy = RetentionPolicy::new(Duration::from_secs(600))
///     .completed(Duration::from_secs(24 * 3600))
///     .failed(Duration::from_secs(7 * 24 * 3600));
/// assert_eq!(policy.prune_request().completed_older_than, Some(Duration::from_secs(86_400)));
/// assert_eq!(policy.prune_request().cancelled_older_than, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    interval: Duration,
    completed: Option<Duration>,
    failed: Option<Duration>,
    cancelled: Option<Duration>,
    batch_size: usize,
}

impl RetentionPolicy {
    /// Sweeps every `interval` (the first sweep runs at start); keeps everything
    /// until a TTL is set.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            completed: None,
            failed: None,
            cancelled: None,
            batch_size: 1_000,
        }
    }

    /// Deletes `completed` jobs older than `ttl`.
    pub fn completed(mut self, ttl: Duration) -> Self {
        self.completed = Some(ttl);
        self
    }

    /// Deletes `failed` and `orphaned` jobs older than `ttl`.
    pub fn failed(mut self, ttl: Duration) -> Self {
        self.failed = Some(ttl);
        self
    }

    /// Deletes `cancelled` jobs older than `ttl`.
    pub fn cancelled(mut self, ttl: Duration) -> Self {
        self.cancelled = Some(ttl);
        self
    }

    /// Rows per transaction (default 1000, at least 1).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// The sweep interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The request each sweep sends to [`crate::Operate::prune`].
    pub fn prune_request(&self) -> PruneRequest {
        PruneRequest {
            completed_older_than: self.completed,
            failed_older_than: self.failed,
            cancelled_older_than: self.cancelled,
            batch_size: self.batch_size,
        }
    }

    fn is_noop(&self) -> bool {
        self.completed.is_none() && self.failed.is_none() && self.cancelled.is_none()
    }
}

/// Sweeps on `policy.interval` until `stopping` turns true.
pub(crate) async fn run_retention(
    policy: RetentionPolicy,
    store: Arc<dyn Operate>,
    telemetry: Arc<Telemetry>,
    mut stopping: watch::Receiver<bool>,
) {
    if policy.is_noop() {
        return;
    }
    let request = policy.prune_request();
    loop {
        match store.prune(&request).await {
            Ok(report) if report.deleted > 0 => {
                Telemetry::add(&telemetry.pruned, report.deleted);
                tracing::info!(
                    deleted = report.deleted,
                    batches = report.batches,
                    "retention sweep"
                );
                telemetry.emit(WorkerEvent::Pruned {
                    deleted: report.deleted,
                });
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("retention sweep failed: {e}"),
        }
        if wait_or_stop(&mut stopping, policy.interval).await {
            return;
        }
    }
}
