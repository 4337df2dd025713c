//! One error type for mail delivery. Variants are what a caller can act on; each
//! has a stable [`MailError::code`] (`docs/mail.md`), and tests match codes, never
//! messages. [`MailError::is_permanent`] is the one place that decides whether a
//! failed `duraq.mail.deliver` attempt may be retried: every refusal of the
//! idempotency contract is permanent, because retrying can never make it pass.

use std::time::Duration;

use duraq_core::{ErrorCode, JobError};

/// `Result` with [`MailError`].
pub type MailResult<T> = std::result::Result<T, MailError>;

/// Every failure of mail preparation, enqueue and delivery.
///
/// ```
/// use duraq_mailer::MailError;
/// let err = MailError::IdempotencyExpired { message: "retention elapsed".into() };
/// assert_eq!(err.code(), "mail-delivery-idempotency-expired");
/// assert!(err.is_permanent());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MailError {
    /// Required idempotency on a backend that advertises no capability.
    #[error("the mail backend offers no idempotent delivery")]
    IdempotencyUnsupported,
    /// The operation id is not acceptable to the backend.
    #[error("invalid delivery operation id: {message}")]
    IdempotencyKeyInvalid {
        /// Why the backend refuses it (length, characters), safe to show.
        message: String,
    },
    /// The operation id was already used for other content or another provider.
    #[error("the delivery operation id was already used for a different payload or provider")]
    IdempotencyConflict,
    /// The configured backend's provider kind or retention differs from the one
    /// the operation was enqueued for.
    #[error("mail provider changed since enqueue: {message}")]
    ProviderChanged {
        /// The kind and retention recorded at enqueue and the configured ones.
        message: String,
    },
    /// The payload no longer matches the persisted digest of the operation.
    #[error("the persisted mail payload does not match its digest")]
    PayloadDigestMismatch,
    /// The provider's idempotency window has passed since the first attempt.
    #[error("{message}")]
    IdempotencyExpired {
        /// When the first attempt started and how long the provider remembers keys.
        message: String,
    },
    /// A required direct delivery was asked for inside a caller-owned transaction.
    #[error("required idempotent delivery cannot run inside a caller-owned transaction")]
    TransactionActive,
    /// The caller set the header the provider's idempotency key travels in.
    #[error("header {name:?} is reserved for the delivery operation id")]
    HeaderReserved {
        /// The header as the caller spelled it.
        name: String,
    },
    /// No sender in the payload and no default sender configured.
    #[error("the mail has no sender and the backend has no default sender")]
    FromMissing,
    /// A malformed payload (no recipient, no body, a bad address or header).
    #[error("invalid mail payload: {message}")]
    InvalidPayload {
        /// What is wrong, naming the field.
        message: String,
    },
    /// Backend settings that cannot work (missing host, bad port, missing key).
    #[error("invalid mail configuration: {message}")]
    Config {
        /// What is missing or malformed, naming the variable or setting (never
        /// its secret value).
        message: String,
    },
    /// SMTP credentials configured over a plaintext connection to a host that
    /// is not a loopback address: they would cross the network in clear text.
    #[error(
        "refusing to send SMTP credentials in clear text to {host}: use TLS or STARTTLS \
         (plaintext authentication is allowed only to a loopback address)"
    )]
    PlaintextAuth {
        /// The SMTP host the credentials would have gone to.
        host: String,
    },
    /// A failure that may pass on a later attempt (connection, 429, 5xx).
    #[error("mail delivery failed: {message}")]
    Transient {
        /// The provider's or the connection's error, scrubbed of secrets.
        message: String,
        /// How long the provider asked us to wait (HTTP `Retry-After`), which
        /// the job's next attempt honours instead of the default backoff.
        retry_after: Option<Duration>,
    },
    /// The provider refused the mail for good (SMTP 5xx, HTTP 4xx).
    #[error("mail rejected by the provider: {message}")]
    Rejected {
        /// The provider's answer, scrubbed of secrets; it becomes `lastError`.
        message: String,
    },
    /// The job store failed (its own code, e.g. `database-busy`).
    #[error(transparent)]
    Store(#[from] duraq_core::Error),
}

impl MailError {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::IdempotencyUnsupported => "mail-delivery-idempotency-unsupported",
            Self::IdempotencyKeyInvalid { .. } => "mail-delivery-idempotency-key-invalid",
            Self::IdempotencyConflict => "mail-delivery-idempotency-conflict",
            Self::ProviderChanged { .. } => "mail-delivery-provider-changed",
            Self::PayloadDigestMismatch => "mail-delivery-payload-digest-mismatch",
            Self::IdempotencyExpired { .. } => "mail-delivery-idempotency-expired",
            Self::TransactionActive => "mail-delivery-idempotency-transaction-active",
            Self::HeaderReserved { .. } => "mail-delivery-idempotency-header-reserved",
            Self::FromMissing => "mail-delivery-from-missing",
            Self::InvalidPayload { .. } => "mail-invalid-payload",
            Self::Config { .. } => "mail-config-invalid",
            Self::PlaintextAuth { .. } => "mail-smtp-plaintext-auth",
            Self::Transient { .. } => "mail-delivery-failed",
            Self::Rejected { .. } => "mail-delivery-rejected",
            Self::Store(e) => e.code().as_str(),
        }
    }

    /// Whether another attempt can never succeed (the job fails without retries).
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Transient { .. } => false,
            Self::Store(e) => e.code() == ErrorCode::OperationNotFound,
            _ => true,
        }
    }

    /// The attempt's failure as the worker records it: `lastError` is
    /// `<code>: <message>` with the error's source chain after the message
    /// ([`duraq_core::inspect::error_chain`]), permanent errors discard the job, and a
    /// provider's `retry-after` becomes the retry delay.
    pub fn into_job_error(self) -> JobError {
        let err = JobError::new(format!(
            "{}: {}",
            self.code(),
            duraq_core::inspect::error_chain(&self)
        ));
        match &self {
            Self::Transient {
                retry_after: Some(delay),
                ..
            } => err.retry_in(*delay),
            _ if self.is_permanent() => err.discard(),
            _ => err,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidPayload {
            message: message.into(),
        }
    }
}

/// Maps the store's idempotency refusal of a mail enqueue to the mail code.
pub(crate) fn from_enqueue_error(err: duraq_core::Error) -> MailError {
    match err.code() {
        ErrorCode::IdempotencyConflict => MailError::IdempotencyConflict,
        ErrorCode::InvalidIdempotencyKey => MailError::IdempotencyKeyInvalid {
            message: err.to_string(),
        },
        _ => MailError::Store(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_error_keeps_the_source_chain() {
        let root = std::io::Error::other("connection reset by peer");
        let err = MailError::Store(duraq_core::Error::backend("writing the outbox row", root));
        let job = err.into_job_error();
        assert!(
            job.message().ends_with("connection reset by peer"),
            "{}",
            job.message()
        );
        assert!(job.message().contains("writing the outbox row"));
    }
}
