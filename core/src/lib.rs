//! `duraq-core`: what a durable job *is*, independent of where it is stored.
//!
//! This crate owns the job model (`docs/jobs.md`), option normalization and validation
//! (`docs/jobs.md`), canonical digests (`docs/idempotency.md`), the retry policy, the
//! [`Clock`], the store traits every backend implements ([`Store`], the whole
//! store, and its parts by caller: [`Producer`], [`WorkerStore`], [`Inspect`],
//! [`Operate`], [`MailOperations`]), the pure row transitions every store
//! shares, and [`MemoryStore`], the small reference model the property suite
//! compares real stores against. It does no I/O: databases live behind `Store`.
//!
//! A job type is declared once ([`JobArgs`]); producers enqueue values of it and
//! workers register a [`JobHandler`] for it. Options take [`std::time::Duration`]
//! and [`std::time::SystemTime`]; milliseconds are only the JSON wire form. The
//! untyped path ([`NewJob::new`], [`Registry::register_fn`]) serves the CLI and
//! producers that know a job only by name.
//!
//! ```
//! # tokio_test_shim::block_on(async {
//! use std::time::Duration;
//! use duraq_core::prelude::*; // the store traits
//! use duraq_core::{EnqueueOptions, JobArgs, MemoryStore, NewJob};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct SendWelcome {
//!     user_id: i64,
//! }
//! impl JobArgs for SendWelcome {
//!     const NAME: &'static str = "send_welcome";
//! }
//!
//! let store = MemoryStore::new();
//! let later = EnqueueOptions::new().run_in(Duration::from_secs(600));
//! let outcome = store.enqueue(SendWelcome { user_id: 42 }.job_with(later).unwrap()).await.unwrap();
//! assert!(store.get_job(outcome.job_id()).await.unwrap().is_some());
//!
//! // The same job, untyped:
//! let job = NewJob::new("send_welcome", serde_json::json!({"user_id": 42}), EnqueueOptions::new()).unwrap();
//! store.enqueue(job).await.unwrap();
//! # });
//! # mod tokio_test_shim { pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f) } }
//! ```

#![warn(missing_docs)]

mod backoff;
mod bulk;
mod clock;
mod counts;
mod delegate;
mod digest;
mod display;
mod error;
mod history;
mod job;
mod keys;
mod memory;
mod new_job;
mod options;
mod progress;
mod rate;
mod requests;
mod resolve;
pub mod rules;
mod search;
pub mod steps;
mod store;
mod time;
mod trace;
pub mod transitions;
mod typed;
mod worker;
mod workers;
mod workflow;
mod workflow_append;
mod workflow_graph;
mod workflow_list;

/// Re-exported so that implementing [`JobHandler`], [`JsonHandler`] or the store
/// traits needs no dependency besides `duraq-core`: write `#[duraq_core::async_trait]`.
pub use async_trait::async_trait;

/// The store traits in one import, for applications: `use duraq_core::prelude::*;`
/// makes every store method callable on a concrete store (`MemoryStore`,
/// `SqliteStore`, `PostgresStore`) as well as on an `Arc<dyn Store>`.
pub mod prelude {
    pub use crate::store::{Inspect, MailOperations, Operate, Producer, Store, WorkerStore};
}

/// What [`delegate_store!`] expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;
    pub use tokio;
}

pub use backoff::{retry_backoff, retry_backoff_ms};
pub use bulk::{run_bulk, BulkReport, BulkRequest, BulkSelection};
pub use clock::{system_clock, Clock, ManualClock, SystemClock};
pub use counts::{
    CountChange, CountDelta, CountSnapshot, QueueCounts, QueueSnapshot, StatusCounts,
};
pub use digest::{canonical_json, digest_hex, digest_of_canonical, DIGEST_FORMAT};
pub use display::{relative_time, thousands, utc_time, visible};
pub use error::{error_chain, BoxError, Error, ErrorCode, Result};
pub use history::{
    history_cutoff, history_minute, throughput, throughput_sum, with_current, HistoryRange,
    HistorySample, OutcomeTotals, QueueTotals, ThroughputPoint, HISTORY_RETENTION_MS, MINUTE_MS,
};
pub use job::{AttemptError, Dependency, DependencyFailure, Job, JobStatus, Lease, STATUS_COUNT};
pub use keys::{
    queue_concurrency_key, IdempotencyKey, JobName, QueueName, ScheduleKey, MAX_NAME_CHARS,
    QUEUE_CONCURRENCY_PREFIX,
};
pub use memory::MemoryStore;
pub use new_job::{new_job_id, NewJob};
pub use options::{
    After, ConcurrencyLimit, EnqueueOptions, NewOperation, DEFAULT_MAX_RETRIES, MAX_RUN_IN_MS,
};
pub use progress::{
    clean_line, progress_write, JobProgress, LogLine, PendingLine, ProgressBatch, ProgressBuffer,
    ProgressPoint, ProgressRow, ProgressWrite, MAX_LINE_BYTES, MAX_LOG_LINES,
    PROGRESS_FLUSH_INTERVAL_MS,
};
pub use rate::{rate_log_horizon, RateLimit, RateWindow};
pub use requests::{
    BacklogProgress, BulkAction, BulkBatch, CancelOutcome, ClaimRequest, EnqueueOutcome, Health,
    JobCursor, JobFilter, KeyedOutcome, LeaseLoss, LeaseState, LostLease, Operation, Outcome,
    PruneReport, PruneRequest, QueueConfig, ReplaceOutcome, ReportedAndClaimed, RunningOwner,
    ScheduledJobs, WakeOutcome,
};
pub use resolve::{check_id_prefix, id_prefix_bound, resolve_job, MAX_ID_BYTES};
pub use search::{contains_ignoring_case, json_contains, JobPage, DEFAULT_SCAN_LIMIT};
pub use store::{Inspect, MailOperations, Operate, Producer, Store, Upkeep, WorkerStore};
pub use time::parse_time_ms;
pub use trace::TraceParent;
pub use transitions::MAX_OUTPUT_BYTES;
pub use typed::JobArgs;
pub use worker::DueRun;
pub use worker::{
    CronSchedule, JobContext, JobError, JobFinished, JobHandler, JobResult, JobStarted,
    JsonHandler, PeriodicJob, PeriodicSchedule, PrefetchPolicy, Registry, RetentionPolicy, Worker,
    WorkerBuilder, WorkerError, WorkerEvent, WorkerHandle, WorkerReport, DEFAULT_ADAPTIVE_PREFETCH,
    DEFAULT_CANCEL_GRACE, DEFAULT_CONCURRENCY, DEFAULT_DRAIN_TIMEOUT, DEFAULT_JOB_TIMEOUT,
    DEFAULT_LEASE_CHECK_INTERVAL, DEFAULT_POLL_INTERVAL, DEFAULT_STALE_AFTER, EVENT_CAPACITY,
    MAX_PREFETCH, MIN_STALE_AFTER,
};
pub use workers::{
    unhandled_groups, worker_forget_cutoff_ms, DueJobGroup, RunningJob, WorkerInfo, WorkerRecord,
    WorkerState, FORGET_WORKERS_AFTER_MS, UNHANDLED_SCAN_LIMIT,
};
pub use workflow::{
    enqueue_workflow, workflow_steps, workflow_tally, Workflow, WorkflowOutcome, WorkflowPlan,
    BATCH_CALLBACK,
};
pub use workflow_append::{append_workflow, WorkflowAppend};
pub use workflow_list::{WorkflowListRequest, WorkflowState, WorkflowSummary, WorkflowTally};
