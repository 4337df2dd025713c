//! The validated, normalized job a store receives ([`NewJob`]), made from
//! [`EnqueueOptions`] by [`NewJob::new`]: every store applies the same rules
//! (`docs/jobs.md`), and none can be handed an unvalidated job.

use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::digest::{digest_hex, write_canonical};
use crate::error::{Error, ErrorCode, Result};
use crate::job::{Dependency, DependencyFailure};
use crate::keys::{check_name, IdempotencyKey, JobName, QueueName, QUEUE_CONCURRENCY_PREFIX};
use crate::options::{
    After, ConcurrencyLimit, EnqueueOptions, NewOperation, SequenceFailure, DEFAULT_MAX_RETRIES,
    MAX_RUN_IN_MS,
};
use crate::rate::RateLimit;
use crate::time::{ms_to_duration, ms_to_system_time};
use crate::trace::TraceParent;

/// When a job should first run, as the caller asked for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timing {
    Immediate,
    At(i64),
    In(i64),
}

/// When a job expires, as the caller asked for it: at a time, or some time
/// after the store persists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    At(i64),
    In(i64),
}

/// A validated, normalized job ready for a store. Built only by [`NewJob::new`]
/// (directly, or through [`crate::JobArgs::job`] for a typed job).
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
    /// Whether [`NewJob::with_id`] chose the id (see [`NewJob::id_is_chosen`]).
    id_chosen: bool,
    job_name: JobName,
    args: Value,
    queue: QueueName,
    max_retries: i64,
    timing: Timing,
    concurrency: Option<ConcurrencyLimit>,
    deduplicate_while_queued: bool,
    idempotency_key: Option<IdempotencyKey>,
    timeout_ms: Option<i64>,
    priority: Option<i64>,
    rate_limit: Option<RateLimit>,
    operation: Option<NewOperation>,
    trace_parent: Option<TraceParent>,
    dependencies: Vec<Dependency>,
    dependency_policy: DependencyFailure,
    /// The workflow this job is a step of.
    workflow: Option<StepOf>,
    expiry: Option<Expiry>,
    /// The cost as requested (`None`: the default, 1).
    cost: Option<i64>,
    /// Whether the row stays once completed (`None`: the default, it does).
    keep_completed: Option<bool>,
    /// The sequence the job runs in, with what its failure does to it.
    sequence: Option<(String, SequenceFailure)>,
    /// The key whose turn the job takes among its queue's keys.
    fairness_key: Option<String>,
    /// The job that spawned this one and waits for it.
    parent_id: Option<String>,
}

/// Where a workflow's step belongs: the workflow's id and name, and the
/// step's name within it.
#[derive(Clone, Debug, PartialEq)]
struct StepOf {
    workflow_id: String,
    workflow_name: Option<String>,
    step: String,
}

impl NewJob {
    /// Validates and normalizes `opts` (`docs/jobs.md`) and gives the job a fresh UUIDv7 id.
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
        let timing = match (opts.scheduled_at_ms, opts.run_in_ms) {
            (None, None) => Timing::Immediate,
            (Some(ms), None) if ms >= 0 => Timing::At(ms),
            (None, Some(ms)) if (0..=MAX_RUN_IN_MS).contains(&ms) => Timing::In(ms),
            (Some(_), None) => {
                return Err(Error::invalid(
                    ErrorCode::InvalidScheduledAt,
                    "scheduledAtMs must be an integer >= 0 (a time from the Unix epoch on, \
                     within i64 milliseconds)",
                ))
            }
            (None, Some(_)) => {
                return Err(Error::invalid(
                    ErrorCode::InvalidScheduledAt,
                    format!("runInMs must be an integer from 0 to {MAX_RUN_IN_MS}"),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    ErrorCode::InvalidScheduledAt,
                    "scheduledAtMs and runInMs cannot be combined",
                ))
            }
        };
        let queue = QueueName::new(opts.queue.unwrap_or_default())?;
        let concurrency = match (opts.concurrency_key, opts.max_concurrency) {
            (None, None) => None,
            (Some(key), Some(max)) if !key.is_empty() && max >= 1 => {
                if key.starts_with(QUEUE_CONCURRENCY_PREFIX) {
                    return Err(Error::invalid(
                        ErrorCode::InvalidConcurrency,
                        "concurrency keys starting with `queue:` are reserved for queue caps",
                    ));
                }
                check_name(&key, ErrorCode::InvalidConcurrency, "a concurrency key")?;
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
                "timeoutMs must be an integer from 1 to i64::MAX",
            ));
        }
        if matches!(opts.priority, Some(p) if !(-100..=100).contains(&p)) {
            return Err(Error::invalid(
                ErrorCode::InvalidPriority,
                "priority must be an integer from -100 to 100",
            ));
        }
        let rate_limit = match (opts.rate_key, opts.rate_max, opts.rate_period_ms) {
            (None, None, None) => None,
            (Some(key), Some(max), Some(period_ms)) => {
                Some(RateLimit::from_parts(key, max, period_ms)?)
            }
            _ => {
                return Err(Error::invalid(
                    ErrorCode::InvalidRateLimit,
                    "rateKey, rateMax and ratePeriodMs go together",
                ))
            }
        };
        if idempotency_key.is_some() && opts.deduplicate_while_queued {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "idempotencyKey and deduplicateWhileQueued cannot be combined",
            ));
        }
        let expiry = match (opts.expires_at_ms, opts.expires_in_ms) {
            (None, None) => None,
            (Some(ms), None) if ms >= 0 => Some(Expiry::At(ms)),
            (None, Some(ms)) if (0..=MAX_RUN_IN_MS).contains(&ms) => Some(Expiry::In(ms)),
            _ => {
                return Err(Error::invalid(
                    ErrorCode::InvalidExpiry,
                    format!("expiresAtMs (>= 0) or expiresInMs (0 to {MAX_RUN_IN_MS}), not both"),
                ))
            }
        };
        let cost = check_cost(opts.cost, concurrency.as_ref(), rate_limit.as_ref())?;
        let sequence = match opts.sequence_key {
            None => None,
            Some(key) => {
                check_name(&key, ErrorCode::InvalidSequence, "a sequence key")?;
                if !opts.after.is_empty() {
                    return Err(Error::invalid(
                        ErrorCode::UnsupportedOption,
                        "sequenceKey and after cannot be combined: a sequence orders its jobs itself",
                    ));
                }
                Some((key, opts.on_sequence_failure.unwrap_or_default()))
            }
        };
        if let Some(key) = &opts.fairness_key {
            check_name(key, ErrorCode::InvalidFairnessKey, "a fairness key")?;
        }
        let trace_parent = crate::trace::for_new_job(opts.trace_parent.as_deref())?;
        let dependency_policy = opts.on_dependency_failure.unwrap_or_default();
        let dependencies = dependencies_of(opts.after, dependency_policy);
        Ok(Self {
            id: new_job_id(),
            id_chosen: false,
            job_name,
            args,
            queue,
            max_retries,
            timing,
            concurrency,
            deduplicate_while_queued: opts.deduplicate_while_queued,
            idempotency_key,
            timeout_ms: opts.timeout_ms,
            priority: opts.priority,
            rate_limit,
            operation: None,
            trace_parent,
            dependencies,
            dependency_policy,
            workflow: None,
            expiry,
            cost,
            keep_completed: opts.keep_completed,
            sequence,
            fairness_key: opts.fairness_key,
            parent_id: None,
        })
    }

    /// Adds a dependency edge after validation (the workflow builder's, for
    /// edges between its own steps); an edge to a job already named is kept once.
    pub(crate) fn add_dependency(&mut self, dependency: Dependency) {
        if !self
            .dependencies
            .iter()
            .any(|d| d.job_id == dependency.job_id)
        {
            self.dependencies.push(dependency);
        }
    }

    /// Makes the job step `step` of workflow `workflow_id`, named `name`
    /// (the builder's; an append to a workflow stored before names were
    /// has none).
    pub(crate) fn in_workflow(mut self, workflow_id: &str, name: Option<&str>, step: &str) -> Self {
        self.workflow = Some(StepOf {
            workflow_id: workflow_id.to_owned(),
            workflow_name: name.map(str::to_owned),
            step: step.to_owned(),
        });
        self
    }

    /// Makes the job the child of job `parent`, spawned by its step `step`,
    /// as [`crate::JobContext::spawn_and_wait`] does: keyed by both (unless
    /// the job has an idempotency key), so that a replay gets the same job
    /// back; once finished, it delivers its outcome to `parent` as signal
    /// `duraq.child.<its id>` ([`crate::driver::ChildNotice`]). A child
    /// finishes on its own, so it takes no dependencies and is no workflow's
    /// step: `unsupported-option` otherwise.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    ///
    /// let child = NewJob::new("render", serde_json::json!([]), EnqueueOptions::new())?
    ///     .child_of("0190c5c0-parent", "pdf")?;
    /// assert_eq!(child.parent_id(), Some("0190c5c0-parent"));
    /// # Ok::<(), duraq_core::Error>(())
    /// ```
    pub fn child_of(mut self, parent: &str, step: &str) -> Result<Self> {
        if !self.dependencies.is_empty() || self.workflow.is_some() {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "a spawned child cannot wait for other jobs or be a workflow's step",
            ));
        }
        if self.idempotency_key.is_none() {
            let key = format!("{}child.{parent}.{step}", crate::durable::RESERVED_PREFIX);
            self.idempotency_key = Some(IdempotencyKey::new(key)?);
        }
        self.parent_id = Some(parent.to_owned());
        Ok(self)
    }

    /// The workflow this job is a step of, if any.
    pub fn workflow_id(&self) -> Option<&str> {
        self.workflow.as_ref().map(|w| w.workflow_id.as_str())
    }

    /// The name of the workflow this job is a step of, if any.
    pub fn workflow_name(&self) -> Option<&str> {
        self.workflow.as_ref()?.workflow_name.as_deref()
    }

    /// The job's step name within its workflow, if any.
    pub fn step(&self) -> Option<&str> {
        self.workflow.as_ref().map(|w| w.step.as_str())
    }

    /// Replaces the idempotency key (a keyed workflow keys its steps).
    pub(crate) fn with_idempotency_key(mut self, key: IdempotencyKey) -> Self {
        self.idempotency_key = Some(key);
        self
    }

    /// Sets the policy of the dependencies that name none of their own (a
    /// batch's callback runs whatever the outcomes).
    pub(crate) fn with_dependency_policy(mut self, policy: DependencyFailure) -> Self {
        for dep in &mut self.dependencies {
            dep.on_failure = policy;
        }
        self.dependency_policy = policy;
        self
    }

    /// The policy of the dependencies that name none of their own.
    pub(crate) fn dependency_policy(&self) -> DependencyFailure {
        self.dependency_policy
    }

    /// The jobs this one waits for, each once, in the order first named.
    pub fn dependencies(&self) -> &[Dependency] {
        &self.dependencies
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
        self.id_chosen = true;
        self
    }

    /// Whether the id was chosen with [`NewJob::with_id`] rather than
    /// generated. A generated UUIDv7 (a millisecond timestamp and 74 random
    /// bits) is taken by no stored job, so a store may skip checking it
    /// against the jobs it cannot check cheaply (PostgreSQL's finished
    /// partition); a chosen id may repeat any id and is always checked.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let job = NewJob::new("resize", serde_json::json!([7]), EnqueueOptions::new()).unwrap();
    /// assert!(!job.id_is_chosen());
    /// assert!(job.with_id("job-1").id_is_chosen());
    /// ```
    pub fn id_is_chosen(&self) -> bool {
        self.id_chosen
    }

    /// The job id (a fresh UUIDv7 unless [`NewJob::with_id`] replaced it).
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The validated job name.
    pub fn job_name(&self) -> &JobName {
        &self.job_name
    }
    /// The JSON args.
    pub fn args(&self) -> &Value {
        &self.args
    }
    /// The normalized queue.
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }
    /// `maxRetries` (>= 0), in the stores' integer form.
    pub fn max_retries(&self) -> i64 {
        self.max_retries
    }
    /// The requested absolute run time in ms since the epoch; `None` means "now"
    /// or a relative delay ([`NewJob::run_in_ms`]).
    pub fn scheduled_at_ms(&self) -> Option<i64> {
        match self.timing {
            Timing::At(ms) => Some(ms),
            Timing::Immediate | Timing::In(_) => None,
        }
    }
    /// [`NewJob::scheduled_at_ms`] as a `SystemTime`.
    pub fn scheduled_at(&self) -> Option<SystemTime> {
        self.scheduled_at_ms().map(ms_to_system_time)
    }
    /// The requested delay after persisting in ms, if the job was enqueued "in"
    /// some time.
    pub fn run_in_ms(&self) -> Option<i64> {
        match self.timing {
            Timing::In(ms) => Some(ms),
            Timing::Immediate | Timing::At(_) => None,
        }
    }
    /// [`NewJob::run_in_ms`] as a `Duration`.
    pub fn run_in(&self) -> Option<Duration> {
        self.run_in_ms().map(ms_to_duration)
    }
    /// The id, job name, args and queue, moved out of the job (see
    /// [`crate::transitions::into_job_row`]).
    pub(crate) fn into_identity(self) -> (String, String, Value, String) {
        (self.id, self.job_name.into(), self.args, self.queue.into())
    }
    /// The run time resolved against `now_ms` (the store's clock at persist time).
    /// Never overflows: a delay is at most [`MAX_RUN_IN_MS`].
    pub fn due_at_ms(&self, now_ms: i64) -> i64 {
        match self.timing {
            Timing::Immediate => now_ms,
            Timing::At(ms) => ms,
            Timing::In(ms) => now_ms.saturating_add(ms),
        }
    }
    /// When the job expires, resolved against `now_ms` (the store's clock at
    /// persist time) like [`NewJob::due_at_ms`]; `None` when it never does.
    pub fn expires_at_ms(&self, now_ms: i64) -> Option<i64> {
        match self.expiry? {
            Expiry::At(ms) => Some(ms),
            Expiry::In(ms) => Some(now_ms.saturating_add(ms)),
        }
    }
    /// How many units of its concurrency cap and rate limit the job takes
    /// (1 unless [`crate::EnqueueOptions::cost`] said otherwise).
    pub fn cost(&self) -> i64 {
        self.cost.unwrap_or(1)
    }
    /// The sequence the job runs in ([`crate::EnqueueOptions::sequence`]).
    pub fn sequence_key(&self) -> Option<&str> {
        self.sequence.as_ref().map(|(key, _)| key.as_str())
    }
    /// The key whose turn the job takes ([`crate::EnqueueOptions::fairness_key`]).
    pub fn fairness_key(&self) -> Option<&str> {
        self.fairness_key.as_deref()
    }
    /// The job that spawned this one and waits for it
    /// ([`crate::JobContext::spawn_and_wait`]).
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }
    /// What the job's failure does to its sequence.
    pub fn sequence_failure(&self) -> SequenceFailure {
        self.sequence.as_ref().map(|(_, p)| *p).unwrap_or_default()
    }
    /// Whether the row stays once the job completes (see
    /// [`crate::EnqueueOptions::keep_completed`]).
    pub fn keeps_completed(&self) -> bool {
        self.keep_completed.unwrap_or(true)
    }
    /// The concurrency cap, if any.
    pub fn concurrency(&self) -> Option<&ConcurrencyLimit> {
        self.concurrency.as_ref()
    }
    /// Whether an identical queued job is returned instead of a new one.
    pub fn deduplicate_while_queued(&self) -> bool {
        self.deduplicate_while_queued
    }
    /// Whether the enqueue only inserts: no idempotency key, dedupe,
    /// operation, concurrency cap or rate limit, so nothing is read or
    /// registered first and the stores may insert such jobs together.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let plain = NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// assert!(plain.is_plain());
    /// let keyed = EnqueueOptions::new().idempotency_key("k");
    /// assert!(!NewJob::new("j", serde_json::json!([]), keyed).unwrap().is_plain());
    /// ```
    pub fn is_plain(&self) -> bool {
        self.only_waits() && self.dependencies.is_empty() && self.workflow.is_none()
    }

    /// Whether the enqueue only inserts and waits: [`NewJob::is_plain`] but
    /// for dependencies and a workflow step. Nothing is registered first; the
    /// dependencies' statuses decide how it starts
    /// ([`crate::rules::start_of`]), so stores may decide a run of such jobs
    /// together, each seeing the earlier jobs of the run.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let after = EnqueueOptions::new().after("0193a0b0-0000-7000-8000-000000000001");
    /// let waits = NewJob::new("j", serde_json::json!([]), after).unwrap();
    /// assert!(waits.only_waits() && !waits.is_plain());
    /// ```
    pub fn only_waits(&self) -> bool {
        self.idempotency_key.is_none()
            && !self.deduplicate_while_queued
            && self.operation.is_none()
            && self.concurrency.is_none()
            && self.rate_limit.is_none()
    }
    /// The idempotency key, if the enqueue is durable-idempotent.
    pub fn idempotency_key(&self) -> Option<&IdempotencyKey> {
        self.idempotency_key.as_ref()
    }
    /// The attempt timeout in ms (>= 1), if set.
    pub fn timeout_ms(&self) -> Option<i64> {
        self.timeout_ms
    }
    /// [`NewJob::timeout_ms`] as a `Duration`.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(ms_to_duration)
    }
    /// The priority within the queue (−100…100; 0 unless set).
    pub fn priority(&self) -> i64 {
        self.priority.unwrap_or(0)
    }
    /// The rate limit, if any.
    pub fn rate_limit(&self) -> Option<&RateLimit> {
        self.rate_limit.as_ref()
    }
    /// The trace context stored with the job: the one given, or (with the
    /// `otel` feature) the span's that built it (`docs/tracing.md`).
    pub fn trace_parent(&self) -> Option<&TraceParent> {
        self.trace_parent.as_ref()
    }

    /// The operation record riding on this enqueue, if any.
    pub fn operation(&self) -> Option<&NewOperation> {
        self.operation.as_ref()
    }

    /// SHA-256 of the canonical args (used by dedupe-while-queued).
    pub fn args_digest(&self) -> String {
        digest_hex("args", &self.args)
    }

    /// Appends the args as canonical JSON (compact, object keys in byte order:
    /// valid JSON of the same value) to `out`, so a store that keeps the args
    /// as text can digest those bytes later ([`digest_of_canonical`](crate::driver::digest_of_canonical))
    /// instead of serializing them again.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// use duraq_core::driver::digest_of_canonical;
    /// let job = NewJob::new("j", serde_json::json!({"b": 1, "a": [true]}), EnqueueOptions::new())
    ///     .unwrap();
    /// let mut text = Vec::new();
    /// job.write_args(&mut text);
    /// assert_eq!(text, br#"{"a":[true],"b":1}"#);
    /// assert_eq!(digest_of_canonical("args", &text), job.args_digest());
    /// ```
    pub fn write_args(&self, out: &mut Vec<u8>) {
        write_canonical(&self.args, out);
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
    /// option, with the timing as requested (immediate, a delay, or an absolute
    /// time), so a retried "in 10 minutes" replays (`docs/idempotency.md`). Ids and the
    /// wall-clock time of an immediate enqueue are not part of it.
    pub fn request_digest(&self) -> String {
        let timing = match self.timing {
            Timing::Immediate => json!("immediate"),
            Timing::At(ms) => json!({"scheduledAtMs": ms}),
            Timing::In(ms) => json!({"runInMs": ms}),
        };
        digest_hex("request.v2", &self.request_fields(timing))
    }

    /// Whether `stored`, an ownership row's request digest, records this request.
    /// Scopes recorded before the requested timing was digested (format 1, which
    /// held the resolved time) keep replaying: for an immediate or absolute
    /// request the old form is computed and compared too. A delay had no stable
    /// old form (its resolved time moved with every retry), so it matches only the
    /// current one.
    pub fn matches_request_digest(&self, stored: &str) -> bool {
        stored == self.request_digest()
            || self
                .legacy_request_digest()
                .is_some_and(|legacy| stored == legacy)
    }

    /// Format 1 of [`NewJob::request_digest`] (duraq 0.1, before relative delays were digested as requested).
    fn legacy_request_digest(&self) -> Option<String> {
        let timing = match self.timing {
            Timing::Immediate => json!("immediate"),
            Timing::At(ms) => json!({"scheduledAtMs": ms}),
            Timing::In(_) => return None,
        };
        Some(digest_hex("request", &self.request_fields(timing)))
    }

    /// The digested request. Options added after format 2 was fixed (priority,
    /// rate limit, expiry) join it only when set, so that every request recorded before
    /// they existed keeps its digest, and an unset priority stays apart from an
    /// explicit 0.
    fn request_fields(&self, timing: Value) -> Value {
        let mut fields = json!({
            "args": self.args,
            "queue": self.queue.as_str(),
            "maxRetries": self.max_retries,
            "concurrency": self.concurrency.as_ref().map(|c| json!({"key": c.key, "max": c.max})),
            "timeoutMs": self.timeout_ms,
            "timing": timing,
        });
        if let Some(cost) = self.cost {
            fields["cost"] = json!(cost);
        }
        if let Some(keep) = self.keep_completed {
            fields["keepCompleted"] = json!(keep);
        }
        if let Some((key, policy)) = &self.sequence {
            fields["sequence"] = json!({"key": key, "onFailure": policy});
        }
        if let Some(key) = &self.fairness_key {
            fields["fairnessKey"] = json!(key);
        }
        if let Some(priority) = self.priority {
            fields["priority"] = json!(priority);
        }
        if let Some(r) = &self.rate_limit {
            fields["rateLimit"] = json!({"key": r.key, "max": r.max, "periodMs": r.period_ms});
        }
        if !self.dependencies.is_empty() {
            fields["dependsOn"] = json!(self.dependencies);
        }
        match self.expiry {
            None => {}
            Some(Expiry::At(ms)) => fields["expiry"] = json!({"expiresAtMs": ms}),
            Some(Expiry::In(ms)) => fields["expiry"] = json!({"expiresInMs": ms}),
        }
        fields
    }
}

/// The edges of `after`, each job once (the first mention wins), an id alone
/// taking the job's `policy`.
fn dependencies_of(after: Vec<After>, policy: DependencyFailure) -> Vec<Dependency> {
    let mut seen = std::collections::HashSet::with_capacity(after.len());
    let mut out: Vec<Dependency> = Vec::with_capacity(after.len());
    for entry in after {
        let (job_id, on_failure) = match entry {
            After::Id(id) => (id, policy),
            After::Edge { job_id, on_failure } => (job_id, on_failure),
        };
        let job_id = job_id.trim().to_owned();
        if seen.insert(job_id.clone()) {
            out.push(Dependency { job_id, on_failure });
        }
    }
    out
}

/// A fresh, time-sortable job id (UUIDv7, hyphenated lower-case).
pub fn new_job_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The cost as requested, checked: at least 1, and at most the job's own cap
/// and rate limit, either of which it could never fit otherwise.
fn check_cost(
    cost: Option<i64>,
    concurrency: Option<&ConcurrencyLimit>,
    rate_limit: Option<&RateLimit>,
) -> Result<Option<i64>> {
    let Some(cost) = cost else {
        return Ok(None);
    };
    let ceiling = [concurrency.map(|c| c.max), rate_limit.map(|r| r.max)]
        .into_iter()
        .flatten()
        .min();
    if cost < 1 || ceiling.is_some_and(|max| cost > max) {
        return Err(Error::invalid(
            ErrorCode::InvalidCost,
            format!(
                "cost must be an integer from 1 to {}",
                ceiling.map_or("2^63".to_owned(), |m| format!(
                    "{m} (the job's own cap or rate limit)"
                ))
            ),
        ));
    }
    Ok(Some(cost))
}
