//! The job row (see `docs/jobs.md`) as every store returns it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use crate::error::{Error, ErrorCode};
use crate::time::{ms_to_duration, ms_to_system_time};

/// Where a job is in its life (see the state diagram in ARCHITECTURE.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Waiting to be claimed (due now or later).
    Queued,
    /// Claimed by a worker under a lease: what people read as "running"
    /// ([`JobStatus::label`]); `running` is accepted wherever a status is
    /// parsed, while JSON and the database keep `handed_off`.
    #[serde(alias = "running")]
    HandedOff,
    /// Succeeded (terminal).
    Completed,
    /// Failed with no retries left, or discarded (terminal).
    Failed,
    /// Cancelled by an operator or replaced under its schedule key (terminal).
    Cancelled,
    /// Its worker died with no retries left (terminal).
    Orphaned,
    /// Waiting for its dependencies (`docs/workflows.md`): never claimed; it
    /// becomes `queued` in the transaction that completes its last dependency.
    Pending,
}

/// How many statuses there are ([`JobStatus::ALL`]'s length).
pub const STATUS_COUNT: usize = 7;

impl JobStatus {
    /// Every status, in the order counts are printed.
    pub const ALL: [JobStatus; STATUS_COUNT] = [
        Self::Queued,
        Self::HandedOff,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::Orphaned,
        Self::Pending,
    ];

    /// The stable string (`"handed_off"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::HandedOff => "handed_off",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Orphaned => "orphaned",
            Self::Pending => "pending",
        }
    }

    /// The word people read (tables, the dashboard, the docs): the stable
    /// string, except `running` for `handed_off`.
    ///
    /// ```
    /// use duraq_core::JobStatus;
    /// assert_eq!(JobStatus::HandedOff.label(), "running");
    /// assert_eq!(JobStatus::Failed.label(), "failed");
    /// ```
    pub fn label(self) -> &'static str {
        match self {
            Self::HandedOff => "running",
            other => other.as_str(),
        }
    }

    /// `completed`, `failed`, `cancelled` and `orphaned` are terminal.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Queued | Self::HandedOff | Self::Pending)
    }

    /// Position in [`JobStatus::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses a status by its stable string or its label: `running` and
/// `handed_off` are one status. Anything else is `invalid-status`.
///
/// ```
/// use duraq_core::JobStatus;
/// assert_eq!("running".parse::<JobStatus>().unwrap(), JobStatus::HandedOff);
/// assert_eq!("handed_off".parse::<JobStatus>().unwrap(), JobStatus::HandedOff);
/// assert_eq!("done".parse::<JobStatus>().unwrap_err().code().as_str(), "invalid-status");
/// ```
impl FromStr for JobStatus {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s || st.label() == s)
            .ok_or_else(|| {
                Error::invalid(
                    ErrorCode::InvalidStatus,
                    format!(
                        "{s:?} is not a job status: expected queued, running (or handed_off), \
                         completed, failed, cancelled, orphaned or pending"
                    ),
                )
            })
    }
}

/// A persisted job, with the camelCase JSON names (see `docs/jobs.md`).
///
/// `workerId` and `handoffId` describe the latest lease: set at claim, kept when the
/// job reaches a terminal status (history), cleared when it returns to `queued`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// The job id (UUIDv7).
    pub id: String,
    /// The name handlers are registered under.
    pub job_name: String,
    /// The JSON args.
    pub args: Value,
    /// The normalized queue.
    pub queue: String,
    /// Where the job is in its life.
    pub status: JobStatus,
    /// Attempts started so far (grows at claim; a reschedule gives one back).
    pub attempts: i64,
    /// Retries allowed after the first attempt.
    pub max_retries: i64,
    /// When the job is due, in ms since the epoch ([`Job::scheduled_at`]).
    pub scheduled_at_ms: i64,
    /// When the job was enqueued, in ms since the epoch ([`Job::created_at`]).
    pub created_at_ms: i64,
    /// When the latest claim happened.
    pub handed_off_at_ms: Option<i64>,
    /// When the job completed.
    pub completed_at_ms: Option<i64>,
    /// When the job failed.
    pub failed_at_ms: Option<i64>,
    /// When the job was cancelled.
    pub cancelled_at_ms: Option<i64>,
    /// When the job was orphaned.
    pub orphaned_at_ms: Option<i64>,
    /// The message of the latest failed attempt.
    pub last_error: Option<String>,
    /// The failed attempts, oldest first: the newest
    /// [`MAX_ERROR_HISTORY`](crate::transitions::MAX_ERROR_HISTORY) are kept (see
    /// [`AttemptError`]). Kept across an operator retry; `[]` in rows written before
    /// the history existed (and in JSON that lacks the field).
    #[serde(default)]
    pub errors: Vec<AttemptError>,
    /// The worker of the latest lease.
    pub worker_id: Option<String>,
    /// The fencing token of the latest lease.
    pub handoff_id: Option<String>,
    /// The schedule key the job was placed under, if any.
    pub schedule_key: Option<String>,
    /// The job's place in its schedule key's sequence of replacements.
    pub schedule_order: Option<i64>,
    /// The concurrency key, if capped.
    pub concurrency_key: Option<String>,
    /// The cap for `concurrency_key`.
    pub max_concurrency: Option<i64>,
    /// The idempotency key it was enqueued with, if any.
    pub idempotency_key: Option<String>,
    /// The job's own attempt timeout in ms ([`Job::timeout`]).
    pub timeout_ms: Option<i64>,
    /// Higher runs first within its queue (−100…100; 0 in rows written before
    /// priorities existed).
    #[serde(default)]
    pub priority: i64,
    /// The rate key, if the job's starts are rate limited.
    #[serde(default)]
    pub rate_key: Option<String>,
    /// The most starts per period for `rate_key`.
    #[serde(default)]
    pub rate_max: Option<i64>,
    /// The rate limit's period in ms.
    #[serde(default)]
    pub rate_period_ms: Option<i64>,
    /// The W3C `traceparent` of the span that enqueued the job, if one was
    /// given or captured (`docs/tracing.md`); each attempt's span links to it.
    #[serde(default)]
    pub trace_parent: Option<String>,
    /// The jobs this one waits for, with each edge's failure policy, in the
    /// order given (`docs/workflows.md`); empty for a job without dependencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<Dependency>,
    /// How many of `depends_on` have not finished yet: while above zero the job
    /// is `pending`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub open_dependencies: i64,
    /// What the handler returned when it completed ([`crate::JobResult::Output`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The workflow the job is a step of ([`crate::Workflow`]), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The job's step name within its workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The name of the workflow the job is a step of (`None` in rows written
    /// before workflow names were stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    /// When the job expires, in ms since the epoch: a claim at or after it
    /// cancels the job (`lastError` [`Job::EXPIRED`]) instead of starting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
    /// Why a `cancelled` job was cancelled (`None` on other jobs, and on jobs
    /// cancelled before reasons were stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<CancelReason>,
    /// How many units of its concurrency cap and of its rate limit the job
    /// takes when it starts (left out of JSON when 1, the default).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cost: i64,
    /// `false` for an ephemeral job: its row is deleted in the transaction
    /// that completes it (left out of JSON when `true`, the default).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub keep_completed: bool,
    /// How many steps of priority aging (`crate::PriorityAging`) `priority`
    /// holds beyond the job's own (left out of JSON when 0); given back when
    /// the job returns to `queued`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub aged_steps: i64,
    /// The sequence the job runs in: one job of a sequence at a time, in
    /// the order of (`createdAtMs`, `id`) (`crate::EnqueueOptions::sequence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_key: Option<String>,
    /// Its failure lets the next job of its sequence run instead of holding
    /// it (`onSequenceFailure` `continue`; left out of JSON when `false`).
    #[serde(default, skip_serializing_if = "is_no")]
    pub sequence_continues: bool,
    /// The key whose turn the job takes among the keys of its queue
    /// (`crate::EnqueueOptions::fairness_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    /// The signal a `pending` job waits for
    /// ([`crate::JobContext::wait_for_signal`]); its `scheduledAtMs` is then
    /// when the wait times out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting_signal: Option<String>,
    /// The job that spawned this one and waits for it
    /// ([`crate::JobContext::spawn_and_wait`]): when this job finishes, its
    /// outcome is delivered to that job in the same transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn one() -> i64 {
    1
}

fn is_one(n: &i64) -> bool {
    *n == 1
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

fn is_no(b: &bool) -> bool {
    !*b
}

/// Why a job ended `cancelled`: JSON `cancelReason`, as `"operator"`,
/// `"dependency"` or `"expired"`.
///
/// ```
/// use duraq_core::CancelReason;
/// assert_eq!("expired".parse::<CancelReason>().unwrap(), CancelReason::Expired);
/// assert_eq!(CancelReason::Dependency.as_str(), "dependency");
/// assert!("bored".parse::<CancelReason>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CancelReason {
    /// Someone asked: a cancel by id, by filter or by schedule key, or a
    /// replacement under the job's schedule key.
    Operator,
    /// A dependency ended without completing, with the `cancel` policy
    /// (`lastError` names it).
    Dependency,
    /// It was not started by its expiry (`lastError` says when that was).
    Expired,
}

impl CancelReason {
    /// The stable string (`"expired"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Dependency => "dependency",
            Self::Expired => "expired",
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CancelReason {
    type Err = Error;
    /// `operator`, `dependency` or `expired`; anything else is a
    /// `schema-incompatible` error (only a store reads it, from its own column).
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "operator" => Ok(Self::Operator),
            "dependency" => Ok(Self::Dependency),
            "expired" => Ok(Self::Expired),
            _ => Err(Error::schema(format!("{s:?} is not a cancel reason"))),
        }
    }
}

/// What a dependent does when one of its dependencies ends without completing
/// (`failed`, `cancelled` or `orphaned`), as JSON `"cancel"` or `"run"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyFailure {
    /// The dependent is cancelled, naming the dependency, and so on down the graph.
    #[default]
    Cancel,
    /// The dependency counts as satisfied; the handler reads how it ended.
    Run,
}

impl DependencyFailure {
    /// The stable string (`"cancel"`, `"run"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Run => "run",
        }
    }
}

impl FromStr for DependencyFailure {
    type Err = Error;
    /// `cancel` or `run`; anything else is `invalid-dependency-policy`.
    ///
    /// ```
    /// use duraq_core::DependencyFailure;
    /// assert_eq!("run".parse::<DependencyFailure>().unwrap(), DependencyFailure::Run);
    /// let err = "skip".parse::<DependencyFailure>().unwrap_err();
    /// assert_eq!(err.code().as_str(), "invalid-dependency-policy");
    /// ```
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "cancel" => Ok(Self::Cancel),
            "run" => Ok(Self::Run),
            _ => Err(Error::invalid(
                ErrorCode::InvalidDependencyPolicy,
                format!("{s:?} is not a dependency failure policy: expected cancel or run"),
            )),
        }
    }
}

/// One dependency edge of a job: the job it waits for and what happens if that
/// job does not complete. JSON `{"jobId": "…", "onFailure": "cancel"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    /// The job waited for.
    pub job_id: String,
    /// The edge's policy.
    #[serde(default)]
    pub on_failure: DependencyFailure,
}

impl Job {
    /// The reason that begins the `lastError` of a job a claim cancelled
    /// because it had expired (`expired: not started by <time>`).
    pub const EXPIRED: &'static str = "expired";

    /// Whether the job is `pending`, waiting for a signal
    /// ([`Job::awaiting_signal`]).
    pub fn is_awaiting_signal(&self) -> bool {
        self.status == JobStatus::Pending && self.awaiting_signal.is_some()
    }

    /// Whether a store deletes the row in the transaction that moved it here:
    /// an ephemeral job ([`Job::keep_completed`] `false`) that has completed.
    /// A store keeps it all the same while jobs wait on it (they read its
    /// output when they run).
    pub fn is_deleted_on_completion(&self) -> bool {
        self.status == JobStatus::Completed && !self.keep_completed
    }

    /// Whether the job stands in its sequence's way ([`Job::sequence_key`]):
    /// queued or running, or ended `failed`/`orphaned` without
    /// [`Job::sequence_continues`]. The earliest such job of a sequence is the
    /// only one a claim may take, and only while none of the sequence runs.
    pub fn blocks_its_sequence(&self) -> bool {
        match self.status {
            JobStatus::Queued | JobStatus::HandedOff => true,
            JobStatus::Failed | JobStatus::Orphaned => !self.sequence_continues,
            _ => false,
        }
    }

    /// Whether the job has expired at `now_ms` ([`Job::expires_at_ms`]).
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }

    /// When the job is (or was) due: `scheduledAtMs` as a `SystemTime`.
    pub fn scheduled_at(&self) -> SystemTime {
        ms_to_system_time(self.scheduled_at_ms)
    }

    /// When the job was enqueued: `createdAtMs` as a `SystemTime`.
    pub fn created_at(&self) -> SystemTime {
        ms_to_system_time(self.created_at_ms)
    }

    /// When the job reached its terminal status, if terminal.
    pub fn terminal_at(&self) -> Option<SystemTime> {
        self.terminal_at_ms().map(ms_to_system_time)
    }

    /// The attempt timeout (`timeoutMs`), if the job has its own.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(ms_to_duration)
    }

    /// The job's rate limit, if it has one.
    pub fn rate_limit(&self) -> Option<crate::RateLimit> {
        match (&self.rate_key, self.rate_max, self.rate_period_ms) {
            (Some(key), Some(max), Some(period_ms)) => Some(crate::RateLimit {
                key: key.clone(),
                max,
                period_ms,
            }),
            _ => None,
        }
    }

    /// The lease a worker must present to report on this job, if it is handed off.
    pub fn lease(&self) -> Option<Lease> {
        match (&self.status, &self.handoff_id) {
            (JobStatus::HandedOff, Some(h)) => Some(Lease {
                job_id: self.id.clone(),
                handoff_id: h.clone(),
            }),
            _ => None,
        }
    }

    /// Whether another attempt is allowed after the current one fails.
    pub fn retries_left(&self) -> bool {
        self.attempts <= self.max_retries
    }

    /// The timestamp of the terminal transition, if terminal.
    pub fn terminal_at_ms(&self) -> Option<i64> {
        match self.status {
            JobStatus::Completed => self.completed_at_ms,
            JobStatus::Failed => self.failed_at_ms,
            JobStatus::Cancelled => self.cancelled_at_ms,
            JobStatus::Orphaned => self.orphaned_at_ms,
            JobStatus::Queued | JobStatus::HandedOff | JobStatus::Pending => None,
        }
    }
}

/// One failed attempt in a job's error history ([`Job::errors`]), as JSON
/// `{"attempt": 2, "atMs": …, "error": "…", "workerId": "…"}`.
///
/// Appended by the transition that fails an attempt
/// ([`crate::transitions::apply_outcome`] with [`crate::Outcome::Failed`], timeouts
/// and panics included, and [`crate::transitions::recover_lost`] when a dead
/// worker's lease is recovered). Reschedules, returns to the queue and operator
/// actions append nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptError {
    /// The job's `attempts` when the attempt failed (1 for the first attempt; an
    /// operator retry starts counting again from 1).
    pub attempt: i64,
    /// When the failure was recorded, in ms since the epoch (the store's clock).
    pub at_ms: i64,
    /// The attempt's error message (the same text `lastError` got).
    pub error: String,
    /// The worker whose lease the attempt ran under (for a recovered lease, the
    /// dead worker), if the row named one.
    pub worker_id: Option<String>,
}

/// A claim's fencing token: reports change a row only while this lease is current.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The claimed job.
    pub job_id: String,
    /// The claim's fencing token.
    pub handoff_id: String,
}

impl Lease {
    /// The fence every report, progress write and lease check applies: the
    /// lease is current while its job is `handed_off` under this handoff. A
    /// store that fences in SQL instead (`WHERE status = 'handed_off' AND
    /// handoff_id = …`) states the same rule; nothing else decides whether a
    /// lease still holds.
    ///
    /// ```
    /// use duraq_core::JobStatus;
    /// use duraq_core::driver::Lease;
    /// let lease = Lease { job_id: "j".into(), handoff_id: "h1".into() };
    /// assert!(lease.is_current(JobStatus::HandedOff, Some("h1")));
    /// assert!(!lease.is_current(JobStatus::HandedOff, Some("h2"))); // claimed again since
    /// assert!(!lease.is_current(JobStatus::Queued, Some("h1"))); // recovered or returned
    /// ```
    pub fn is_current(&self, status: JobStatus, handoff_id: Option<&str>) -> bool {
        status == JobStatus::HandedOff && handoff_id == Some(self.handoff_id.as_str())
    }

    /// [`Lease::is_current`] on a loaded row.
    pub fn holds(&self, job: &Job) -> bool {
        self.is_current(job.status, job.handoff_id.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_parses_by_its_string_and_its_label() {
        for status in JobStatus::ALL {
            assert_eq!(status.as_str().parse::<JobStatus>().unwrap(), status);
            assert_eq!(status.label().parse::<JobStatus>().unwrap(), status);
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, status.as_str(), "JSON keeps the stable string");
            let label: JobStatus = serde_json::from_value(status.label().into()).unwrap();
            assert_eq!(label, status);
        }
        for bad in ["", "Running", "handed-off", "done", " queued"] {
            let err = bad.parse::<JobStatus>().unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidStatus, "{bad:?}");
        }
    }
}
