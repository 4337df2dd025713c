//! The property suite must have teeth: a `MemoryStore` wrapped with one planted
//! bug at a time has to be caught (the suite panics) within the default case
//! budget. If a generator change stops exercising an area, one of these fails.

use std::sync::Arc;

use async_trait::async_trait;
use duraq_core::driver::*;
use duraq_core::inspect::*;
use duraq_core::*;
use duraq_tests::{MemoryFactory, StoreFactory};
use tokio::sync::watch;

#[derive(Clone, Copy, Debug)]
enum Bug {
    /// Claims at most one job whatever the limit.
    ClaimLimitOne,
    /// Reports under any lease claim success.
    ReportAlwaysTrue,
    /// Recovers only leases ten times staler than asked.
    LaxRecovery,
    /// Deletes everything in one batch.
    PruneOneBatch,
    /// Operator retry answers `job-not-found` for every job.
    RetryNotFound,
    /// Claims take jobs of paused queues too (the pause still shows in snapshots).
    ClaimIgnoresPause,
    /// Completions drop the handler's output.
    OutputDropped,
}

struct Buggy {
    inner: Arc<dyn Store>,
    bug: Bug,
}

struct BuggyFactory(Bug);

#[async_trait]
impl StoreFactory for BuggyFactory {
    async fn new_store(&self, clock: ManualClock) -> Arc<dyn Store> {
        Arc::new(Buggy {
            inner: MemoryFactory.new_store(clock).await,
            bug: self.0,
        })
    }
}

delegate_store!(impl Producer, Inspect, MailOperations for Buggy => inner);

/// Claims, reports and recovery carry the bugs. `report_and_claim`,
/// `lost_leases` and `subscribe_cancellations` keep their defaults: a refill
/// goes through the buggy `report_batch` and `claim`.
#[async_trait]
impl WorkerStore for Buggy {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        match self.bug {
            Bug::ClaimLimitOne => {
                self.inner
                    .claim(&ClaimRequest {
                        limit: req.limit.min(1),
                        ..req.clone()
                    })
                    .await
            }
            Bug::ClaimIgnoresPause => {
                let paused: Vec<QueueName> = (self.inner.queue_snapshot().await?.queues)
                    .into_iter()
                    .filter(|q| q.paused)
                    .map(|q| QueueName::new(q.queue).expect("stored queue names are valid"))
                    .collect();
                for queue in &paused {
                    self.inner.resume_queue(queue).await?;
                }
                let claimed = self.inner.claim(req).await;
                for queue in &paused {
                    self.inner.pause_queue(queue).await?;
                }
                claimed
            }
            _ => self.inner.claim(req).await,
        }
    }
    async fn report_batch(&self, mut reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        if matches!(self.bug, Bug::OutputDropped) {
            for (_, outcome) in &mut reports {
                if matches!(outcome, Outcome::CompletedWith { .. }) {
                    *outcome = Outcome::Completed;
                }
            }
        }
        let applied = self.inner.report_batch(reports).await?;
        Ok(applied
            .into_iter()
            .map(|a| a || matches!(self.bug, Bug::ReportAlwaysTrue))
            .collect())
    }
    async fn heartbeat(&self, worker_id: &str) -> Result<()> {
        self.inner.heartbeat(worker_id).await
    }
    async fn register_worker(&self, info: &WorkerInfo) -> Result<()> {
        self.inner.register_worker(info).await
    }
    async fn remove_worker(&self, worker_id: &str) -> Result<bool> {
        self.inner.remove_worker(worker_id).await
    }
    async fn expire_due(&self, limit: usize) -> Result<Vec<String>> {
        self.inner.expire_due(limit).await
    }
    async fn age_priorities(&self, pass: &duraq_core::driver::AgingPass) -> Result<u64> {
        self.inner.age_priorities(pass).await
    }

    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>> {
        let factor = if matches!(self.bug, Bug::LaxRecovery) {
            10
        } else {
            1
        };
        self.inner.recover_stale(stale_after_ms * factor).await
    }
    async fn lease_states(&self, ids: &[String]) -> Result<Vec<duraq_core::driver::LeaseState>> {
        self.inner.lease_states(ids).await
    }
    async fn next_scheduled_at(
        &self,
        names: &[String],
        queues: Option<&[String]>,
    ) -> Result<Option<i64>> {
        self.inner.next_scheduled_at(names, queues).await
    }
    fn work_signal(&self) -> watch::Receiver<u64> {
        self.inner.work_signal()
    }
    async fn settle_release_backlog(&self, max_steps: usize) -> Result<BacklogProgress> {
        self.inner.settle_release_backlog(max_steps).await
    }
    fn release_backlog_signal(&self) -> watch::Receiver<u64> {
        self.inner.release_backlog_signal()
    }
}

#[async_trait]
impl Operate for Buggy {
    async fn retry_job(&self, id: &str) -> Result<Job> {
        match self.bug {
            Bug::RetryNotFound => Err(Error::job_not_found(id)),
            _ => self.inner.retry_job(id).await,
        }
    }
    async fn cancel_job(&self, id: &str) -> Result<Job> {
        self.inner.cancel_job(id).await
    }
    async fn act_on_jobs(&self, action: BulkAction, ids: &[String]) -> Result<BulkBatch> {
        self.inner.act_on_jobs(action, ids).await
    }
    async fn pause_queue(&self, queue: &QueueName) -> Result<bool> {
        self.inner.pause_queue(queue).await
    }
    async fn resume_queue(&self, queue: &QueueName) -> Result<bool> {
        self.inner.resume_queue(queue).await
    }
    async fn prune(&self, req: &PruneRequest) -> Result<PruneReport> {
        match self.bug {
            Bug::PruneOneBatch => {
                self.inner
                    .prune(&PruneRequest {
                        batch_size: usize::MAX,
                        ..req.clone()
                    })
                    .await
            }
            _ => self.inner.prune(req).await,
        }
    }
    async fn reconcile_reservations(&self) -> Result<u64> {
        self.inner.reconcile_reservations().await
    }
    async fn record_history(&self) -> Result<bool> {
        self.inner.record_history().await
    }
}

/// Whether the suite rejects a store with `bug` (its report is silenced). The
/// sequences come from a fixed seed; 128 cases give every planted bug room to
/// show even as the generator grows new options (at 64, adding priorities, rate
/// limits and worker registrations moved LaxRecovery out of reach).
fn caught(bug: Bug) -> bool {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result =
        std::panic::catch_unwind(|| duraq_tests::model::check_with(BuggyFactory(bug), 128, true));
    std::panic::set_hook(hook);
    result.is_err()
}

#[test]
fn planted_bugs_are_caught() {
    for bug in [
        Bug::ClaimLimitOne,
        Bug::ReportAlwaysTrue,
        Bug::LaxRecovery,
        Bug::PruneOneBatch,
        Bug::RetryNotFound,
        Bug::ClaimIgnoresPause,
        Bug::OutputDropped,
    ] {
        assert!(caught(bug), "the property suite missed {bug:?}");
    }
}
