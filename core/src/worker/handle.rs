//! A built worker and the handle of a spawned one. `run` borrows the caller's
//! task and any shutdown future (a signal, a channel); `spawn` wraps the same run
//! in a task with a handle, for programs that manage workers as values (the CLI's
//! demo, tests).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::config::WorkerConfig;
use super::events::{WorkerEvent, WorkerReport};
use super::registry::Registry;
use super::WorkerError;
use crate::clock::Clock;
use crate::store::Store;

/// A configured worker: claims, runs and reports jobs until shut down.
///
/// ```
/// use std::sync::Arc;
/// use duraq_core::worker::WorkerEvent;
/// use duraq_core::{
///     JobArgs, JobContext, JobError, JobHandler, JobResult, MemoryStore, Registry, Store, Worker,
/// };
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Resize {
///     image_id: u64,
/// }
/// impl JobArgs for Resize {
///     const NAME: &'static str = "resize";
/// }
///
/// struct Resizer;
/// #[duraq_core::async_trait]
/// impl JobHandler for Resizer {
///     type Args = Resize;
///     async fn perform(&self, _ctx: &JobContext, args: Resize) -> Result<JobResult, JobError> {
///         assert_eq!(args.image_id, 7);
///         Ok(JobResult::Completed)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let id = store.enqueue(Resize { image_id: 7 }.job().unwrap()).await.unwrap().job_id().to_owned();
/// let registry = Registry::new().register(Resizer).unwrap();
/// let worker = Worker::builder(store.clone(), registry).build().unwrap();
/// let mut events = worker.subscribe();
/// let handle = worker.spawn();
/// while !matches!(events.recv().await.unwrap(), WorkerEvent::Finished(ref f) if f.job_id == id) {}
/// let report = handle.shutdown_and_join().await.unwrap();
/// assert_eq!(report.completed, 1);
/// # }
/// ```
pub struct Worker {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) registry: Registry,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) events: broadcast::Sender<WorkerEvent>,
    pub(crate) config: WorkerConfig,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("config", &self.config)
            .field("registry", &self.registry)
            .finish()
    }
}

impl Worker {
    /// This worker's id (as stored in `workerId`).
    pub fn id(&self) -> &str {
        &self.config.worker_id
    }

    /// The number of slots.
    pub fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    /// A receiver of this worker's [`WorkerEvent`]s (subscribe before `run` to see
    /// every event).
    pub fn subscribe(&self) -> broadcast::Receiver<WorkerEvent> {
        self.events.subscribe()
    }

    /// Runs until `shutdown` resolves, then drains (`docs/jobs.md`) and returns the totals.
    ///
    /// At start it reconciles reservation counts, heartbeats and recovers stale
    /// leases; it fails only when that startup fails. Later store errors are
    /// logged and retried. The drain stops claiming, waits up to the drain timeout
    /// for running jobs and reports them; jobs still running then are aborted and
    /// reported [`crate::Outcome::ReturnToQueue`].
    ///
    /// Dropping the future instead of resolving `shutdown` abandons running jobs
    /// without reports; stale recovery returns them later.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use duraq_core::{EnqueueOptions, MemoryStore, NewJob, Registry, Store, Worker};
    /// use duraq_core::worker::WorkerEvent;
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// store.enqueue(NewJob::new("hello", serde_json::json!([]), EnqueueOptions::new()).unwrap()).await.unwrap();
    /// let registry = Registry::new().register_fn("hello", |_ctx, _args| async { Ok(()) }).unwrap();
    /// let worker = Worker::builder(store, registry).build().unwrap();
    /// let mut events = worker.subscribe();
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let run = tokio::spawn(worker.run(async { let _ = stopped.await; }));
    /// while !matches!(events.recv().await, Ok(WorkerEvent::Finished(_))) {}
    /// stop.send(()).unwrap();
    /// let report = run.await.unwrap().unwrap();
    /// assert_eq!(report.completed, 1);
    /// # });
    /// ```
    pub async fn run<F>(self, shutdown: F) -> Result<WorkerReport, WorkerError>
    where
        F: Future<Output = ()> + Send,
    {
        let Worker {
            store,
            registry,
            clock,
            events,
            config,
        } = self;
        let span = tracing::info_span!("worker", worker_id = %config.worker_id);
        super::runner::run(store, registry, clock, events, config, shutdown)
            .instrument(span)
            .await
    }

    /// Runs the worker on a new tokio task.
    pub fn spawn(self) -> WorkerHandle {
        let (stop, mut stop_rx) = watch::channel(false);
        let events = self.events.clone();
        let worker_id = self.config.worker_id.clone();
        let task = tokio::spawn(self.run(async move {
            // Resolves when told to stop, or when the handle is dropped.
            let _ = stop_rx.wait_for(|s| *s).await;
        }));
        WorkerHandle {
            stop,
            events,
            worker_id,
            task,
        }
    }
}

/// A worker running on its own task; see [`Worker::spawn`]. Dropping the handle
/// shuts the worker down (without waiting for it).
#[derive(Debug)]
pub struct WorkerHandle {
    stop: watch::Sender<bool>,
    events: broadcast::Sender<WorkerEvent>,
    worker_id: String,
    task: JoinHandle<Result<WorkerReport, WorkerError>>,
}

impl WorkerHandle {
    /// Begins a graceful shutdown (idempotent); await [`WorkerHandle::join`] for the end.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Waits for the worker to stop and returns its totals.
    pub async fn join(self) -> Result<WorkerReport, WorkerError> {
        let Self { stop, task, .. } = self;
        let result = task.await;
        drop(stop);
        result.map_err(|e| WorkerError::Internal(format!("worker task failed: {e}")))?
    }

    /// [`WorkerHandle::shutdown`] then [`WorkerHandle::join`].
    pub async fn shutdown_and_join(self) -> Result<WorkerReport, WorkerError> {
        self.shutdown();
        self.join().await
    }

    /// A receiver of the worker's events (from now on).
    pub fn subscribe(&self) -> broadcast::Receiver<WorkerEvent> {
        self.events.subscribe()
    }

    /// The worker's id.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }
}
