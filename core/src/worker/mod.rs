//! The worker runtime (`docs/jobs.md`, `docs/queues.md`): a handler [`Registry`], a [`Worker`] that
//! claims due jobs for its handlers into a fixed number of slots, runs each on its
//! own tokio task under a timeout, and reports every outcome fenced by the job's
//! lease; plus the background duties every live process shares — heartbeats,
//! recovery of dead workers' leases, the release backlog of wide fan-outs,
//! periodic schedules and retention sweeps.
//!
//! All durable effects go through [`crate::Store`]; the runtime itself keeps no
//! state that a crash could lose (a killed worker's jobs are recovered by others).
//!
//! Layout, one idea per file:
//! - `handler`: what a handler sees and returns ([`JobContext`], [`JobError`]).
//! - `registry`: name → handler, duplicate names refused.
//! - `builder`: [`WorkerBuilder`] and its defaults and validation.
//! - `handle`: [`Worker`] (`run`, `spawn`) and [`WorkerHandle`].
//! - `runner`: startup, the background duties, the graceful drain's shape.
//! - `dispatcher`: the one loop that owns the slots: claims, batched reports
//!   (with a refill claim under a backlog), wake-ups, the lease check and
//!   cancellation notices.
//! - `ledger`: what the dispatcher holds and has in flight, the call modes and
//!   the shutdown phases, as plain data with its counting rules.
//! - `local_queue`: jobs claimed ahead waiting for a slot; the attempts executing.
//! - `calls`: the store calls the dispatcher makes, inline or on tasks.
//! - `execute`: one attempt (timeout, cancel grace, panic isolation).
//! - `maintenance`: heartbeats and stale-lease recovery.
//! - `release`: continuing the release backlog a wide fan-out leaves.
//! - `periodic` / `cron` / `cron_fields`: leaderless periodic enqueue; cron
//!   schedules and their five-field parser.
//! - `cron_zone`: a cron schedule's ticks in an IANA zone, daylight saving included.
//! - `retention`: pruning sweeps.
//! - `run_due`: [`Worker::run_due`], one round of due jobs in the caller's task (test kits).
//! - `events`: [`WorkerEvent`] broadcast and [`WorkerReport`] totals.

mod aging;
mod builder;
mod calls;
mod config;
mod cron;
mod cron_fields;
mod cron_zone;
mod dispatcher;
mod events;
mod execute;
mod handle;
mod handler;
mod ledger;
mod local_queue;
mod maintenance;
mod periodic;
mod progress_sink;
mod registry;
mod release;
mod retention;
mod run_due;
mod runner;

#[cfg(test)]
mod tests;

pub use crate::backoff::{retry_backoff, retry_backoff_ms};
pub use builder::WorkerBuilder;
pub use config::{
    PrefetchPolicy, DEFAULT_ADAPTIVE_PREFETCH, DEFAULT_CANCEL_GRACE, DEFAULT_CONCURRENCY,
    DEFAULT_DRAIN_TIMEOUT, DEFAULT_JOB_TIMEOUT, DEFAULT_LEASE_CHECK_INTERVAL,
    DEFAULT_POLL_INTERVAL, DEFAULT_STALE_AFTER, MAX_PREFETCH, MIN_STALE_AFTER,
};
pub use cron::CronSchedule;
pub use events::{JobFinished, JobStarted, WorkerEvent, WorkerReport, EVENT_CAPACITY};
pub use handle::{Worker, WorkerHandle};
pub use handler::{JobContext, JobError, JobHandler, JobResult, JsonHandler};
pub use periodic::{PeriodicJob, PeriodicSchedule};
pub use registry::Registry;
pub use retention::RetentionPolicy;
pub use run_due::DueRun;

use crate::error::{Error, ErrorCode};

/// Why building or running a worker failed. Each variant has a stable
/// [`WorkerError::code`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// Two handlers for one job name (`duplicate-handler`).
    #[error("a handler for {0:?} is already registered")]
    DuplicateHandler(String),
    /// A cron expression that does not parse or never fires (`invalid-cron`).
    #[error("invalid cron expression {expr:?}: {reason}")]
    InvalidCron {
        /// The expression as given.
        expr: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A time zone the IANA database does not know (`invalid-time-zone`).
    #[error("unknown time zone {zone:?}: {reason}")]
    InvalidTimeZone {
        /// The zone as given.
        zone: String,
        /// What the database said.
        reason: String,
    },
    /// An impossible worker, periodic or retention setting (`invalid-worker-config`).
    #[error("invalid worker configuration: {0}")]
    InvalidConfig(String),
    /// A store or validation error (its own code, e.g. `invalid-job-name`).
    #[error(transparent)]
    Core(#[from] Error),
    /// The worker task itself failed (`worker-internal`); a bug.
    #[error("worker internal error: {0}")]
    Internal(String),
}

impl WorkerError {
    /// The stable machine code, printed by the CLI as `error[<code>]`: one
    /// [`ErrorCode`] for the runtime's errors and the stores' alike.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::DuplicateHandler(_) => ErrorCode::DuplicateHandler,
            Self::InvalidCron { .. } => ErrorCode::InvalidCron,
            Self::InvalidTimeZone { .. } => ErrorCode::InvalidTimeZone,
            Self::InvalidConfig(_) => ErrorCode::InvalidWorkerConfig,
            Self::Core(e) => e.code(),
            Self::Internal(_) => ErrorCode::WorkerInternal,
        }
    }
}
