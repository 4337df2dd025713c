//! `ctx.progress` and `ctx.log` through a real worker: the writes a tight
//! loop makes are bounded by the throttle, the last line survives the
//! job's completion, and a job that says nothing costs no store call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::{broadcast, watch};

use super::running::fast;
use super::*;
use crate::driver::{Lease, ProgressBatch};
use crate::limits::{MAX_LOG_LINES, PROGRESS_FLUSH_INTERVAL_MS};
use crate::requests::*;
use crate::workers::WorkerInfo;
use crate::{ErrorCode, JobError, JobResult, JobStatus, Registry, Result, WorkerStore};

/// A `MemoryStore` that counts `record_progress` calls; forwards the rest.
struct Counting {
    inner: MemoryStore,
    writes: AtomicUsize,
}

crate::driver::delegate_store!(impl Producer, Inspect, Operate, MailOperations for Counting => inner);

#[async_trait]
impl WorkerStore for Counting {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        self.inner.claim(req).await
    }
    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        self.inner.report_batch(reports).await
    }
    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        self.inner.report_and_claim(reports, req).await
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
    async fn record_progress(&self, batch: ProgressBatch) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.record_progress(batch).await
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

fn counting() -> Arc<Counting> {
    Arc::new(Counting {
        inner: MemoryStore::new(),
        writes: AtomicUsize::new(0),
    })
}

/// Runs the one enqueued job `name` to its end on a worker; returns its id.
async fn run_one(store: Arc<dyn Store>, registry: Registry, name: &str) -> String {
    let id = enqueue(&store, name, json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let f = next_finished(&mut events).await;
    assert!(f.accepted);
    handle.shutdown_and_join().await.unwrap();
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tight_loop_of_a_million_lines_makes_bounded_writes_and_keeps_the_last() {
    let counting = counting();
    let store: Arc<dyn Store> = counting.clone();
    let registry = Registry::new()
        .register_fn("chatty", |ctx, _a| async move {
            for i in 0..1_000_000 {
                ctx.log(format!("line {i}"));
            }
            ctx.progress(1.0, "all lines said")?;
            Ok(JobResult::Completed)
        })
        .unwrap();
    let started = Instant::now();
    let id = run_one(store.clone(), registry, "chatty").await;
    // An upper bound of the time from the first call to the last write.
    let spent_ms = started.elapsed().as_millis() as i64;
    let writes = counting.writes.load(Ordering::SeqCst) as i64;
    // One write per elapsed interval at most, plus the final one.
    assert!(writes >= 1);
    assert!(
        writes <= spent_ms / PROGRESS_FLUSH_INTERVAL_MS + 1,
        "{writes} writes in {spent_ms} ms"
    );
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
    let p = store.job_progress(&id).await.unwrap().expect("stored");
    assert_eq!(p.lines_total, 1_000_000);
    assert_eq!(p.logs.len(), MAX_LOG_LINES);
    assert_eq!(p.logs.last().unwrap().line, "line 999999");
    assert_eq!(p.logs.first().unwrap().seq, 999_901);
    assert_eq!(
        (p.fraction, p.message.as_deref()),
        (Some(1.0), Some("all lines said"))
    );
}

#[tokio::test]
async fn the_last_line_survives_completion_and_a_bad_fraction_is_refused() {
    let counting = counting();
    let store: Arc<dyn Store> = counting.clone();
    let registry = Registry::new()
        .register_fn("short", |ctx, _a| async move {
            ctx.log("first");
            ctx.progress(0.5, "half")?;
            let refused = ctx.progress(f64::NAN, "never").unwrap_err();
            if refused.code() != ErrorCode::InvalidProgress {
                return Err(JobError::new("wrong code").discard());
            }
            ctx.log("last\nline");
            Ok(JobResult::Completed)
        })
        .unwrap();
    let id = run_one(store.clone(), registry, "short").await;
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
    let p = store.job_progress(&id).await.unwrap().expect("stored");
    let lines: Vec<&str> = p.logs.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(lines, ["first", "last line"]);
    assert!(p.logs.iter().all(|l| l.attempt == 1));
    assert_eq!(
        (p.fraction, p.message.as_deref()),
        (Some(0.5), Some("half"))
    );
    assert!(counting.writes.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn a_job_that_says_nothing_makes_no_progress_call() {
    let counting = counting();
    let store: Arc<dyn Store> = counting.clone();
    let registry = Registry::new()
        .register_fn("quiet", |_c, _a| async { Ok(()) })
        .unwrap();
    let id = run_one(store.clone(), registry, "quiet").await;
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
    assert_eq!(counting.writes.load(Ordering::SeqCst), 0);
    assert_eq!(store.job_progress(&id).await.unwrap(), None);
}
