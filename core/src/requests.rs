//! Inputs and results of [`crate::Store`] operations.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::job::{Job, JobStatus, Lease};

/// How an enqueue ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "jobId", rename_all = "snake_case")]
pub enum EnqueueOutcome {
    /// A new row was inserted.
    Created(String),
    /// The idempotency scope already owned an identical request: its job id.
    Replayed(String),
    /// `deduplicateWhileQueued` found an identical queued job: its id.
    Deduplicated(String),
}

impl EnqueueOutcome {
    /// The job id, whichever way the enqueue ended.
    pub fn job_id(&self) -> &str {
        match self {
            Self::Created(id) | Self::Replayed(id) | Self::Deduplicated(id) => id,
        }
    }
}

/// Result of `replace_scheduled` (`docs/schedule-keys.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceOutcome {
    /// The job now placed under the key.
    pub job_id: String,
    /// The job the key held before, if any.
    pub previous_job_id: Option<String>,
    /// `Queued` (it is now cancelled), `HandedOff` (it was running), or `None`.
    pub previous_status: Option<JobStatus>,
    /// Whether a running previous owner was cancelled and its worker told to
    /// stop it (only with [`RunningOwner::Stop`]); false when it keeps running.
    #[serde(default)]
    pub previous_stopped: bool,
}

impl ReplaceOutcome {
    /// The running job this replacement cancelled, whose worker must be told.
    pub fn stopped_job_id(&self) -> Option<&str> {
        self.previous_job_id
            .as_deref()
            .filter(|_| self.previous_stopped)
    }
}

impl KeyedOutcome<CancelOutcome> {
    /// The running job this keyed cancel stopped, whose worker must be told.
    pub fn stopped_job_id(&self) -> Option<&str> {
        self.job_id
            .as_deref()
            .filter(|_| self.outcome == CancelOutcome::Stopped)
    }
}

/// What a keyed cancel or replace does to a key's *running* (`handed_off`)
/// owner. A queued owner is cancelled either way.
///
/// ```
/// use duraq_core::RunningOwner;
/// assert_eq!(RunningOwner::default(), RunningOwner::KeepRunning);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunningOwner {
    /// The running owner runs on; only the key's ownership moves.
    #[default]
    KeepRunning,
    /// The running owner is cancelled like [`crate::Operate::cancel_job`]: its
    /// lease is voided and the worker running it is told to stop.
    Stop,
}

/// Where a job's lease stands now, as [`crate::WorkerStore::lease_states`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseState {
    /// The job.
    pub job_id: String,
    /// Its status now.
    pub status: JobStatus,
    /// Its current lease (set only while `handed_off`).
    pub handoff_id: Option<String>,
}

/// Why a worker no longer holds a lease it was running under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseLoss {
    /// The job was cancelled while it ran.
    Cancelled,
    /// The lease was taken away otherwise (recovered as a dead worker's, the
    /// job pruned, or handed to someone else).
    Lost,
}

/// A lease that is no longer current; see [`crate::WorkerStore::lost_leases`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostLease {
    /// The lease the worker held.
    pub lease: Lease,
    /// Why it is gone.
    pub loss: LeaseLoss,
}

/// Outcome of `cancel_scheduled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelOutcome {
    /// The key's queued job is now cancelled.
    Cancelled,
    /// The key's job is running; it was left alone (it keeps running, the
    /// key is released).
    HandedOff,
    /// The key's job was running and is now cancelled; its worker is told to
    /// stop it (only with [`RunningOwner::Stop`]).
    Stopped,
    /// The key holds no live job.
    NotFound,
}

/// Outcome of `wake_scheduled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeOutcome {
    /// The key's job is now due.
    Woken,
    /// The key's job was already due.
    AlreadyDue,
    /// The key's job is running.
    HandedOff,
    /// The key holds no live job.
    NotFound,
}

/// `{jobId, outcome}` of a keyed cancel or wake.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyedOutcome<O> {
    /// The job the key held, if any.
    pub job_id: Option<String>,
    /// What happened to it.
    pub outcome: O,
}

/// Result of `get_scheduled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledJobs {
    /// The key's live (queued or handed-off) job.
    pub current_job: Option<Job>,
    /// The key's most recent job to reach a terminal status.
    pub latest_terminal_job: Option<Job>,
}

/// A queue's worker-side configuration (`docs/queues.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueConfig {
    /// At most this many of the queue's jobs handed off at once (key `queue:<name>`).
    pub max_concurrent: Option<i64>,
    /// Higher claims first; default 0.
    pub priority: i64,
}

/// What a worker asks for when it claims.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimRequest {
    /// The claiming worker (recorded on the lease, checked by heartbeats).
    pub worker_id: String,
    /// Only jobs with one of these names are claimed (the worker's handlers).
    pub job_names: Vec<String>,
    /// Only these queues; `None` means every queue.
    pub queues: Option<Vec<String>>,
    /// Priorities and caps per queue name; queues not listed have priority 0, no cap.
    pub queue_config: BTreeMap<String, QueueConfig>,
    /// At most this many jobs (the worker's free slots).
    pub limit: usize,
    /// Where the worker's fair turns stand, and its weights per fairness key
    /// (see [`crate::driver::steps::take_turns`]).
    pub turns: crate::steps::Turns,
}

/// How an attempt ended, as reported under its lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Success: `completed`.
    Completed,
    /// Success with the handler's output, kept on the job (`output`): at most
    /// [`crate::transitions::MAX_OUTPUT_BYTES`] of JSON, else the attempt
    /// fails with `output-too-large`.
    CompletedWith {
        /// What the handler returned.
        output: serde_json::Value,
    },
    /// A failed attempt: back to `queued` after a backoff while retries are left,
    /// else `failed`. `retry_in_ms` overrides the default backoff; `discard` fails
    /// the job at once.
    Failed {
        /// The new `lastError`.
        error: String,
        /// The retry delay in ms instead of the default backoff.
        retry_in_ms: Option<i64>,
        /// Fail the job at once, whatever retries are left.
        discard: bool,
    },
    /// `reschedule_in(delay)`: back to `queued` at now + delay, the attempt is not
    /// counted and `lastError` is untouched.
    Reschedule {
        /// Run again this many ms after the report.
        delay_ms: i64,
    },
    /// Give the job back unstarted (shutdown): `queued`, due now, attempt not counted.
    ReturnToQueue,
    /// `wait_for_signal(name, timeout)` found no signal `name` yet: the job
    /// waits as `pending` ([`crate::Job::awaiting_signal`]), the attempt not
    /// counted, until the signal arrives (it is `queued`, due now) or
    /// `until_ms` passes (the same, when a worker's recovery pass sees it).
    /// A store that finds the signal already delivered when the report
    /// arrives applies it as a reschedule by zero ([`Outcome::given_signals`]).
    AwaitSignal {
        /// The signal waited for.
        name: String,
        /// When the wait times out (ms since the epoch).
        until_ms: i64,
    },
}

impl Outcome {
    /// The outcome to apply once the store knows whether the signal an
    /// [`Outcome::AwaitSignal`] names has already arrived (`delivered`, read
    /// in the report's transaction after the job row is locked, so that a
    /// signal and a report are never both missed): a wait for a delivered
    /// signal runs again at once. Other outcomes are unchanged.
    ///
    /// ```
    /// use duraq_core::Outcome;
    /// let wait = Outcome::AwaitSignal { name: "shipped".into(), until_ms: 9 };
    /// assert_eq!(wait.clone().given_signals(true), Outcome::Reschedule { delay_ms: 0 });
    /// assert_eq!(wait.clone().given_signals(false), wait);
    /// ```
    pub fn given_signals(self, delivered: bool) -> Self {
        match self {
            Self::AwaitSignal { .. } if delivered => Self::Reschedule { delay_ms: 0 },
            other => other,
        }
    }

    /// The signal an [`Outcome::AwaitSignal`] waits for.
    pub fn awaited_signal(&self) -> Option<&str> {
        match self {
            Self::AwaitSignal { name, .. } => Some(name),
            _ => None,
        }
    }

    /// A plain failed attempt with the default backoff.
    pub fn failed(error: impl Into<String>) -> Self {
        Self::Failed {
            error: error.into(),
            retry_in_ms: None,
            discard: false,
        }
    }
}

pub use crate::search::{JobCursor, JobFilter};

/// Which terminal jobs to delete. A job goes when its terminal timestamp is
/// strictly older than `now - age` for its status's age; a status without an age
/// is kept.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::JobStatus;
/// use duraq_core::inspect::PruneRequest;
/// let req = PruneRequest {
///     completed_older_than: Some(Duration::from_secs(3600)),
///     ..PruneRequest::default()
/// };
/// assert_eq!(req.cutoff_ms(JobStatus::Completed, 10_000_000), Some(6_400_000));
/// assert_eq!(req.cutoff_ms(JobStatus::Failed, 10_000_000), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneRequest {
    /// Age after which `completed` jobs are deleted.
    pub completed_older_than: Option<Duration>,
    /// Age after which `failed` and `orphaned` jobs are deleted.
    pub failed_older_than: Option<Duration>,
    /// Age after which `cancelled` jobs are deleted.
    pub cancelled_older_than: Option<Duration>,
    /// Rows deleted per transaction (min 1); each non-empty batch is one mutation.
    pub batch_size: usize,
}

impl PruneRequest {
    /// The age that applies to `status` (`None` for live statuses).
    pub fn older_than(&self, status: JobStatus) -> Option<Duration> {
        match status {
            JobStatus::Completed => self.completed_older_than,
            JobStatus::Failed | JobStatus::Orphaned => self.failed_older_than,
            JobStatus::Cancelled => self.cancelled_older_than,
            JobStatus::Queued | JobStatus::HandedOff | JobStatus::Pending => None,
        }
    }

    /// The terminal-timestamp cutoff (ms since the epoch) for `status` at `now_ms`:
    /// rows with a terminal timestamp strictly below it go. Saturates, never
    /// overflows (an age beyond `i64::MAX` ms reaches back to `i64::MIN`).
    pub fn cutoff_ms(&self, status: JobStatus, now_ms: i64) -> Option<i64> {
        let age = self.older_than(status)?;
        Some(now_ms.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX)))
    }

    /// How many jobs [`crate::Operate::prune`] of this request would delete at
    /// `now_ms` (the store's clock), deleting nothing: a dry run
    /// (`duraq jobs prune --dry-run`). Reads only: one count snapshot, then
    /// the jobs of each status the request gives an age to (and that holds any
    /// job), in `search_jobs` pages of `batch_size`, judged by the same rule the
    /// stores delete by ([`crate::rules::is_prunable`]). Its cost grows with
    /// the jobs of those statuses, not with what would go; each page is its own
    /// read, so jobs that change meanwhile may be counted as they were.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use duraq_core::MemoryStore;
    /// use duraq_core::inspect::PruneRequest;
    /// let store = MemoryStore::new();
    /// let req = PruneRequest { completed_older_than: Some(Duration::ZERO), ..PruneRequest::default() };
    /// assert_eq!(req.count_prunable(&store, 0).await.unwrap(), 0);
    /// # });
    /// ```
    pub async fn count_prunable<S>(&self, store: &S, now_ms: i64) -> crate::Result<u64>
    where
        S: crate::Inspect + ?Sized,
    {
        let snapshot = store.count_snapshot().await?;
        let page_size = self.batch_size.max(1);
        let mut prunable = 0;
        for status in JobStatus::ALL {
            if self.older_than(status).is_none() || snapshot.counts.get(status) == 0 {
                continue;
            }
            let mut filter = JobFilter {
                statuses: vec![status],
                limit: Some(page_size),
                scan_limit: Some(page_size),
                ..JobFilter::default()
            };
            loop {
                let page = store.search_jobs(&filter).await?.jobs;
                prunable += page
                    .iter()
                    .filter(|job| crate::rules::is_prunable(job, self, now_ms))
                    .count() as u64;
                match page.last() {
                    Some(last) if page.len() >= page_size => {
                        filter.after = Some(JobCursor::after(last));
                    }
                    _ => break,
                }
            }
        }
        Ok(prunable)
    }
}

impl Default for PruneRequest {
    fn default() -> Self {
        Self {
            completed_older_than: None,
            failed_older_than: None,
            cancelled_older_than: None,
            batch_size: 1_000,
        }
    }
}

/// What a prune did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    /// Jobs deleted.
    pub deleted: u64,
    /// Non-empty batches (transactions), each one count mutation.
    pub batches: u64,
}

/// A stored operation record (see [`crate::NewOperation`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// The operation's key.
    pub key: String,
    /// What the owner stored with it.
    pub data: Value,
    /// The job that carries it.
    pub job_id: String,
    /// When it was recorded (ms since the epoch).
    pub created_at_ms: i64,
    /// When its job's first attempt began, stamped durably before any I/O.
    pub first_attempt_started_at_ms: Option<i64>,
    /// The outcome the owner recorded, if any.
    pub result: Option<Value>,
}

/// A store's self-report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// `memory`, `sqlite` or `postgres`.
    pub backend: String,
    /// The newest schema version applied.
    pub schema_version: i64,
    /// Human-readable detail (journal mode, pool size, …).
    pub detail: String,
}

/// What [`crate::WorkerStore::report_and_claim`] did: the reports' answers, in order,
/// and the jobs claimed after them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportedAndClaimed {
    /// One entry per report, as [`crate::WorkerStore::report_batch`] returns them.
    pub reported: Vec<bool>,
    /// The claimed jobs, as [`crate::WorkerStore::claim`] returns them.
    pub claimed: Vec<Job>,
}

/// What one [`crate::WorkerStore::settle_release_backlog`] call did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BacklogProgress {
    /// Bounded transactions committed, each one step of one backlog entry
    /// (at most [`crate::rules::RELEASE_BATCH`] edges).
    pub steps: usize,
    /// Edges walked across them.
    pub edges: usize,
    /// The call stopped at its step limit: entries may remain, call again.
    /// `false`: the backlog had no entry left for this caller (on PostgreSQL,
    /// entries other callers hold are not seen).
    pub more: bool,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::{EnqueueOptions, Inspect, ManualClock, MemoryStore, NewJob, Operate, Producer};

    /// A dry run counts exactly what the prune then deletes, across pages, and
    /// changes nothing itself.
    #[tokio::test]
    async fn count_prunable_predicts_the_prune() {
        let clock = ManualClock::new(0);
        let store = MemoryStore::with_clock(Arc::new(clock.clone()));
        let mut ids = Vec::new();
        for _ in 0..5 {
            let job = NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
            ids.push(store.enqueue(job).await.unwrap().job_id().to_owned());
        }
        // Cancelled at 1000, 2000, 3000 and 5000; the last job stays queued.
        for (id, at) in ids.iter().zip([1_000, 2_000, 3_000, 5_000]) {
            clock.set(at);
            store.cancel_job(id).await.unwrap();
        }
        clock.set(6_000);
        let req = |age_ms: u64| PruneRequest {
            cancelled_older_than: Some(Duration::from_millis(age_ms)),
            batch_size: 2,
            ..PruneRequest::default()
        };
        assert_eq!(req(0).count_prunable(&store, 6_000).await.unwrap(), 4);
        assert_eq!(req(3_500).count_prunable(&store, 6_000).await.unwrap(), 2);
        let nothing = PruneRequest {
            completed_older_than: Some(Duration::ZERO),
            ..PruneRequest::default()
        };
        assert_eq!(nothing.count_prunable(&store, 6_000).await.unwrap(), 0);
        let before = store.count_snapshot().await.unwrap();
        assert_eq!(before.total, 5, "a dry run deletes nothing");
        assert_eq!(store.prune(&req(3_500)).await.unwrap().deleted, 2);
        assert_eq!(req(0).count_prunable(&store, 6_000).await.unwrap(), 2);
        assert_eq!(store.prune(&req(0)).await.unwrap().deleted, 2);
    }
}

/// What an operator does to many jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BulkAction {
    /// Terminal jobs back to `queued` (as [`crate::Operate::retry_job`]).
    Retry,
    /// `queued` and running jobs to `cancelled` (as [`crate::Operate::cancel_job`]).
    Cancel,
    /// Terminal jobs deleted (as a prune of exactly these jobs).
    Delete,
    /// `queued` jobs due later made due now: only their scheduled time moves
    /// (as [`crate::Producer::wake_scheduled`] does for a schedule key's owner),
    /// and idle workers are woken as for an enqueue.
    RunNow,
}

impl BulkAction {
    /// Every action, in the order people read them.
    pub const ALL: [BulkAction; 4] = [Self::Retry, Self::Cancel, Self::Delete, Self::RunNow];

    /// Whether the action may change a job in `status` (for
    /// [`BulkAction::RunNow`] the job must also be due later: see
    /// [`BulkAction::changes`]).
    ///
    /// ```
    /// use duraq_core::JobStatus;
    /// use duraq_core::inspect::BulkAction;
    /// assert!(BulkAction::Retry.applies_to(JobStatus::Failed));
    /// assert!(!BulkAction::Retry.applies_to(JobStatus::HandedOff));
    /// assert!(BulkAction::Cancel.applies_to(JobStatus::HandedOff));
    /// assert!(!BulkAction::Cancel.applies_to(JobStatus::Cancelled));
    /// assert!(!BulkAction::Delete.applies_to(JobStatus::Queued));
    /// assert!(!BulkAction::RunNow.applies_to(JobStatus::HandedOff));
    /// ```
    pub fn applies_to(self, status: JobStatus) -> bool {
        match self {
            Self::Retry | Self::Delete => status.is_terminal(),
            Self::Cancel => !status.is_terminal(),
            Self::RunNow => status == JobStatus::Queued,
        }
    }

    /// Whether the action changes `job` at `now_ms`: the one rule every store
    /// and dry run judges a job by. A run-now changes a `queued` job due after
    /// `now_ms` only; one already due has nothing to gain and is skipped.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use duraq_core::prelude::*;
    /// use duraq_core::{EnqueueOptions, MemoryStore, NewJob};
    /// use duraq_core::inspect::BulkAction;
    /// let store = MemoryStore::new();
    /// let new = NewJob::new("report", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// let id = store.enqueue(new).await.unwrap().job_id().to_owned();
    /// let job = store.get_job(&id).await.unwrap().unwrap();
    /// assert!(BulkAction::RunNow.changes(&job, job.scheduled_at_ms - 1));
    /// assert!(!BulkAction::RunNow.changes(&job, job.scheduled_at_ms), "already due");
    /// assert!(BulkAction::Cancel.changes(&job, job.scheduled_at_ms));
    /// # });
    /// ```
    pub fn changes(self, job: &Job, now_ms: i64) -> bool {
        self.applies_to(job.status) && (self != Self::RunNow || job.scheduled_at_ms > now_ms)
    }

    /// The verb, for people and URLs (`retry`, `cancel`, `delete`, `run-now`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Cancel => "cancel",
            Self::Delete => "delete",
            Self::RunNow => "run-now",
        }
    }

    /// The action [`BulkAction::as_str`] spells `text`, if any.
    ///
    /// ```
    /// use duraq_core::inspect::BulkAction;
    /// assert_eq!(BulkAction::parse("run-now"), Some(BulkAction::RunNow));
    /// assert_eq!(BulkAction::parse("run"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == text)
    }
}

/// What one [`crate::Operate::act_on_jobs`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkBatch {
    /// Jobs the action changed.
    pub changed: u64,
    /// Jobs the action does not apply to ([`BulkAction::changes`]).
    pub skipped: u64,
    /// Ids with no job.
    pub missing: u64,
}
