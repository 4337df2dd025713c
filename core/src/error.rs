//! One error type for every store and the runtime. Kinds are backend-neutral so that
//! callers (and the conformance suite) match on [`Error::kind`]-like variants and on
//! [`ErrorCode`], never on message text. Each store maps its native errors into this
//! enum in exactly one function.

use std::fmt;

/// A boxed source error from a backend.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with duraq's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The stable machine codes (see `docs/jobs.md`) and `docs/operating.md` (and a few of duraq's own).
///
/// The string form ([`ErrorCode::as_str`]) is part of the public contract: the CLI
/// prints it as `error[<code>]` and scripts match on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A job name that is empty, too long or holds control characters.
    InvalidJobName,
    /// A negative `maxRetries`.
    InvalidMaxRetries,
    /// A run time before the epoch or out of range, a delay out of range, or
    /// both an absolute time and a delay.
    InvalidScheduledAt,
    /// A concurrency key without a cap (or the reverse), a cap below 1, or a key
    /// that is reserved or badly formed.
    InvalidConcurrency,
    /// A cap that differs from the one already in force for the same key.
    ConcurrencyCapConflict,
    /// An idempotency key that is empty or too long, or an operation record
    /// without one.
    InvalidIdempotencyKey,
    /// A job priority outside −100…100.
    InvalidPriority,
    /// A rate key without a limit (or the reverse), a limit below 1, a period
    /// below 1 ms, or a badly formed key.
    InvalidRateLimit,
    /// A rate limit that differs from the one already in force for the same key.
    RateLimitConflict,
    /// A trace context that is not a W3C `traceparent`
    /// ([`crate::EnqueueOptions::trace_parent`], [`crate::TraceParent::parse`]).
    InvalidTraceParent,
    /// A timeout below 1 ms or out of range.
    InvalidTimeout,
    /// An expiry before the epoch or out of range, or both a time and a delay.
    InvalidExpiry,
    /// A cost below 1, or above the job's own concurrency cap or rate limit.
    InvalidCost,
    /// A sequence key that breaks the rules of job names.
    InvalidSequence,
    /// A fairness key that breaks the rules of job names.
    InvalidFairnessKey,
    /// A schedule key that is empty, too long or holds control characters.
    InvalidScheduleKey,
    /// A queue name that is too long or holds control characters.
    InvalidQueue,
    /// Job args that do not serialize to JSON, or (in a worker's `lastError`)
    /// that do not decode into the handler's [`crate::JobArgs`] type.
    InvalidArgs,
    /// Two options that cannot be combined (e.g. `deduplicateWhileQueued` with an
    /// `idempotencyKey`, or either with `replace_scheduled`).
    UnsupportedOption,
    /// An idempotency key already owned by a different request.
    IdempotencyConflict,
    /// No job has the given id.
    JobNotFound,
    /// Text given as a job id or id prefix that no id could start with (empty,
    /// too long, spaces or control characters; see [`crate::inspect::resolve_job`]).
    InvalidId,
    /// An id prefix that several jobs' ids start with ([`crate::inspect::resolve_job`]).
    AmbiguousId,
    /// An operator action on a job whose status does not allow it (retrying a
    /// queued job, cancelling a completed one).
    InvalidJobState,
    /// A word that names no job status (a `--status` or `?status=` filter;
    /// see [`crate::JobStatus`]'s `FromStr`).
    InvalidStatus,
    /// A history range that is not one of `1h`, `24h`, `7d` (`duraq stats
    /// --since`, the dashboard's `?range=`; see [`crate::inspect::HistoryRange`]).
    InvalidRange,
    /// No operation record has the given key.
    OperationNotFound,
    /// The database's schema is newer than this binary, or not duraq's.
    SchemaIncompatible,
    /// A reading command addressed a database (SQLite file, PostgreSQL schema) that
    /// does not exist or holds no duraq schema; nothing was created.
    DatabaseNotFound,
    /// The database stayed locked by other writers past every retry.
    DatabaseBusy,
    /// The database's disk (or its quota) is full: nothing more can be written
    /// until space is freed (SQLite `SQLITE_FULL`, PostgreSQL SQLSTATE 53100).
    StorageFull,
    /// Anything else a backend reports (I/O, a broken connection, corruption).
    Backend,
    /// Two handlers registered for one job name ([`crate::WorkerError`]).
    DuplicateHandler,
    /// A cron expression that does not parse or never fires.
    InvalidCron,
    /// A time zone name that the bundled IANA database does not know
    /// (`CRON_TZ=`, [`crate::worker::CronSchedule::in_time_zone`]).
    InvalidTimeZone,
    /// A time a person typed is not one (`jobs list --created-before`, the
    /// dashboard's search fields): see [`crate::inspect::parse_time_ms`].
    InvalidTime,
    /// An impossible worker, periodic or retention setting.
    InvalidWorkerConfig,
    /// A job's progress that is not a fraction in 0.0 ..= 1.0 (NaN included;
    /// [`crate::JobContext::progress`]).
    InvalidProgress,
    /// An `after` naming a job that does not exist (or, in a workflow, a step
    /// that does not exist); nothing was written.
    DependencyNotFound,
    /// A dependency failure policy that is neither `cancel` nor `run`.
    InvalidDependencyPolicy,
    /// A handler's output larger than [`crate::limits::MAX_OUTPUT_BYTES`] as JSON: the
    /// attempt fails with this code in `lastError`.
    OutputTooLarge,
    /// A workflow whose steps depend on each other in a circle; nothing was written.
    WorkflowCycle,
    /// A workflow with two steps of one name (nothing was written), or a
    /// durable step name used twice in one attempt ([`crate::JobContext::step`]).
    DuplicateStep,
    /// A workflow name or step name that is empty, too long or holds control
    /// characters, or a workflow without steps.
    InvalidWorkflow,
    /// No workflow has the given id.
    WorkflowNotFound,
    /// An attempt's lease is no longer current (the job was recovered,
    /// cancelled or claimed again): its report in the handler's own
    /// transaction changed nothing, and that transaction should roll back.
    LeaseLost,
    /// A step name that is empty, too long, holds control characters or
    /// starts with `duraq.` (reserved for duraq's own steps).
    InvalidStepName,
    /// A signal name that is empty, too long or holds control characters, or
    /// a payload over 256 KiB of JSON ([`crate::Producer::signal`]).
    InvalidSignal,
    /// A job already received this signal with another payload: a signal is
    /// delivered once per job and name.
    SignalConflict,
    /// A signal to a job that has finished (completed, failed, cancelled or
    /// orphaned).
    JobFinished,
    /// The worker task itself failed: a bug.
    WorkerInternal,
}

impl ErrorCode {
    /// The stable string, e.g. `"invalid-max-retries"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJobName => "invalid-job-name",
            Self::InvalidMaxRetries => "invalid-max-retries",
            Self::InvalidScheduledAt => "invalid-scheduled-at",
            Self::InvalidConcurrency => "invalid-concurrency",
            Self::ConcurrencyCapConflict => "concurrency-cap-conflict",
            Self::InvalidIdempotencyKey => "invalid-idempotency-key",
            Self::InvalidPriority => "invalid-priority",
            Self::InvalidRateLimit => "invalid-rate-limit",
            Self::RateLimitConflict => "rate-limit-conflict",
            Self::InvalidTraceParent => "invalid-trace-parent",
            Self::InvalidTimeout => "invalid-timeout",
            Self::InvalidExpiry => "invalid-expiry",
            Self::InvalidCost => "invalid-cost",
            Self::InvalidSequence => "invalid-sequence",
            Self::InvalidFairnessKey => "invalid-fairness-key",
            Self::InvalidScheduleKey => "invalid-schedule-key",
            Self::InvalidQueue => "invalid-queue",
            Self::InvalidArgs => "invalid-args",
            Self::UnsupportedOption => "unsupported-option",
            Self::IdempotencyConflict => "idempotency-conflict",
            Self::JobNotFound => "job-not-found",
            Self::InvalidId => "invalid-id",
            Self::AmbiguousId => "ambiguous-id",
            Self::InvalidJobState => "invalid-job-state",
            Self::InvalidStatus => "invalid-status",
            Self::InvalidRange => "invalid-range",
            Self::OperationNotFound => "operation-not-found",
            Self::SchemaIncompatible => "schema-incompatible",
            Self::DatabaseNotFound => "database-not-found",
            Self::DatabaseBusy => "database-busy",
            Self::StorageFull => "storage-full",
            Self::Backend => "backend-error",
            Self::DuplicateHandler => "duplicate-handler",
            Self::InvalidCron => "invalid-cron",
            Self::InvalidTimeZone => "invalid-time-zone",
            Self::InvalidTime => "invalid-time",
            Self::InvalidWorkerConfig => "invalid-worker-config",
            Self::InvalidProgress => "invalid-progress",
            Self::DependencyNotFound => "dependency-not-found",
            Self::InvalidDependencyPolicy => "invalid-dependency-policy",
            Self::OutputTooLarge => "output-too-large",
            Self::WorkflowCycle => "workflow-cycle",
            Self::DuplicateStep => "duplicate-step",
            Self::InvalidWorkflow => "invalid-workflow",
            Self::WorkflowNotFound => "workflow-not-found",
            Self::LeaseLost => "lease-lost",
            Self::InvalidStepName => "invalid-step-name",
            Self::InvalidSignal => "invalid-signal",
            Self::SignalConflict => "signal-conflict",
            Self::JobFinished => "job-finished",
            Self::WorkerInternal => "worker-internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every failure duraq reports.
///
/// ```
/// use duraq_core::{EnqueueOptions, Error, ErrorCode, NewJob};
/// let opts = EnqueueOptions { max_retries: Some(-1), ..EnqueueOptions::new() };
/// let err = NewJob::new("email", serde_json::json!([]), opts).unwrap_err();
/// assert!(matches!(err, Error::Invalid { code: ErrorCode::InvalidMaxRetries, .. }));
/// assert_eq!(err.code().as_str(), "invalid-max-retries");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller's input was rejected; nothing was written.
    #[error("{message}")]
    Invalid {
        /// What kind of input was wrong.
        code: ErrorCode,
        /// Which value, and why.
        message: String,
    },
    /// The input is valid but contradicts what the database already holds
    /// (`idempotency-conflict`, `concurrency-cap-conflict`); nothing was written.
    #[error("{message}")]
    Conflict {
        /// Which promise the input contradicts.
        code: ErrorCode,
        /// What is held, and what was asked.
        message: String,
    },
    /// The addressed job or operation does not exist.
    #[error("{message}")]
    NotFound {
        /// `job-not-found` or `operation-not-found`.
        code: ErrorCode,
        /// Which id or key.
        message: String,
    },
    /// The database holds a schema this binary cannot use (`schema-incompatible`).
    #[error("schema incompatible: {message}")]
    SchemaIncompatible {
        /// Which versions were found and expected.
        message: String,
    },
    /// The database stayed locked by other writers past every retry (`database-busy`).
    #[error("database busy: {message}")]
    Busy {
        /// What was being done.
        message: String,
    },
    /// The database's disk is full (`storage-full`); the message says what
    /// to free.
    #[error("storage full: {message}")]
    StorageFull {
        /// Which storage, and what to free.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
    },
    /// Any other backend failure.
    #[error("backend error: {message}")]
    Backend {
        /// What was being done (never a secret).
        message: String,
        /// The driver's error, if any (see [`error_chain`]).
        #[source]
        source: Option<BoxError>,
    },
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Invalid { code, .. }
            | Self::Conflict { code, .. }
            | Self::NotFound { code, .. } => *code,
            Self::SchemaIncompatible { .. } => ErrorCode::SchemaIncompatible,
            Self::Busy { .. } => ErrorCode::DatabaseBusy,
            Self::StorageFull { .. } => ErrorCode::StorageFull,
            Self::Backend { .. } => ErrorCode::Backend,
        }
    }

    /// An [`Error::Invalid`] with `code`.
    pub fn invalid(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
        }
    }

    /// An [`Error::Conflict`] with `code`.
    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }

    /// `lease-lost` for a report on the handler's own transaction whose
    /// attempt no longer holds the job.
    pub fn lease_lost(lease: &crate::driver::Lease) -> Self {
        Self::conflict(
            ErrorCode::LeaseLost,
            format!(
                "job {} is no longer held by this attempt (lease {}): it was recovered, \
                 cancelled or claimed again; roll the transaction back",
                lease.job_id, lease.handoff_id
            ),
        )
    }

    /// `job-not-found` for `id`.
    pub fn job_not_found(id: &str) -> Self {
        Self::NotFound {
            code: ErrorCode::JobNotFound,
            message: format!("no job with id {id}"),
        }
    }

    /// A backend failure with its source.
    pub fn backend(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Backend {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// `storage-full` with what to free, keeping the driver's error.
    pub fn storage_full(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::StorageFull {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// `database-not-found`: a reading open found no database (or no duraq schema
    /// in it) and created nothing. `message` should say how to create one.
    pub fn database_not_found(message: impl Into<String>) -> Self {
        Self::NotFound {
            code: ErrorCode::DatabaseNotFound,
            message: message.into(),
        }
    }

    /// `schema-incompatible` with an explanation.
    pub fn schema(message: impl Into<String>) -> Self {
        Self::SchemaIncompatible {
            message: message.into(),
        }
    }
}

/// Formats an error with its whole source chain, `outer: cause: root cause`, the
/// way the CLI prints errors and the worker stores `lastError`.
///
/// Errors here keep their own message in `Display` and their cause in
/// [`std::error::Error::source`] (the convention of `std` and `thiserror`), so a
/// plain `to_string()` drops the cause ("backend error: sqlite"). A link whose text
/// the previous one already ends with (a wrapper that repeats its source) is
/// skipped, so nothing is printed twice.
///
/// ```
/// use duraq_core::Error;
/// use duraq_core::inspect::error_chain;
/// let io = std::io::Error::other("file is not a database");
/// let err = Error::backend("sqlite", io);
/// assert_eq!(err.to_string(), "backend error: sqlite");
/// assert_eq!(error_chain(&err), "backend error: sqlite: file is not a database");
/// ```
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !text.is_empty() && !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Echo(String, #[source] Option<std::io::Error>);

    #[test]
    fn chain_skips_links_that_repeat_their_source() {
        let root = std::io::Error::other("connection refused");
        let echo = Echo("connect: connection refused".into(), Some(root));
        let err = Error::backend("PostgreSQL connection to h:1 failed", echo);
        assert_eq!(
            error_chain(&err),
            "backend error: PostgreSQL connection to h:1 failed: connect: connection refused"
        );
    }
}
