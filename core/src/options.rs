//! Enqueue options as callers give them ([`EnqueueOptions`]); `new_job.rs`
//! turns them into the validated job a store receives ([`crate::NewJob`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::job::DependencyFailure;
use crate::time::{duration_to_ms, duration_to_ms_ceil, system_time_to_ms};

/// The default `maxRetries` (the wire form's type; a job may run 11 times).
pub const DEFAULT_MAX_RETRIES: i64 = 10;

/// Enqueue options, exactly as a caller (or the CLI) supplies them.
///
/// In Rust, build them with the methods, which take [`Duration`] and
/// [`SystemTime`] and unsigned counts, so a negative retry count or an
/// ambiguous time unit does not compile. The public fields are the serde/JSON
/// wire form (camelCase, milliseconds) that the CLI and dynamic producers fill;
/// [`NewJob::new`](crate::NewJob::new) validates them either way and reports bad values with their
/// codes (`invalid-max-retries`, `invalid-scheduled-at`, `invalid-timeout`,
/// `invalid-concurrency`, …).
///
/// ```
/// use std::time::Duration;
/// use duraq_core::EnqueueOptions;
/// let opts = EnqueueOptions::new()
///     .queue("mail")
///     .max_retries(3)
///     .timeout(Duration::from_secs(30))
///     .run_in(Duration::from_secs(600));
/// assert_eq!(opts.queue.as_deref(), Some("mail"));
/// assert_eq!(opts.timeout_ms, Some(30_000));
/// assert_eq!(opts.run_in_ms, Some(600_000));
/// ```
///
/// A negative retry count is not a `u32`:
///
/// ```compile_fail
/// let opts = duraq_core::EnqueueOptions::new().max_retries(-1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EnqueueOptions {
    /// The queue (`queue`); trimmed, empty or unset means `default`.
    pub queue: Option<String>,
    /// Retries after the first attempt (`maxRetries`, default 10; must be >= 0).
    pub max_retries: Option<i64>,
    /// Run no earlier than this many milliseconds since the Unix epoch
    /// (`scheduledAtMs`, >= 0). Set by [`EnqueueOptions::run_at`].
    pub scheduled_at_ms: Option<i64>,
    /// Run no earlier than this many milliseconds after the store persists the job
    /// (`runInMs`, 0 to [`MAX_RUN_IN_MS`]). Set by [`EnqueueOptions::run_in`].
    /// Unlike a resolved `scheduled_at_ms`, the delay is what an idempotent
    /// request's digest records, so retrying "in 10 minutes" replays (`docs/idempotency.md`).
    /// At most one of `scheduled_at_ms` and `run_in_ms`.
    pub run_in_ms: Option<i64>,
    /// Jobs sharing this key are capped at `max_concurrency` running at once
    /// (`concurrencyKey`; not starting with `queue:`). Set by
    /// [`EnqueueOptions::concurrency`].
    pub concurrency_key: Option<String>,
    /// The cap for `concurrency_key` (`maxConcurrency`, >= 1).
    pub max_concurrency: Option<i64>,
    /// Return an identical queued job instead of enqueuing a second one
    /// (`deduplicateWhileQueued`).
    pub deduplicate_while_queued: bool,
    /// Makes the enqueue durable-idempotent under this key (`idempotencyKey`).
    pub idempotency_key: Option<String>,
    /// Fail an attempt that runs longer than this many milliseconds (`timeoutMs`,
    /// >= 1). Set by [`EnqueueOptions::timeout`].
    pub timeout_ms: Option<i64>,
    /// Higher runs first within a queue (`priority`, −100…100; unset means 0, but
    /// stays unset in an idempotent request's digest). Set by
    /// [`EnqueueOptions::priority`].
    pub priority: Option<i64>,
    /// Jobs sharing this key start at most `rate_max` times per
    /// `rate_period_ms` (`rateKey`). Set by [`EnqueueOptions::rate_limit`].
    pub rate_key: Option<String>,
    /// The most starts per period for `rate_key` (`rateMax`, >= 1).
    pub rate_max: Option<i64>,
    /// The rate limit's period in ms (`ratePeriodMs`, >= 1).
    pub rate_period_ms: Option<i64>,
    /// The W3C `traceparent` of the span that enqueues (`traceParent`), stored
    /// with the job so that its attempts' spans link to it (`docs/tracing.md`).
    /// Set by [`EnqueueOptions::trace_parent`]; unset, the `otel` feature
    /// captures the current span's. Not part of an idempotent request's digest.
    pub trace_parent: Option<String>,
    /// The jobs this one waits for (`after`: ids, or `{"jobId", "onFailure"}`
    /// edges); until each has finished the job is `pending` (`docs/workflows.md`).
    /// Set by [`EnqueueOptions::after`] and [`EnqueueOptions::after_with`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<After>,
    /// What happens when a dependency does not complete, for every edge that
    /// names no policy of its own (`onDependencyFailure`, default `cancel`).
    pub on_dependency_failure: Option<DependencyFailure>,
    /// Cancel the job instead of starting it from this many milliseconds since
    /// the Unix epoch on (`expiresAtMs`, >= 0). Set by [`EnqueueOptions::expires_at`].
    pub expires_at_ms: Option<i64>,
    /// The same, this many milliseconds after the store persists the job
    /// (`expiresInMs`, 0 to [`MAX_RUN_IN_MS`]). Set by
    /// [`EnqueueOptions::expires_in`]. At most one of the two.
    pub expires_in_ms: Option<i64>,
    /// How many units of its concurrency cap and of its rate limit the job
    /// takes (`cost`, default 1). Set by [`EnqueueOptions::cost`].
    pub cost: Option<i64>,
    /// `false`: delete the row in the transaction that completes the job
    /// (`keepCompleted`, default `true`). Set by [`EnqueueOptions::keep_completed`].
    pub keep_completed: Option<bool>,
    /// Jobs sharing this key run one at a time, in the order they were
    /// enqueued (`sequenceKey`). Set by [`EnqueueOptions::sequence`].
    pub sequence_key: Option<String>,
    /// What a failure of this job does to its sequence (`onSequenceFailure`,
    /// default `hold`).
    pub on_sequence_failure: Option<SequenceFailure>,
    /// The key whose turn the job waits for among the other keys of its queue
    /// (`fairnessKey`, e.g. a tenant id). Set by [`EnqueueOptions::fairness_key`].
    pub fairness_key: Option<String>,
}

/// What a job of a sequence that ends `failed` (or `orphaned`) does to the
/// jobs behind it: JSON `"hold"` (the default) or `"continue"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequenceFailure {
    /// The sequence waits until the failed job is retried to completion,
    /// cancelled or deleted.
    #[default]
    Hold,
    /// The next job of the sequence runs at once.
    Continue,
}

/// One entry of [`EnqueueOptions::after`]: a job id (JSON `"…"`), or an edge
/// with a policy of its own (JSON `{"jobId": "…", "onFailure": "run"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum After {
    /// Waits for this job under the job's policy.
    Id(String),
    /// Waits for `job_id` under `on_failure`.
    #[serde(rename_all = "camelCase")]
    Edge {
        /// The job waited for.
        job_id: String,
        /// This edge's policy.
        on_failure: DependencyFailure,
    },
}

impl EnqueueOptions {
    /// Waits for job `job_id` (repeatable): the job stays `pending` until it has
    /// finished, then is due at its own time or at once, whichever is later.
    /// Naming a job that does not exist is `dependency-not-found`.
    ///
    /// ```
    /// use duraq_core::{DependencyFailure, EnqueueOptions, NewJob};
    /// let first = NewJob::new("fetch", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// let opts = EnqueueOptions::new()
    ///     .after(first.id())
    ///     .on_dependency_failure(DependencyFailure::Run);
    /// let next = NewJob::new("report", serde_json::json!([]), opts).unwrap();
    /// assert_eq!(next.dependencies()[0].job_id, first.id());
    /// assert_eq!(next.dependencies()[0].on_failure, DependencyFailure::Run);
    /// ```
    pub fn after(mut self, job_id: impl Into<String>) -> Self {
        self.after.push(After::Id(job_id.into()));
        self
    }

    /// Waits for `job_id` with a policy for this edge alone.
    pub fn after_with(mut self, job_id: impl Into<String>, on_failure: DependencyFailure) -> Self {
        self.after.push(After::Edge {
            job_id: job_id.into(),
            on_failure,
        });
        self
    }

    /// The policy of every dependency edge that names none (default `cancel`).
    pub fn on_dependency_failure(mut self, policy: DependencyFailure) -> Self {
        self.on_dependency_failure = Some(policy);
        self
    }

    /// No options: queue `default`, 10 retries, due now.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the queue.
    pub fn queue(mut self, q: impl Into<String>) -> Self {
        self.queue = Some(q.into());
        self
    }
    /// Sets how many times a failed job is retried (`maxRetries`).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = Some(i64::from(n));
        self
    }
    /// Runs the job no earlier than `at`. A time before the Unix epoch, or too
    /// far in the future for `i64` milliseconds, makes [`NewJob::new`](crate::NewJob::new) fail with
    /// `invalid-scheduled-at`. Replaces an earlier [`EnqueueOptions::run_in`].
    pub fn run_at(mut self, at: SystemTime) -> Self {
        self.scheduled_at_ms = Some(system_time_to_ms(at).unwrap_or_else(|bad| bad));
        self.run_in_ms = None;
        self
    }
    /// Runs the job no earlier than `delay` after the store persists it, by the
    /// store's clock (whole milliseconds). The delay, not the resolved time, is
    /// part of an idempotent request's digest. A delay above [`MAX_RUN_IN_MS`]
    /// makes [`NewJob::new`](crate::NewJob::new) fail with `invalid-scheduled-at`. Replaces an earlier
    /// [`EnqueueOptions::run_at`].
    pub fn run_in(mut self, delay: Duration) -> Self {
        self.run_in_ms = Some(duration_to_ms(delay).unwrap_or(i64::MAX));
        self.scheduled_at_ms = None;
        self
    }
    /// Caps jobs sharing `key` at `max` running at once (`max` >= 1, else
    /// `invalid-concurrency`).
    pub fn concurrency(mut self, key: impl Into<String>, max: u32) -> Self {
        self.concurrency_key = Some(key.into());
        self.max_concurrency = Some(i64::from(max));
        self
    }
    /// Sets the job's priority within its queue: −100 (last) to 100 (first),
    /// default 0. A value outside the range makes [`NewJob::new`](crate::NewJob::new) fail with
    /// `invalid-priority`.
    pub fn priority(mut self, priority: i8) -> Self {
        self.priority = Some(i64::from(priority));
        self
    }
    /// Starts jobs sharing `key` at most `max` times per `period`, across every
    /// worker process (`max` >= 1 and `period` >= 1 ms, else
    /// `invalid-rate-limit`). A key keeps the limit it was first used with
    /// (`rate-limit-conflict` otherwise).
    pub fn rate_limit(mut self, key: impl Into<String>, max: u32, period: Duration) -> Self {
        self.rate_key = Some(key.into());
        self.rate_max = Some(i64::from(max));
        self.rate_period_ms = Some(duration_to_ms_ceil(period).unwrap_or(i64::MIN));
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
    /// Fails an attempt that runs longer than `timeout` (rounded up to whole
    /// milliseconds). Zero, or more than `i64::MAX` milliseconds, makes
    /// [`NewJob::new`](crate::NewJob::new) fail with `invalid-timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(duration_to_ms_ceil(timeout).unwrap_or(i64::MIN));
        self
    }

    /// Stores this W3C `traceparent` with the job (`docs/tracing.md`); one that is
    /// not makes [`NewJob::new`](crate::NewJob::new) fail with `invalid-trace-parent`.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let job = NewJob::new("email", serde_json::json!([]), EnqueueOptions::new().trace_parent(tp)).unwrap();
    /// assert_eq!(job.trace_parent().map(|t| t.as_str()), Some(tp));
    /// let bad = NewJob::new("email", serde_json::json!([]), EnqueueOptions::new().trace_parent("00-1-2-3"));
    /// assert_eq!(bad.unwrap_err().code().as_str(), "invalid-trace-parent");
    /// ```
    pub fn trace_parent(mut self, traceparent: impl Into<String>) -> Self {
        self.trace_parent = Some(traceparent.into());
        self
    }

    /// Cancels the job instead of starting it once `at` has passed: a claim at
    /// or after `at` ends it `cancelled` with `lastError` `expired`
    /// ([`crate::Job::EXPIRED`]). A time before the Unix epoch makes
    /// [`NewJob::new`](crate::NewJob::new) fail with `invalid-expiry`. Replaces an
    /// earlier [`EnqueueOptions::expires_in`]; in milliseconds, set `expires_at_ms`.
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at_ms = Some(system_time_to_ms(at).unwrap_or_else(|bad| bad));
        self.expires_in_ms = None;
        self
    }

    /// Cancels the job instead of starting it once `ttl` has passed since the
    /// store persisted it, by the store's clock (see [`EnqueueOptions::expires_at`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let opts = EnqueueOptions::new().expires_in(Duration::from_secs(60));
    /// let job = NewJob::new("email", serde_json::json!([]), opts).unwrap();
    /// assert_eq!(job.expires_at_ms(1_000), Some(61_000));
    /// let both = EnqueueOptions { expires_at_ms: Some(5), ..EnqueueOptions::new().expires_in(Duration::ZERO) };
    /// let err = NewJob::new("email", serde_json::json!([]), both).unwrap_err();
    /// assert_eq!(err.code().as_str(), "invalid-expiry");
    /// ```
    pub fn expires_in(mut self, ttl: Duration) -> Self {
        self.expires_in_ms = Some(duration_to_ms(ttl).unwrap_or(i64::MAX));
        self.expires_at_ms = None;
        self
    }

    /// Makes the job take `units` of its concurrency cap and of its rate
    /// limit instead of 1: a call to an API that spends several points of a
    /// budget, say. Zero, or more than the job's own `max` of either, makes
    /// [`NewJob::new`](crate::NewJob::new) fail with `invalid-cost`: the job
    /// could never start. Under a queue's cap (set per worker, not known when
    /// enqueuing) a job costing more than the cap starts when its queue runs
    /// nothing else of the cap.
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let opts = EnqueueOptions::new().rate_limit("api", 100, Duration::from_secs(1)).cost(10);
    /// assert_eq!(NewJob::new("sync", serde_json::json!([]), opts).unwrap().cost(), 10);
    /// let over = EnqueueOptions::new().concurrency("api", 2).cost(3);
    /// let err = NewJob::new("sync", serde_json::json!([]), over).unwrap_err();
    /// assert_eq!(err.code().as_str(), "invalid-cost");
    /// ```
    pub fn cost(mut self, units: u32) -> Self {
        self.cost = Some(i64::from(units));
        self
    }

    /// `false` makes the job **ephemeral**: once it completes, its row is
    /// deleted in the very transaction that completes it, so a queue of
    /// jobs nobody reads afterwards leaves nothing to prune. A failed or
    /// cancelled job is kept as usual (someone will want to see why), and so
    /// is a workflow step that other jobs wait for (they read its output).
    /// The throughput totals and history still count it, and an idempotent
    /// enqueue still replays with its id; `jobs show` of it is
    /// `job-not-found`.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let opts = EnqueueOptions::new().keep_completed(false);
    /// assert!(!NewJob::new("ping", serde_json::json!([]), opts).unwrap().keeps_completed());
    /// ```
    pub fn keep_completed(mut self, keep: bool) -> Self {
        self.keep_completed = Some(keep);
        self
    }

    /// Runs the job in the sequence `key`: the jobs sharing a sequence key run
    /// one at a time, across every worker, in the order they were enqueued
    /// (by the store's clock, then by id). A job whose last attempt fails
    /// holds the jobs behind it until it is retried to completion, cancelled
    /// or deleted, unless it was enqueued with
    /// [`SequenceFailure::Continue`]. The key follows the rules of job names
    /// (`invalid-sequence` otherwise); a sequence cannot be combined with
    /// dependencies (`unsupported-option`), which order jobs their own way.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let opts = EnqueueOptions::new().sequence("account:7");
    /// let job = NewJob::new("sync", serde_json::json!([]), opts).unwrap();
    /// assert_eq!(job.sequence_key(), Some("account:7"));
    /// ```
    pub fn sequence(mut self, key: impl Into<String>) -> Self {
        self.sequence_key = Some(key.into());
        self
    }

    /// Takes turns with the other keys of the job's queue: due jobs of
    /// different fairness keys (say, tenant ids) are claimed in turn, so one
    /// key's backlog never makes another key's jobs wait behind all of it.
    /// A key alone in its queue drains as fast as jobs without a key; a
    /// worker can give a key more turns in a row
    /// (`WorkerBuilder::fairness_weight`). Jobs without a key take their
    /// turns together, as one key. The key follows the rules of job names
    /// (`invalid-fairness-key` otherwise).
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let opts = EnqueueOptions::new().fairness_key("tenant:42");
    /// let job = NewJob::new("import_row", serde_json::json!([]), opts).unwrap();
    /// assert_eq!(job.fairness_key(), Some("tenant:42"));
    /// ```
    pub fn fairness_key(mut self, key: impl Into<String>) -> Self {
        self.fairness_key = Some(key.into());
        self
    }

    /// What this job's failure does to its sequence (see
    /// [`EnqueueOptions::sequence`]).
    pub fn on_sequence_failure(mut self, policy: SequenceFailure) -> Self {
        self.on_sequence_failure = Some(policy);
        self
    }

    /// These options over `defaults`, field by field: each option this value sets
    /// wins, each it leaves unset comes from `defaults`. The run time
    /// (`scheduled_at_ms`/`run_in_ms`), the expiry, the concurrency cap
    /// (`concurrency_key`/`max_concurrency`) and the rate limit are each one field; dedupe is on if
    /// either asks for it. [`crate::JobArgs::job_with`] lays a caller's options
    /// over the job type's [`crate::JobArgs::options`] so.
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::EnqueueOptions;
    /// let defaults = EnqueueOptions::new().queue("mail").max_retries(3);
    /// let opts = EnqueueOptions::new().max_retries(0).or_defaults(defaults);
    /// assert_eq!(opts.queue.as_deref(), Some("mail"));
    /// assert_eq!(opts.max_retries, Some(0));
    /// ```
    pub fn or_defaults(self, defaults: EnqueueOptions) -> Self {
        let timing_set = self.scheduled_at_ms.is_some() || self.run_in_ms.is_some();
        let cap_set = self.concurrency_key.is_some() || self.max_concurrency.is_some();
        let rate_set =
            self.rate_key.is_some() || self.rate_max.is_some() || self.rate_period_ms.is_some();
        let (rate_key, rate_max, rate_period_ms) = if rate_set {
            (self.rate_key, self.rate_max, self.rate_period_ms)
        } else {
            (
                defaults.rate_key,
                defaults.rate_max,
                defaults.rate_period_ms,
            )
        };
        let (scheduled_at_ms, run_in_ms) = if timing_set {
            (self.scheduled_at_ms, self.run_in_ms)
        } else {
            (defaults.scheduled_at_ms, defaults.run_in_ms)
        };
        let (expires_at_ms, expires_in_ms) =
            if self.expires_at_ms.is_some() || self.expires_in_ms.is_some() {
                (self.expires_at_ms, self.expires_in_ms)
            } else {
                (defaults.expires_at_ms, defaults.expires_in_ms)
            };
        let (concurrency_key, max_concurrency) = if cap_set {
            (self.concurrency_key, self.max_concurrency)
        } else {
            (defaults.concurrency_key, defaults.max_concurrency)
        };
        Self {
            queue: self.queue.or(defaults.queue),
            max_retries: self.max_retries.or(defaults.max_retries),
            scheduled_at_ms,
            run_in_ms,
            concurrency_key,
            max_concurrency,
            deduplicate_while_queued: self.deduplicate_while_queued
                || defaults.deduplicate_while_queued,
            idempotency_key: self.idempotency_key.or(defaults.idempotency_key),
            timeout_ms: self.timeout_ms.or(defaults.timeout_ms),
            priority: self.priority.or(defaults.priority),
            rate_key,
            rate_max,
            rate_period_ms,
            trace_parent: self.trace_parent.or(defaults.trace_parent),
            after: if self.after.is_empty() {
                defaults.after
            } else {
                self.after
            },
            on_dependency_failure: self
                .on_dependency_failure
                .or(defaults.on_dependency_failure),
            expires_at_ms,
            expires_in_ms,
            cost: self.cost.or(defaults.cost),
            keep_completed: self.keep_completed.or(defaults.keep_completed),
            sequence_key: self.sequence_key.or(defaults.sequence_key),
            on_sequence_failure: self.on_sequence_failure.or(defaults.on_sequence_failure),
            fairness_key: self.fairness_key.or(defaults.fairness_key),
        }
    }
}

/// A concurrency cap: at most `max` handed-off jobs share `key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConcurrencyLimit {
    /// The shared key (`concurrencyKey`).
    pub key: String,
    /// At most this many at once (`maxConcurrency`, >= 1).
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

/// The longest accepted `runInMs`: about 146 million years, so that adding it to any
/// clock reading can never overflow.
pub const MAX_RUN_IN_MS: i64 = i64::MAX / 2;
