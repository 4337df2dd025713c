//! Enqueue options as callers give them ([`EnqueueOptions`]) and the validated,
//! normalized job a store receives ([`NewJob`]). All of SPEC §3 lives here, so every
//! store applies the same rules and no store can be handed an unvalidated job.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::digest::digest_hex;
use crate::error::{Error, ErrorCode, Result};
use crate::keys::{IdempotencyKey, JobName, QueueName, QUEUE_CONCURRENCY_PREFIX};

/// The default `maxRetries`.
pub const DEFAULT_MAX_RETRIES: i64 = 10;

/// Raw enqueue options, exactly as a caller (or the CLI) supplies them.
///
/// ```
/// use duraq_core::EnqueueOptions;
/// let opts = EnqueueOptions::new().queue("mail").max_retries(3).timeout_ms(30_000);
/// assert_eq!(opts.queue.as_deref(), Some("mail"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EnqueueOptions {
    pub queue: Option<String>,
    pub max_retries: Option<i64>,
    pub scheduled_at_ms: Option<i64>,
    pub concurrency_key: Option<String>,
    pub max_concurrency: Option<i64>,
    pub deduplicate_while_queued: bool,
    pub idempotency_key: Option<String>,
    pub timeout_ms: Option<i64>,
}

impl EnqueueOptions {
    /// No options: queue `default`, 10 retries, due now.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the queue.
    pub fn queue(mut self, q: impl Into<String>) -> Self {
        self.queue = Some(q.into());
        self
    }
    /// Sets `maxRetries`.
    pub fn max_retries(mut self, n: i64) -> Self {
        self.max_retries = Some(n);
        self
    }
    /// Runs the job no earlier than `ms` since the epoch.
    pub fn scheduled_at_ms(mut self, ms: i64) -> Self {
        self.scheduled_at_ms = Some(ms);
        self
    }
    /// Caps jobs sharing `key` at `max` running at once.
    pub fn concurrency(mut self, key: impl Into<String>, max: i64) -> Self {
        self.concurrency_key = Some(key.into());
        self.max_concurrency = Some(max);
        self
    }
    /// Returns an identical queued job instead of enqueuing a second one.
    pub fn deduplicate_while_queued(mut self) -> Self {
        self.deduplicate_while_queued = true;
        self
    }
    /// Makes the enqueue durable-idempotent under `key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
    /// Fails an attempt that runs longer than `ms`.
    pub fn timeout_ms(mut self, ms: i64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
}

/// A concurrency cap: at most `max` handed-off jobs share `key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConcurrencyLimit {
    pub key: String,
    pub max: i64,
}

/// A durable operation record that rides along with an idempotent enqueue and
/// commits in the same transaction (the mailer stores delivery operations so).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewOperation {
    /// Primary key of the operation (e.g. a digest of the mail operation id).
    pub key: String,
    /// Whatever the owner needs to read back before each attempt.
    pub data: Value,
}

/// A validated, normalized job ready for a store. Built only by [`NewJob::new`].
///
/// ```
/// use duraq_core::{EnqueueOptions, NewJob};
/// let job = NewJob::new("resize", serde_json::json!([7]), EnqueueOptions::new().queue(" img ")).unwrap();
/// assert_eq!(job.queue().as_str(), "img");
/// assert_eq!(job.max_retries(), 10);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NewJob {
    id: String,
    job_name: JobName,
    args: Value,
    queue: QueueName,
    max_retries: i64,
    scheduled_at_ms: Option<i64>,
    concurrency: Option<ConcurrencyLimit>,
    deduplicate_while_queued: bool,
    idempotency_key: Option<IdempotencyKey>,
    timeout_ms: Option<i64>,
    operation: Option<NewOperation>,
}

impl NewJob {
    /// Validates and normalizes `opts` (SPEC §3) and gives the job a fresh UUIDv7 id.
    pub fn new(job_name: impl AsRef<str>, args: Value, opts: EnqueueOptions) -> Result<Self> {
        let job_name = JobName::new(job_name)?;
        let max_retries = match opts.max_retries {
            None => DEFAULT_MAX_RETRIES,
            Some(n) if n >= 0 => n,
            Some(_) => {
                return Err(Error::invalid(
                    ErrorCode::InvalidMaxRetries,
                    "maxRetries must be an integer >= 0",
                ))
            }
        };
        if matches!(opts.scheduled_at_ms, Some(ms) if ms < 0) {
            return Err(Error::invalid(
                ErrorCode::InvalidScheduledAt,
                "scheduledAtMs must be an integer >= 0",
            ));
        }
        let concurrency = match (opts.concurrency_key, opts.max_concurrency) {
            (None, None) => None,
            (Some(key), Some(max)) if !key.is_empty() && max >= 1 => {
                if key.starts_with(QUEUE_CONCURRENCY_PREFIX) {
                    return Err(Error::invalid(
                        ErrorCode::InvalidConcurrency,
                        "concurrency keys starting with `queue:` are reserved for queue caps",
                    ));
                }
                Some(ConcurrencyLimit { key, max })
            }
            _ => {
                return Err(Error::invalid(
                    ErrorCode::InvalidConcurrency,
                    "concurrencyKey (non-empty) and maxConcurrency (>= 1) go together",
                ))
            }
        };
        let idempotency_key = opts.idempotency_key.map(IdempotencyKey::new).transpose()?;
        if matches!(opts.timeout_ms, Some(ms) if ms < 1) {
            return Err(Error::invalid(
                ErrorCode::InvalidTimeout,
                "timeoutMs must be an integer >= 1",
            ));
        }
        if idempotency_key.is_some() && opts.deduplicate_while_queued {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "idempotencyKey and deduplicateWhileQueued cannot be combined",
            ));
        }
        Ok(Self {
            id: new_job_id(),
            job_name,
            args,
            queue: QueueName::new(opts.queue.unwrap_or_default()),
            max_retries,
            scheduled_at_ms: opts.scheduled_at_ms,
            concurrency,
            deduplicate_while_queued: opts.deduplicate_while_queued,
            idempotency_key,
            timeout_ms: opts.timeout_ms,
            operation: None,
        })
    }

    /// Attaches a durable operation record; it needs an idempotency key, because the
    /// operation is owned through the idempotency scope.
    pub fn with_operation(mut self, op: NewOperation) -> Result<Self> {
        if self.idempotency_key.is_none() {
            return Err(Error::invalid(
                ErrorCode::InvalidIdempotencyKey,
                "an operation record rides only on an idempotent enqueue",
            ));
        }
        self.operation = Some(op);
        Ok(self)
    }

    /// Replaces the generated id (tests use this to give two stores the same ids).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn job_name(&self) -> &JobName {
        &self.job_name
    }
    pub fn args(&self) -> &Value {
        &self.args
    }
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }
    pub fn max_retries(&self) -> i64 {
        self.max_retries
    }
    /// The requested run time; `None` means "now" (immediate).
    pub fn scheduled_at_ms(&self) -> Option<i64> {
        self.scheduled_at_ms
    }
    /// The run time resolved against `now_ms`.
    pub fn due_at_ms(&self, now_ms: i64) -> i64 {
        self.scheduled_at_ms.unwrap_or(now_ms)
    }
    pub fn concurrency(&self) -> Option<&ConcurrencyLimit> {
        self.concurrency.as_ref()
    }
    pub fn deduplicate_while_queued(&self) -> bool {
        self.deduplicate_while_queued
    }
    pub fn idempotency_key(&self) -> Option<&IdempotencyKey> {
        self.idempotency_key.as_ref()
    }
    pub fn timeout_ms(&self) -> Option<i64> {
        self.timeout_ms
    }
    pub fn operation(&self) -> Option<&NewOperation> {
        self.operation.as_ref()
    }

    /// SHA-256 of the canonical args (used by dedupe-while-queued).
    pub fn args_digest(&self) -> String {
        digest_hex("args", &self.args)
    }

    /// The idempotency scope digest: (jobName, queue, idempotencyKey), if keyed.
    pub fn scope_digest(&self) -> Option<String> {
        self.idempotency_key.as_ref().map(|key| {
            digest_hex(
                "scope",
                &json!({"jobName": self.job_name.as_str(), "queue": self.queue.as_str(), "idempotencyKey": key.as_str()}),
            )
        })
    }

    /// The owned-request digest: canonical args plus every behaviour-affecting
    /// option. Ids and the wall-clock time of an immediate enqueue are not part of it.
    pub fn request_digest(&self) -> String {
        let timing = match self.scheduled_at_ms {
            None => json!("immediate"),
            Some(ms) => json!({"scheduledAtMs": ms}),
        };
        digest_hex(
            "request",
            &json!({
                "args": self.args,
                "queue": self.queue.as_str(),
                "maxRetries": self.max_retries,
                "concurrency": self.concurrency.as_ref().map(|c| json!({"key": c.key, "max": c.max})),
                "timeoutMs": self.timeout_ms,
                "timing": timing,
            }),
        )
    }
}

/// A fresh, time-sortable job id (UUIDv7, hyphenated lower-case).
pub fn new_job_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
