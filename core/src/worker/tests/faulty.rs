//! A `MemoryStore` wrapper that fails chosen calls and announces heartbeats, for
//! the runtime's error paths and liveness duties.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::{broadcast, watch, Notify};

use super::running::fast;
use super::*;
use crate::driver::Lease;
use crate::requests::*;
use crate::workers::WorkerInfo;
use crate::{Error, Registry, Result, Store, WorkerStore};

struct Faulty {
    inner: MemoryStore,
    /// How many upcoming `claim` / `report_batch` calls fail.
    failing_claims: AtomicUsize,
    failing_reports: AtomicUsize,
    /// How many upcoming `report_and_claim` calls fail, and how many were made.
    failing_refills: AtomicUsize,
    refills: AtomicUsize,
    heartbeats: watch::Sender<u64>,
}

impl Faulty {
    fn new(inner: MemoryStore) -> Arc<Self> {
        Arc::new(Self {
            inner,
            failing_claims: AtomicUsize::new(0),
            failing_reports: AtomicUsize::new(0),
            failing_refills: AtomicUsize::new(0),
            refills: AtomicUsize::new(0),
            heartbeats: watch::channel(0).0,
        })
    }
}

fn take_failure(counter: &AtomicUsize) -> Result<()> {
    match counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)) {
        Ok(_) => Err(Error::Busy {
            message: "injected failure".into(),
        }),
        Err(_) => Ok(()),
    }
}

crate::driver::delegate_store!(impl Producer, Inspect, Operate, MailOperations for Faulty => inner);

#[async_trait]
impl WorkerStore for Faulty {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        take_failure(&self.failing_claims)?;
        self.inner.claim(req).await
    }
    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        take_failure(&self.failing_reports)?;
        self.inner.report_batch(reports).await
    }
    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        self.refills.fetch_add(1, Ordering::SeqCst);
        take_failure(&self.failing_refills)?;
        self.inner.report_and_claim(reports, req).await
    }
    async fn heartbeat(&self, worker_id: &str) -> Result<()> {
        self.inner.heartbeat(worker_id).await?;
        self.heartbeats.send_modify(|n| *n += 1);
        Ok(())
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
    async fn age_priorities(&self, pass: &crate::driver::AgingPass) -> Result<u64> {
        self.inner.age_priorities(pass).await
    }

    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>> {
        self.inner.recover_stale(stale_after_ms).await
    }
    async fn lease_states(&self, ids: &[String]) -> Result<Vec<LeaseState>> {
        self.inner.lease_states(ids).await
    }
    fn subscribe_cancellations(&self) -> broadcast::Receiver<String> {
        self.inner.subscribe_cancellations()
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

#[tokio::test]
async fn claim_and_report_errors_are_retried() {
    let faulty = Faulty::new(MemoryStore::new());
    faulty.failing_claims.store(2, Ordering::SeqCst);
    faulty.failing_reports.store(2, Ordering::SeqCst);
    let store: Arc<dyn Store> = faulty.clone();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let id = enqueue(&store, "noop", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let f = next_finished(&mut events).await;
    assert_eq!((f.job_id.as_str(), f.accepted), (id.as_str(), true));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.completed, report.unreported), (1, 0));
    assert_eq!(faulty.failing_claims.load(Ordering::SeqCst), 0);
    assert_eq!(faulty.failing_reports.load(Ordering::SeqCst), 0);
    assert_eq!(job(&store, &id).await.status, crate::JobStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_is_refilled_with_the_reports_and_a_failed_refill_falls_back() {
    let faulty = Faulty::new(MemoryStore::new());
    faulty.failing_refills.store(1, Ordering::SeqCst);
    let store: Arc<dyn Store> = faulty.clone();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(enqueue(&store, "noop", json!([i]), EnqueueOptions::new()).await);
    }
    // Exactly the slots, one call at a time: every job after the first two
    // comes by a refill (claiming ahead would take them by plain claims).
    let worker = fast(store.clone(), registry)
        .concurrency(2)
        .prefetch(0)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let done = finished(&mut events, 20).await;
    let report = handle.shutdown_and_join().await.unwrap();
    assert!(done.iter().all(|f| f.accepted));
    assert_eq!((report.claimed, report.completed), (20, 20));
    // Two slots and twenty queued jobs: reports refill the slots they free.
    assert!(faulty.refills.load(Ordering::SeqCst) >= 2);
    assert_eq!(
        faulty.failing_refills.load(Ordering::SeqCst),
        0,
        "one refill failed"
    );
    for id in &ids {
        assert_eq!(job(&store, id).await.status, crate::JobStatus::Completed);
    }
}

#[tokio::test]
async fn heartbeats_keep_a_long_job_from_being_recovered() {
    let clock = ManualClock::new(1_700_000_000_000);
    let faulty = Faulty::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let store: Arc<dyn Store> = faulty.clone();
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("long", move |_c, _a| {
            let gate = g.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .unwrap();
    let id = enqueue(&store, "long", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .stale_after(Duration::from_secs(1))
        .heartbeat_interval(Duration::from_millis(10))
        .recovery_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    // Time passes beyond the stale timeout; the worker's next heartbeat refreshes it.
    // (Two beats: the first may have read the clock before it moved.)
    clock.advance(5_000);
    let mut beats = faulty.heartbeats.subscribe();
    let seen = *beats.borrow_and_update();
    tokio::time::timeout(PATIENCE, beats.wait_for(|n| *n > seen + 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store.recover_stale(1_000).await.unwrap(),
        Vec::<String>::new()
    );
    gate.notify_one();
    let f = next_finished(&mut events).await;
    assert_eq!((f.job_id, f.accepted), (id, true));
    handle.shutdown_and_join().await.unwrap();
}
