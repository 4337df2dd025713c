//! The per-case harness: a fresh store, its manual clock, and small helpers that
//! keep each case about the rule it checks instead of about plumbing. Helpers
//! panic with a message on unexpected errors; cases assert on what they return.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duraq_core::driver::{ClaimRequest, Lease};
use duraq_core::inspect::{CountDelta, CountSnapshot, JobFilter};
use duraq_core::{
    EnqueueOptions, EnqueueOutcome, Error, ErrorCode, Job, JobStatus, ManualClock, NewJob, Outcome,
    ReplaceOutcome, Result, ScheduleKey, Store,
};
use serde_json::Value;
use tokio::sync::broadcast::Receiver;

/// The instant every case's clock starts at (2023-11-14T22:13:20Z).
pub const T0: i64 = 1_700_000_000_000;

/// Makes fresh, empty stores for the suites. Implemented once per backend.
#[async_trait]
pub trait StoreFactory: Send + Sync + 'static {
    /// A fresh, empty store that reads `clock` for every "now". Called once per
    /// conformance case and once per property-test case (twice per case is fine).
    async fn new_store(&self, clock: ManualClock) -> Arc<dyn Store>;

    /// A second, newly opened handle on the database of the store this factory
    /// made last, reading `clock` (what a restarted or another process would
    /// open), for cases about durability. `None` (the default) for a store that
    /// lives only in its process, such as `MemoryStore`.
    async fn reopen(&self, _clock: ManualClock) -> Option<Arc<dyn Store>> {
        None
    }
}

/// Runs a future on a fresh tokio runtime (what each generated test does).
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

/// What a failed call must leave untouched: the snapshot (counts + revision) and
/// every job row.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreState {
    pub snapshot: CountSnapshot,
    pub jobs: Vec<Job>,
}

/// One case's store and clock.
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub clock: ManualClock,
    _factory: Box<dyn StoreFactory>,
}

/// The wire form of the timing and timeout options (milliseconds, as the CLI and
/// JSON producers fill them). The conformance suite speaks it because it checks
/// the stores' rules on exactly what reaches them, including values the typed
/// builders cannot express (negative or out-of-range milliseconds).
pub trait WireOptions {
    /// Sets `scheduledAtMs`.
    fn scheduled_at_ms(self, ms: i64) -> Self;
    /// Sets `runInMs` (and nothing else).
    fn run_in_ms(self, ms: i64) -> Self;
    /// Sets `timeoutMs`.
    fn timeout_ms(self, ms: i64) -> Self;
}

impl WireOptions for EnqueueOptions {
    fn scheduled_at_ms(mut self, ms: i64) -> Self {
        self.scheduled_at_ms = Some(ms);
        self
    }
    fn run_in_ms(mut self, ms: i64) -> Self {
        self.run_in_ms = Some(ms);
        self
    }
    fn timeout_ms(mut self, ms: i64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
}

/// A valid job (panics on invalid input: cases that test validation call `NewJob::new`).
pub fn job(name: &str, args: Value, opts: EnqueueOptions) -> NewJob {
    NewJob::new(name, args, opts).expect("valid job")
}

/// A valid schedule key.
pub fn key(k: &str) -> ScheduleKey {
    ScheduleKey::new(k).expect("valid schedule key")
}

/// A claim request for `names` with no queue config.
pub fn claim_req(worker: &str, names: &[&str], limit: usize) -> ClaimRequest {
    ClaimRequest {
        worker_id: worker.to_owned(),
        job_names: names.iter().map(|n| n.to_string()).collect(),
        limit,
        ..ClaimRequest::default()
    }
}

/// The lease of a handed-off job.
pub fn lease(job: &Job) -> Lease {
    job.lease()
        .unwrap_or_else(|| panic!("job {} has no lease ({})", job.id, job.status))
}

/// The next count delta. Stores that publish after commit from another task (NOTIFY
/// on PostgreSQL) may deliver it a moment after the call returned, so this waits
/// up to five seconds; in-process stores have it ready at once.
pub async fn next_delta(rx: &mut Receiver<CountDelta>, after_what: &str) -> CountDelta {
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Ok(delta)) => delta,
        Ok(Err(e)) => panic!("delta stream broken after {after_what}: {e}"),
        Err(_) => panic!("no count delta within 5 s after {after_what}"),
    }
}

/// Asserts `result` failed with `code` and returns the error.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(result: Result<T>, code: ErrorCode) -> Error {
    match result {
        Ok(v) => panic!("expected error {code}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.code(), code, "wrong error code: {e:?}");
            e
        }
    }
}

/// Asserts an [`Error::Invalid`] with `code`.
#[track_caller]
pub fn expect_invalid<T: std::fmt::Debug>(result: Result<T>, code: ErrorCode) {
    let e = expect_err(result, code);
    assert!(
        matches!(e, Error::Invalid { .. }),
        "expected Error::Invalid, got {e:?}"
    );
}

/// Asserts an [`Error::Conflict`] with `code`.
#[track_caller]
pub fn expect_conflict<T: std::fmt::Debug>(result: Result<T>, code: ErrorCode) {
    let e = expect_err(result, code);
    assert!(
        matches!(e, Error::Conflict { .. }),
        "expected Error::Conflict, got {e:?}"
    );
}

/// Asserts an [`Error::NotFound`] with `code`.
#[track_caller]
pub fn expect_not_found<T: std::fmt::Debug>(result: Result<T>, code: ErrorCode) {
    let e = expect_err(result, code);
    assert!(
        matches!(e, Error::NotFound { .. }),
        "expected Error::NotFound, got {e:?}"
    );
}

impl Harness {
    /// A fresh store from `factory` with its clock at [`T0`].
    pub async fn new<F: StoreFactory>(factory: F) -> Self {
        let clock = ManualClock::new(T0);
        let store = factory.new_store(clock.clone()).await;
        Self {
            store,
            clock,
            _factory: Box::new(factory),
        }
    }

    pub fn now(&self) -> i64 {
        duraq_core::Clock::now_ms(&self.clock)
    }

    /// A second handle on this case's database, opened anew on the same clock
    /// (see [`StoreFactory::reopen`]); `None` for in-process stores.
    pub async fn reopen(&self) -> Option<Arc<dyn Store>> {
        self._factory.reopen(self.clock.clone()).await
    }

    pub fn advance(&self, ms: i64) {
        self.clock.advance(ms);
    }

    /// A worker on the case's store and clock that runs `registry` (driven
    /// by `Worker::run_due`).
    pub fn worker(&self, registry: duraq_core::Registry) -> duraq_core::Worker {
        let clock: Arc<dyn duraq_core::Clock> = Arc::new(self.clock.clone());
        duraq_core::Worker::builder(self.store.clone(), registry)
            .clock(clock)
            .build()
            .expect("worker")
    }

    /// Enqueues and returns the outcome.
    pub async fn enqueue_with(
        &self,
        name: &str,
        args: Value,
        opts: EnqueueOptions,
    ) -> EnqueueOutcome {
        self.store
            .enqueue(job(name, args, opts))
            .await
            .expect("enqueue")
    }

    /// Enqueues a plain job and returns its id, asserting it was created.
    pub async fn enqueue(&self, name: &str, args: Value) -> String {
        match self.enqueue_with(name, args, EnqueueOptions::new()).await {
            EnqueueOutcome::Created(id) => id,
            other => panic!("expected Created, got {other:?}"),
        }
    }

    /// Enqueues `new` and asserts it was created under its own id.
    pub async fn insert(&self, new: NewJob) -> String {
        let id = new.id().to_owned();
        assert_eq!(
            self.store.enqueue(new).await.expect("enqueue"),
            EnqueueOutcome::Created(id.clone())
        );
        id
    }

    /// A job that must exist.
    pub async fn get(&self, id: &str) -> Job {
        self.store
            .get_job(id)
            .await
            .expect("get_job")
            .unwrap_or_else(|| panic!("job {id} missing"))
    }

    pub async fn snapshot(&self) -> CountSnapshot {
        self.store.count_snapshot().await.expect("count_snapshot")
    }

    pub async fn revision(&self) -> i64 {
        self.snapshot().await.revision
    }

    /// Every job, newest first.
    pub async fn jobs(&self) -> Vec<Job> {
        self.store
            .search_jobs(&JobFilter::default())
            .await
            .expect("search_jobs")
            .jobs
    }

    pub async fn state(&self) -> StoreState {
        StoreState {
            snapshot: self.snapshot().await,
            jobs: self.jobs().await,
        }
    }

    /// Asserts nothing was written since `before` was taken.
    pub async fn assert_unchanged(&self, before: &StoreState, after_what: &str) {
        let now = self.state().await;
        assert_eq!(
            now.snapshot, before.snapshot,
            "snapshot changed after {after_what}"
        );
        assert_eq!(now.jobs, before.jobs, "jobs changed after {after_what}");
    }

    pub async fn claim_with(&self, req: &ClaimRequest) -> Vec<Job> {
        self.store.claim(req).await.expect("claim")
    }

    pub async fn claim(&self, worker: &str, names: &[&str], limit: usize) -> Vec<Job> {
        self.claim_with(&claim_req(worker, names, limit)).await
    }

    /// Claims exactly one job named `name` and asserts it is `id`.
    pub async fn claim_id(&self, worker: &str, name: &str, id: &str) -> Job {
        let claimed = self.claim(worker, &[name], 1).await;
        assert_eq!(claimed.len(), 1, "expected to claim {id}");
        assert_eq!(claimed[0].id, id, "claimed the wrong job");
        claimed.into_iter().next().unwrap()
    }

    /// Reports `outcome` under `job`'s lease (a batch of one, as a worker does).
    pub async fn report(&self, job: &Job, outcome: Outcome) -> bool {
        self.report_lease(&lease(job), outcome).await
    }

    /// Reports `outcome` under `lease`, which may be stale or made up.
    pub async fn report_lease(&self, lease: &Lease, outcome: Outcome) -> bool {
        let applied = self
            .store
            .report_batch(vec![(lease.clone(), outcome)])
            .await
            .expect("report_batch");
        assert_eq!(applied.len(), 1, "one answer per report");
        applied[0]
    }

    pub async fn replace(&self, k: &str, name: &str, args: Value) -> ReplaceOutcome {
        self.store
            .replace_scheduled(
                &key(k),
                job(name, args, EnqueueOptions::new()),
                duraq_core::RunningOwner::KeepRunning,
            )
            .await
            .expect("replace_scheduled")
    }

    /// Drives the queued job `id` (named `name`, the only due job of that name)
    /// into `status`. Orphaning advances the clock by 60 001 ms.
    pub async fn drive_to(&self, id: &str, name: &str, status: JobStatus) -> Job {
        match status {
            JobStatus::Queued => {}
            JobStatus::Cancelled => {
                self.store.cancel_job(id).await.expect("cancel_job");
            }
            _ => {
                let worker = format!("drive-{id}");
                let claimed = self.claim_id(&worker, name, id).await;
                let outcome = match status {
                    JobStatus::Completed => Some(Outcome::Completed),
                    JobStatus::Failed => Some(Outcome::Failed {
                        error: "boom".into(),
                        retry_in_ms: None,
                        discard: true,
                    }),
                    _ => None,
                };
                if let Some(outcome) = outcome {
                    assert!(self.report(&claimed, outcome).await);
                } else if status == JobStatus::Orphaned {
                    assert_eq!(claimed.max_retries, 0, "orphaning needs maxRetries 0");
                    self.advance(60_001);
                    let recovered = self
                        .store
                        .recover_stale(60_000)
                        .await
                        .expect("recover_stale");
                    assert!(recovered.contains(&claimed.id));
                }
            }
        }
        let job = self.get(id).await;
        assert_eq!(job.status, status, "drive_to {status}");
        job
    }
}
