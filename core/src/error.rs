//! One error type for every store and the runtime. Kinds are backend-neutral so that
//! callers (and the conformance suite) match on [`Error::kind`]-like variants and on
//! [`ErrorCode`], never on message text. Each store maps its native errors into this
//! enum in exactly one function.

use std::fmt;

/// A boxed source error from a backend.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with duraq's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The stable machine codes of SPEC §3–§9 (and a few of duraq's own).
///
/// The string form ([`ErrorCode::as_str`]) is part of the public contract: the CLI
/// prints it as `error[<code>]` and scripts match on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    InvalidJobName,
    InvalidMaxRetries,
    InvalidScheduledAt,
    InvalidConcurrency,
    ConcurrencyCapConflict,
    InvalidIdempotencyKey,
    InvalidTimeout,
    InvalidScheduleKey,
    /// Two options that cannot be combined (e.g. `deduplicateWhileQueued` with an
    /// `idempotencyKey`, or either with `replace_scheduled`).
    UnsupportedOption,
    IdempotencyConflict,
    JobNotFound,
    /// An operator action on a job whose status does not allow it (retrying a
    /// queued job, cancelling a completed one).
    InvalidJobState,
    OperationNotFound,
    SchemaIncompatible,
    DatabaseBusy,
    /// Anything else a backend reports (I/O, a broken connection, corruption).
    Backend,
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
            Self::InvalidTimeout => "invalid-timeout",
            Self::InvalidScheduleKey => "invalid-schedule-key",
            Self::UnsupportedOption => "unsupported-option",
            Self::IdempotencyConflict => "idempotency-conflict",
            Self::JobNotFound => "job-not-found",
            Self::InvalidJobState => "invalid-job-state",
            Self::OperationNotFound => "operation-not-found",
            Self::SchemaIncompatible => "schema-incompatible",
            Self::DatabaseBusy => "database-busy",
            Self::Backend => "backend-error",
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
/// let err = NewJob::new("email", serde_json::json!([]), EnqueueOptions::new().max_retries(-1))
///     .unwrap_err();
/// assert!(matches!(err, Error::Invalid { code: ErrorCode::InvalidMaxRetries, .. }));
/// assert_eq!(err.code().as_str(), "invalid-max-retries");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller's input was rejected; nothing was written.
    #[error("{message}")]
    Invalid { code: ErrorCode, message: String },
    /// The input is valid but contradicts what the database already holds
    /// (`idempotency-conflict`, `concurrency-cap-conflict`); nothing was written.
    #[error("{message}")]
    Conflict { code: ErrorCode, message: String },
    /// The addressed job or operation does not exist.
    #[error("{message}")]
    NotFound { code: ErrorCode, message: String },
    /// The database holds a schema this binary cannot use (`schema-incompatible`).
    #[error("schema incompatible: {message}")]
    SchemaIncompatible { message: String },
    /// The database stayed locked by other writers past every retry (`database-busy`).
    #[error("database busy: {message}")]
    Busy { message: String },
    /// Any other backend failure.
    #[error("backend error: {message}")]
    Backend {
        message: String,
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

    /// `schema-incompatible` with an explanation.
    pub fn schema(message: impl Into<String>) -> Self {
        Self::SchemaIncompatible {
            message: message.into(),
        }
    }
}
