//! Typed jobs: a job type states its name, its argument shape and its defaults
//! once, in one `impl JobArgs`. Producers enqueue values of the type
//! (`SendWelcome { user_id: 42 }.job()?`) and workers register a handler whose
//! `type Args` is the type, so the name is never typed twice and a producer
//! cannot enqueue the wrong shape: a mistake is a compile error, not a failed job
//! found in production.
//!
//! Why a thin layer and not a second implementation: a typed job becomes an
//! ordinary validated [`NewJob`] (the type's name, its args serialized to JSON,
//! its default options under the caller's), so every store path — `enqueue`,
//! `enqueue_batch`, `replace_scheduled`, a caller's transaction, periodic ticks —
//! takes it unchanged; a typed handler is registered as a JSON handler that first
//! decodes the args. The untyped path (`NewJob::new`, `Registry::register_fn`)
//! stays for the CLI and producers that only know a name at run time.
//!
//! Decoding can still fail at run time, when rows outlive a change of the struct
//! (a field added without `#[serde(default)]`). Such an attempt fails at once,
//! without retries, with a `lastError` of `invalid-args: <job name>: <serde's
//! message, which names the field>`: no retry can fix the row.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::new_job::NewJob;
use crate::options::EnqueueOptions;

/// A job type: its name, its arguments (the value itself) and its defaults.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::{EnqueueOptions, JobArgs};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct SendWelcome {
///     user_id: i64,
/// }
///
/// impl JobArgs for SendWelcome {
///     const NAME: &'static str = "send_welcome";
///     fn options() -> EnqueueOptions {
///         EnqueueOptions::new().queue("mail").max_retries(5).timeout(Duration::from_secs(30))
///     }
///     fn backoff(attempt: u32) -> Option<Duration> {
///         Some(Duration::from_secs(u64::from(attempt) * 30))
///     }
/// }
///
/// let job = SendWelcome { user_id: 42 }.job().unwrap();
/// assert_eq!(job.job_name().as_str(), "send_welcome");
/// assert_eq!(job.queue().as_str(), "mail");
/// assert_eq!(job.args(), &serde_json::json!({"user_id": 42}));
///
/// // The caller's options win field by field over the type's defaults.
/// let urgent = SendWelcome { user_id: 7 }
///     .job_with(EnqueueOptions::new().queue("urgent"))
///     .unwrap();
/// assert_eq!((urgent.queue().as_str(), urgent.max_retries()), ("urgent", 5));
/// ```
///
/// The wrong argument shape does not compile:
///
/// ```compile_fail
/// # use duraq_core::JobArgs;
/// # #[derive(serde::Serialize, serde::Deserialize)]
/// # struct SendWelcome { user_id: i64 }
/// # impl JobArgs for SendWelcome { const NAME: &'static str = "send_welcome"; }
/// let job = SendWelcome { user_id: "42" }.job();
/// ```
///
/// Per-job priority does not exist yet (queues have priorities, see
/// [`crate::QueueConfig`]); when it does, it becomes one more default here.
pub trait JobArgs: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The `jobName` every job of this type is enqueued and claimed under.
    const NAME: &'static str;

    /// Options every job of this type starts from (queue, retries, timeout,
    /// concurrency, …); a caller's options override them field by field
    /// ([`EnqueueOptions::or_defaults`]). Default: none (queue `default`, 10
    /// retries).
    fn options() -> EnqueueOptions {
        EnqueueOptions::new()
    }

    /// The retry delay after failed attempt `attempt` (1-based) of a job of this
    /// type; `None` (the default) keeps the store's policy (`docs/retries.md`). A handler's
    /// [`crate::JobHandler::backoff`] defaults to this.
    fn backoff(attempt: u32) -> Option<Duration> {
        let _ = attempt;
        None
    }

    /// This value as a validated job with the type's default options.
    ///
    /// Errors: `invalid-args` if the value does not serialize to JSON (a map with
    /// non-string keys), and the validation errors of [`NewJob::new`] for bad
    /// defaults.
    fn job(&self) -> Result<NewJob> {
        self.job_with(EnqueueOptions::new())
    }

    /// This value as a validated job, with `options` laid over the type's
    /// defaults ([`EnqueueOptions::or_defaults`]).
    fn job_with(&self, options: EnqueueOptions) -> Result<NewJob> {
        NewJob::new(
            Self::NAME,
            args_json(self)?,
            options.or_defaults(Self::options()),
        )
    }
}

/// The JSON args of `args`, or `invalid-args`.
pub(crate) fn args_json<A: JobArgs>(args: &A) -> Result<Value> {
    serde_json::to_value(args).map_err(|e| {
        Error::invalid(
            ErrorCode::InvalidArgs,
            format!("args of {} do not serialize to JSON: {e}", A::NAME),
        )
    })
}

/// Decodes a row's JSON args into `A`; the message of a failure is the
/// `lastError` of the attempt: `invalid-args: <name>: <serde's message>`.
pub(crate) fn decode_args<A: JobArgs>(args: Value) -> std::result::Result<A, String> {
    serde_json::from_value(args).map_err(|e| format!("invalid-args: {}: {e}", A::NAME))
}
