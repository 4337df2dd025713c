//! What a handler sees and returns. Handlers are plain async code: they get a
//! [`JobContext`] (the claimed row, the attempt, a way to ask for a reschedule) and
//! return `Ok(JobResult)` or a [`JobError`]. The runtime, not the handler, turns
//! that into a fenced [`Outcome`] report, so a handler can never report on a lease
//! it does not hold.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::watch;

use super::progress_sink::ProgressSink;
use crate::clock::Clock;
use crate::error::{Error, ErrorCode};
use crate::job::Job;
use crate::requests::Outcome;
use crate::store::Store;
use crate::time::ms_to_system_time;
use crate::typed::{decode_args, JobArgs};

/// A typed job handler: the work for one [`JobArgs`] type.
///
/// The job name is `Self::Args::NAME`, so it is written once, on the args type;
/// [`crate::Registry::register`] registers the handler under it. Arguments are
/// decoded from the row's JSON `args`; a row whose args do not decode (an old job
/// after a struct change) fails at once, without retries, with a `lastError`
/// starting `invalid-args:` that names the job and the field.
///
/// ```
/// use duraq_core::{JobArgs, JobContext, JobError, JobHandler, JobResult, Registry};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct SendWelcome {
///     user_id: u64,
/// }
///
/// impl JobArgs for SendWelcome {
///     const NAME: &'static str = "send_welcome";
/// }
///
/// struct SendWelcomeHandler;
///
/// #[duraq_core::async_trait]
/// impl JobHandler for SendWelcomeHandler {
///     type Args = SendWelcome;
///     async fn perform(&self, ctx: &JobContext, args: SendWelcome) -> Result<JobResult, JobError> {
///         if args.user_id == 0 {
///             return Err(JobError::new("no such user").discard());
///         }
///         let _ = ctx.attempt();
///         Ok(JobResult::Completed)
///     }
/// }
///
/// let registry = Registry::new().register(SendWelcomeHandler).unwrap();
/// assert!(registry.contains("send_welcome"));
/// ```
#[async_trait]
pub trait JobHandler: Send + Sync + 'static {
    /// The job type this handler runs; its [`JobArgs::NAME`] is the job name.
    type Args: JobArgs;

    /// Runs one attempt.
    async fn perform(&self, ctx: &JobContext, args: Self::Args) -> Result<JobResult, JobError>;

    /// The retry delay after failed attempt `attempt` (1-based); `None` keeps the
    /// store's policy (`docs/retries.md`). Defaults to the type's [`JobArgs::backoff`]. A
    /// [`JobError::retry_in`] on the error itself wins over this.
    fn backoff(&self, attempt: u32) -> Option<Duration> {
        <Self::Args as JobArgs>::backoff(attempt)
    }
}

/// An untyped handler over the raw JSON `args`, for handlers chosen at run time
/// (such as the CLI's built-ins). Closures can be registered directly with
/// [`crate::Registry::register_fn`]. Typed handlers run on this path too: the
/// registry wraps a [`JobHandler`] in a `JsonHandler` that decodes first.
///
/// ```
/// use duraq_core::{JobContext, JobError, JobResult, Registry};
/// use duraq_core::worker::JsonHandler;
///
/// struct Echo;
///
/// #[duraq_core::async_trait]
/// impl JsonHandler for Echo {
///     async fn perform(&self, _ctx: &JobContext, args: serde_json::Value) -> Result<JobResult, JobError> {
///         println!("{args}");
///         Ok(JobResult::Completed)
///     }
/// }
///
/// let registry = Registry::new().register_json("echo", Echo).unwrap();
/// assert!(registry.contains("echo"));
/// ```
#[async_trait]
pub trait JsonHandler: Send + Sync + 'static {
    /// Runs one attempt.
    async fn perform(&self, ctx: &JobContext, args: Value) -> Result<JobResult, JobError>;

    /// As [`JobHandler::backoff`] (default `None`: the store's policy).
    fn backoff(&self, attempt: u32) -> Option<Duration> {
        let _ = attempt;
        None
    }
}

/// A typed handler on the JSON path: decode, then run.
pub(crate) struct Typed<H>(pub(crate) H);

#[async_trait]
impl<H: JobHandler> JsonHandler for Typed<H> {
    async fn perform(&self, ctx: &JobContext, args: Value) -> Result<JobResult, JobError> {
        let args = decode_args::<H::Args>(args).map_err(|m| JobError::new(m).discard())?;
        self.0.perform(ctx, args).await
    }
    fn backoff(&self, attempt: u32) -> Option<Duration> {
        self.0.backoff(attempt)
    }
}

/// How an attempt ended successfully.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobResult {
    /// The job is done (`completed`).
    Completed,
    /// The job is done, and this is its output: kept on the job (`output`, at
    /// most 256 KiB of JSON, else the attempt fails with `output-too-large`)
    /// for its dependents to read ([`JobContext::dependencies`]). Typed:
    /// [`JobResult::output`].
    Output(Value),
    /// End this attempt and run the job again after the delay, without using an
    /// attempt or touching `lastError` (`docs/jobs.md`). Made by [`JobContext::reschedule_in`].
    Reschedule(Duration),
}

impl JobResult {
    /// Completes with `output` serialized to JSON (a typed job's output).
    ///
    /// ```
    /// use duraq_core::JobResult;
    /// #[derive(serde::Serialize)]
    /// struct Summary { sent: u32 }
    /// let done = JobResult::output(&Summary { sent: 3 }).unwrap();
    /// assert_eq!(done, JobResult::Output(serde_json::json!({"sent": 3})));
    /// ```
    pub fn output<T: serde::Serialize>(output: &T) -> Result<Self, JobError> {
        serde_json::to_value(output)
            .map(Self::Output)
            .map_err(|e| JobError::new(format!("the output does not serialize to JSON: {e}")))
    }
}

impl From<()> for JobResult {
    fn from(_: ()) -> Self {
        Self::Completed
    }
}

/// A failed attempt: the message becomes `lastError`.
///
/// Any `std::error::Error` converts into it, so `?` works in handlers, and the
/// message keeps the error's whole source chain ([`crate::inspect::error_chain`]:
/// `outer: cause: root cause`), so that `lastError` says what failed and why.
/// [`JobError::new`] formats its message in the alternate form (`{:#}`), in
/// which an `anyhow::Error` prints its chain of contexts too:
/// `.map_err(JobError::new)?`.
///
/// ```
/// use duraq_core::JobError;
/// use std::time::Duration;
/// let err = JobError::new("smtp unavailable").retry_in(Duration::from_secs(5));
/// assert_eq!(err.message(), "smtp unavailable");
/// assert_eq!(err.retry_delay(), Some(Duration::from_secs(5)));
/// let parse: JobError = "x".parse::<u32>().unwrap_err().into();
/// assert!(!parse.is_discard());
///
/// // An error and its source, as `thiserror`'s `#[source]` or `#[from]` make them.
/// #[derive(Debug)]
/// struct BadOrderId(std::num::ParseIntError);
/// impl std::fmt::Display for BadOrderId {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("parsing the order id")
///     }
/// }
/// impl std::error::Error for BadOrderId {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
/// let err: JobError = BadOrderId("x".parse::<u64>().unwrap_err()).into();
/// assert_eq!(err.message(), "parsing the order id: invalid digit found in string");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    message: String,
    retry_in: Option<Duration>,
    discard: bool,
    code: Option<ErrorCode>,
    /// Set by a durable sleep or wait: not a failure, but the end of the
    /// attempt ([`JobContext::sleep_until`], [`JobContext::wait_for_signal`]).
    suspend: Option<Suspend>,
}

impl JobError {
    /// A failed attempt with `message`, retried by the normal policy.
    ///
    /// `message` is formatted with `{:#}`: plain text and `std` errors read the
    /// same as with `to_string()`, and an `anyhow::Error` keeps its chain of
    /// contexts (`parsing the order id: invalid digit found in string`). To keep
    /// a `std` error's source chain, convert it instead (`JobError::from(err)`,
    /// which is what `?` does).
    pub fn new(message: impl fmt::Display) -> Self {
        Self {
            message: format!("{message:#}"),
            retry_in: None,
            discard: false,
            code: None,
            suspend: None,
        }
    }

    /// An error of duraq's own making inside a handler (a step's), with its
    /// stable code as the start of its message.
    pub(crate) fn coded(code: ErrorCode, message: impl fmt::Display) -> Self {
        Self {
            code: Some(code),
            ..Self::new(format!("{code}: {message}"))
        }
    }

    /// The end of an attempt that resumes the job after `delay`, at `until_ms`.
    pub(crate) fn suspended(delay: Duration, until_ms: i64) -> Self {
        Self {
            suspend: Some(Suspend::Sleep(delay)),
            ..Self::new(format!("sleeping until {until_ms} (ms since the epoch)"))
        }
    }

    /// The end of an attempt that waits for signal `name` until `until_ms`.
    pub(crate) fn awaiting(name: &str, until_ms: i64) -> Self {
        Self {
            suspend: Some(Suspend::Signal {
                name: name.to_owned(),
                until_ms,
            }),
            ..Self::new(format!("waiting for signal {name:?} until {until_ms}"))
        }
    }

    /// Retries after `delay` instead of the policy's backoff (if retries are left).
    pub fn retry_in(mut self, delay: Duration) -> Self {
        self.retry_in = Some(delay);
        self
    }

    /// Fails the job at once, without further retries.
    pub fn discard(mut self) -> Self {
        self.discard = true;
        self
    }

    /// The message stored as `lastError`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The explicit retry delay, if any.
    pub fn retry_delay(&self) -> Option<Duration> {
        self.retry_in
    }

    /// Whether the job fails without further retries.
    pub fn is_discard(&self) -> bool {
        self.discard
    }

    /// The stable code of an error duraq made inside the handler (a step's:
    /// `duplicate-step`, `invalid-step-name`, `output-too-large`,
    /// `lease-lost`); `None` for the handler's own errors.
    pub fn code(&self) -> Option<ErrorCode> {
        self.code
    }

    /// Whether this is not a failure but a durable sleep ending the attempt
    /// ([`JobContext::sleep`]): pass it on with `?`, and the job resumes later
    /// without using a retry.
    pub fn is_suspension(&self) -> bool {
        self.suspend.is_some()
    }
}

/// How a durable sleep or wait ends an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Suspend {
    /// Run again after this long.
    Sleep(Duration),
    /// Wait as `pending` for a signal until a time.
    Signal { name: String, until_ms: i64 },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for JobError {
    /// The error with its whole source chain ([`crate::inspect::error_chain`]).
    fn from(err: E) -> Self {
        Self::new(crate::error::error_chain(&err))
    }
}

/// Everything a handler may know about the attempt it runs. Cheap to clone.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) job: Arc<Job>,
    pub(crate) worker_id: Arc<str>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) stopping: watch::Receiver<bool>,
    /// Turns true when this attempt's job was cancelled (or its lease lost).
    pub(crate) cancel: watch::Receiver<bool>,
    /// Where `progress` and `log` go (throttled writes, see [`ProgressSink`]).
    pub(crate) progress: Arc<ProgressSink>,
    /// What a store reported for this attempt on the handler's own
    /// transaction ([`crate::driver::note_reported_in_transaction`]).
    pub(crate) reported: Arc<std::sync::Mutex<Option<crate::Outcome>>>,
    /// The job's recorded steps, as this attempt has seen them.
    pub(crate) journal: Arc<tokio::sync::Mutex<crate::durable::Journal>>,
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("job_id", &self.job.id)
            .field("job_name", &self.job.job_name)
            .field("attempt", &self.job.attempts)
            .field("worker_id", &self.worker_id)
            .finish()
    }
}

impl JobContext {
    /// The claimed row, as it was at claim time (`handed_off`, with its lease).
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// The job id.
    pub fn job_id(&self) -> &str {
        &self.job.id
    }

    /// This attempt's lease: the fence a report on the handler's own
    /// transaction (a store's `report_in`) checks, so that an attempt whose
    /// job was recovered, cancelled or claimed again cannot finish it.
    ///
    /// ```
    /// # fn show(ctx: &duraq_core::JobContext) {
    /// let lease = ctx.lease();
    /// assert_eq!(lease.job_id, ctx.job_id());
    /// # }
    /// ```
    pub fn lease(&self) -> crate::driver::Lease {
        self.job.lease().unwrap_or_else(|| crate::driver::Lease {
            // The runtime runs only leased jobs; an empty lease is never current.
            job_id: self.job.id.clone(),
            handoff_id: String::new(),
        })
    }

    /// This job's dependencies as they are now (`docs/workflows.md`), in the
    /// order they were given: each one's status and `output`. A dependency
    /// that was pruned since is left out. Under `onDependencyFailure = run` a
    /// dependency may be `failed`, `cancelled` or `orphaned`.
    pub async fn dependencies(&self) -> Result<Vec<Job>, Error> {
        let mut jobs = Vec::with_capacity(self.job.depends_on.len());
        for dep in &self.job.depends_on {
            if let Some(job) = self.store.get_job(&dep.job_id).await? {
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// How this job's dependencies ended, one count per status (a batch's
    /// callback: how many of the batch completed, failed, were cancelled).
    pub async fn dependency_counts(&self) -> Result<crate::inspect::StatusCounts, Error> {
        let mut per_status = [0i64; crate::job::STATUS_COUNT];
        for job in self.dependencies().await? {
            per_status[job.status.index()] += 1;
        }
        Ok(crate::inspect::StatusCounts::from_array(per_status))
    }

    /// The output of dependency `job_id` decoded as `T` (a typed job's
    /// output): `None` when it has none (not completed, or completed without
    /// one), or is not a dependency of this job.
    pub async fn dependency_output<T: serde::de::DeserializeOwned>(
        &self,
        job_id: &str,
    ) -> Result<Option<T>, Error> {
        if !self.job.depends_on.iter().any(|d| d.job_id == job_id) {
            return Ok(None);
        }
        let Some(output) = self.store.get_job(job_id).await?.and_then(|j| j.output) else {
            return Ok(None);
        };
        serde_json::from_value(output).map(Some).map_err(|e| {
            Error::invalid(
                crate::ErrorCode::InvalidArgs,
                format!("the output of job {job_id} does not decode: {e}"),
            )
        })
    }

    /// The job name.
    pub fn job_name(&self) -> &str {
        &self.job.job_name
    }

    /// This attempt's number, 1-based (`attempts` after the claim).
    pub fn attempt(&self) -> u32 {
        attempt_number(self.job.attempts)
    }

    /// The raw JSON `args`.
    pub fn args(&self) -> &Value {
        &self.job.args
    }

    /// The id of the worker running the attempt.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// The store the job came from (e.g. for operation records).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The worker's clock.
    pub fn now(&self) -> SystemTime {
        ms_to_system_time(self.clock.now_ms())
    }

    /// The worker's clock, in milliseconds since the epoch (the stores' unit).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The value to return to end this attempt and run the job again after `delay`
    /// (reported as [`Outcome::Reschedule`]; no attempt is used).
    pub fn reschedule_in(&self, delay: Duration) -> JobResult {
        JobResult::Reschedule(delay)
    }

    /// Whether the worker has begun a graceful shutdown; long handlers may use it
    /// to stop early (e.g. by rescheduling themselves).
    pub fn is_shutting_down(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Resolves when the worker begins a graceful shutdown (at once if it has).
    pub async fn shutting_down(&self) {
        let mut stopping = self.stopping.clone();
        let _ = stopping.wait_for(|s| *s).await;
    }

    /// Reports how far the attempt has come: `fraction` of the work (0.0 ..= 1.0)
    /// and a short message, shown by `duraq jobs show` and live on the
    /// dashboard's job page (`docs/jobs.md`, "Progress and logs"). Cheap and
    /// never waits for the database: the newest report is buffered and stored
    /// at most once a second, and for the last time before the attempt's
    /// outcome, so the final value is never lost. A NaN or out-of-range
    /// fraction is refused with `invalid-progress` and changes nothing; a
    /// message is cut at [`crate::limits::MAX_LINE_BYTES`] and its control characters
    /// become spaces.
    ///
    /// ```
    /// use duraq_core::{JobContext, JobResult, Registry};
    /// let registry = Registry::new()
    ///     .register_fn("import", |ctx: JobContext, _args| async move {
    ///         for batch in 0..10 {
    ///             ctx.progress(f64::from(batch) / 10.0, format!("batch {batch} of 10"))?;
    ///             ctx.log(format!("imported batch {batch}"));
    ///         }
    ///         ctx.progress(1.0, "done")?;
    ///         Ok(JobResult::Completed)
    ///     })
    ///     .unwrap();
    /// assert!(registry.contains("import"));
    /// ```
    pub fn progress(&self, fraction: f64, message: impl Into<String>) -> Result<(), Error> {
        self.progress.progress(fraction, message.into())
    }

    /// Adds a line to the job's log, shown with its progress. Cheap and never
    /// waits for the database: lines are buffered and stored together at most
    /// once a second, and for the last time before the attempt's outcome. The
    /// job keeps its newest [`crate::limits::MAX_LOG_LINES`] lines across attempts
    /// (and at most that many wait in memory, however many are logged); a
    /// line is cut at [`crate::limits::MAX_LINE_BYTES`] and its control characters
    /// become spaces. After a lost lease the attempt's lines are dropped.
    pub fn log(&self, line: impl Into<String>) {
        self.progress.log(line.into())
    }

    /// Whether this attempt was cancelled: an operator cancelled the running
    /// job (`duraq jobs cancel`, [`crate::Operate::cancel_job`], a keyed cancel or replace
    /// that stops the running owner), or the worker's lease on it was lost (a
    /// recovery by another process). Either way the attempt's outcome will not
    /// be recorded, so the handler should stop and return; if it does not, the
    /// runtime aborts it after the worker's cancel grace period (default 10 s,
    /// [`crate::worker::WorkerBuilder::cancel_grace`]).
    pub fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Resolves when this attempt is cancelled (at once if it was); see
    /// [`JobContext::is_cancelled`]. Never resolves for an attempt that is not
    /// cancelled, so it fits in a `select!` beside the work:
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::{JobContext, JobError, JobResult, Registry};
    /// let registry = Registry::new()
    ///     .register_fn("long", |ctx: JobContext, _args| async move {
    ///         tokio::select! {
    ///             _ = ctx.cancelled() => Err(JobError::new("cancelled").discard()),
    ///             _ = tokio::time::sleep(Duration::from_secs(60)) => Ok(JobResult::Completed),
    ///         }
    ///     })
    ///     .unwrap();
    /// assert!(registry.contains("long"));
    /// ```
    pub async fn cancelled(&self) {
        let mut cancel = self.cancel.clone();
        if cancel.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Turns what a handler returned into the outcome to report.
pub(crate) fn outcome_of(
    result: Result<JobResult, JobError>,
    attempt: u32,
    backoff: &dyn Fn(u32) -> Option<Duration>,
) -> Outcome {
    match result {
        Ok(JobResult::Completed) => Outcome::Completed,
        Ok(JobResult::Output(output)) => match crate::transitions::output_size_error(&output) {
            None => Outcome::CompletedWith { output },
            Some(error) => failed(error, backoff(attempt), false),
        },
        Ok(JobResult::Reschedule(d)) => Outcome::Reschedule {
            delay_ms: duration_ms(d),
        },
        Err(JobError {
            suspend: Some(Suspend::Sleep(d)),
            ..
        }) => Outcome::Reschedule {
            delay_ms: duration_ms(d),
        },
        Err(JobError {
            suspend: Some(Suspend::Signal { name, until_ms }),
            ..
        }) => Outcome::AwaitSignal { name, until_ms },
        Err(e) => failed(
            e.message,
            e.retry_in.or_else(|| backoff(attempt)),
            e.discard,
        ),
    }
}

/// A failed-attempt outcome.
pub(crate) fn failed(error: String, retry_in: Option<Duration>, discard: bool) -> Outcome {
    Outcome::Failed {
        error,
        retry_in_ms: retry_in.map(duration_ms),
        discard,
    }
}

/// Milliseconds of `d`, saturating.
pub(crate) fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A row's `attempts` as the 1-based attempt number handlers see (clamped).
pub(crate) fn attempt_number(attempts: i64) -> u32 {
    u32::try_from(attempts.max(0)).unwrap_or(u32::MAX)
}
