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

mod aging;
mod backoff;
mod bulk;
mod clock;
mod counts;
mod delegate;
mod digest;
mod display;
mod durable;
mod error;
mod history;
mod job;
mod key_backlog;
mod keys;
mod memory;
mod new_job;
mod options;
mod progress;
mod rate;
mod requests;
mod resolve;
mod search;
mod store;
mod time;
mod trace;
mod typed;
mod wait;
mod workers;
mod workflow;
mod workflow_append;
mod workflow_graph;
mod workflow_list;

pub mod driver;
pub mod inspect;
pub mod limits;
pub mod worker;

// Core's own code names the rules and transitions by their short paths.
use driver::{rules, steps, transitions};

/// Re-exported so that implementing [`JobHandler`] or the store traits needs
/// no dependency besides `duraq-core`: write `#[duraq_core::async_trait]`.
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

// The application's surface: jobs and their options, typed jobs, the store
// traits it calls and their answers, the worker, errors and clocks. Store
// authors find the rest in `driver`; readers and operators in `inspect`; the
// worker's finer knobs in `worker`; limits and defaults in `limits`.
pub use aging::{PriorityAging, MAX_PRIORITY};
pub use clock::{Clock, ManualClock, SystemClock};
pub use durable::{ChildOutcome, Signalled, CHILD_WAIT};
pub use error::{Error, ErrorCode, Result};
pub use job::{AttemptError, CancelReason, Dependency, DependencyFailure, Job, JobStatus};
pub use keys::{IdempotencyKey, JobName, QueueName, ScheduleKey};
pub use memory::MemoryStore;
pub use new_job::NewJob;
pub use options::{After, ConcurrencyLimit, EnqueueOptions, NewOperation, SequenceFailure};
pub use rate::RateLimit;
pub use requests::{
    CancelOutcome, EnqueueOutcome, KeyedOutcome, Outcome, QueueConfig, ReplaceOutcome,
    RunningOwner, WakeOutcome,
};
pub use store::{Inspect, MailOperations, Operate, Producer, Store, WorkerStore};
pub use trace::TraceParent;
pub use typed::JobArgs;
pub use worker::{
    JobContext, JobError, JobHandler, JobResult, PeriodicJob, Registry, Worker, WorkerError,
};
pub use workflow::{enqueue_workflow, Workflow, WorkflowOutcome};
pub use workflow_append::{append_workflow, WorkflowAppend};
