//! Pure state transitions of one job row. Every store loads a row, applies one of
//! these, and writes it back, so the rules of the state diagram live in one place
//! and the stores differ only in how they find and persist rows.

use crate::backoff::retry_backoff_ms;
use crate::error::{Error, ErrorCode, Result};
use crate::job::{AttemptError, CancelReason, Job, JobStatus};
use crate::new_job::NewJob;
use crate::requests::Outcome;

/// The row a fresh enqueue inserts.
pub fn new_job_row(job: &NewJob, now_ms: i64) -> Job {
    Job {
        id: job.id().to_owned(),
        job_name: job.job_name().as_str().to_owned(),
        args: job.args().clone(),
        queue: job.queue().as_str().to_owned(),
        ..row_without_identity(job, now_ms)
    }
}

/// [`new_job_row`] taking the job by value: its id, name, args and queue move
/// into the row instead of being copied (a batch enqueue builds a row per job).
pub fn into_job_row(job: NewJob, now_ms: i64) -> Job {
    let mut row = row_without_identity(&job, now_ms);
    (row.id, row.job_name, row.args, row.queue) = job.into_identity();
    row
}

/// The fresh row of `job` with empty id, name and queue and null args.
fn row_without_identity(job: &NewJob, now_ms: i64) -> Job {
    Job {
        id: String::new(),
        job_name: String::new(),
        args: serde_json::Value::Null,
        queue: String::new(),
        status: JobStatus::Queued,
        attempts: 0,
        max_retries: job.max_retries(),
        scheduled_at_ms: job.due_at_ms(now_ms),
        created_at_ms: now_ms,
        handed_off_at_ms: None,
        completed_at_ms: None,
        failed_at_ms: None,
        cancelled_at_ms: None,
        orphaned_at_ms: None,
        last_error: None,
        errors: Vec::new(),
        worker_id: None,
        handoff_id: None,
        schedule_key: None,
        schedule_order: None,
        concurrency_key: job.concurrency().map(|c| c.key.clone()),
        max_concurrency: job.concurrency().map(|c| c.max),
        idempotency_key: job.idempotency_key().map(|k| k.as_str().to_owned()),
        timeout_ms: job.timeout_ms(),
        priority: job.priority(),
        rate_key: job.rate_limit().map(|r| r.key.clone()),
        rate_max: job.rate_limit().map(|r| r.max),
        rate_period_ms: job.rate_limit().map(|r| r.period_ms),
        trace_parent: job.trace_parent().map(|t| t.as_str().to_owned()),
        depends_on: job.dependencies().to_vec(),
        open_dependencies: 0,
        output: None,
        workflow_id: job.workflow_id().map(str::to_owned),
        step: job.step().map(str::to_owned),
        workflow_name: job.workflow_name().map(str::to_owned),
        expires_at_ms: job.expires_at_ms(now_ms),
        cancel_reason: None,
        cost: job.cost(),
        keep_completed: job.keeps_completed(),
        aged_steps: 0,
        sequence_key: job.sequence_key().map(str::to_owned),
        sequence_continues: job.sequence_failure() == crate::SequenceFailure::Continue,
        fairness_key: job.fairness_key().map(str::to_owned),
        awaiting_signal: None,
        parent_id: job.parent_id().map(str::to_owned),
    }
}

/// The fields (wire names) [`claim`] changes, and nothing else: a store may
/// write back a claimed row by these columns alone (PostgreSQL's claim does,
/// instead of every mutable column). Tested against [`claim`] below.
pub const CLAIM_CHANGES: &[&str] = &[
    "status",
    "attempts",
    "handoffId",
    "workerId",
    "handedOffAtMs",
];

/// The fields (wire names) a completion ([`apply_outcome`] with
/// [`Outcome::Completed`]) changes, and nothing else: a store may complete a
/// fenced row with one `UPDATE` of these columns, without loading it first
/// (PostgreSQL's completion statement does). Tested against [`apply_outcome`].
pub const COMPLETION_CHANGES: &[&str] = &["status", "completedAtMs"];

/// `queued` → `handed_off` under a fresh lease.
pub fn claim(job: &mut Job, worker_id: &str, handoff_id: String, now_ms: i64) {
    job.status = JobStatus::HandedOff;
    job.attempts += 1;
    job.handoff_id = Some(handoff_id);
    job.worker_id = Some(worker_id.to_owned());
    job.handed_off_at_ms = Some(now_ms);
}

/// Back to `queued`, due at `at_ms`; the steps of priority aging the job had
/// earned go back with the wait that earned them.
fn requeue(job: &mut Job, at_ms: i64) {
    job.status = JobStatus::Queued;
    job.scheduled_at_ms = at_ms;
    job.priority -= job.aged_steps;
    job.aged_steps = 0;
    job.handoff_id = None;
    job.worker_id = None;
}

/// How many failed attempts a job's error history ([`Job::errors`]) keeps: the
/// newest, the oldest dropped first.
pub const MAX_ERROR_HISTORY: usize = 20;

/// Records a failed attempt of a `handed_off` row (before its lease is cleared):
/// `lastError`, and an entry appended to the bounded error history with the
/// attempt number and the lease's worker.
fn record_failure(job: &mut Job, error: String, now_ms: i64) {
    job.errors.push(AttemptError {
        attempt: job.attempts,
        at_ms: now_ms,
        error: error.clone(),
        worker_id: job.worker_id.clone(),
    });
    let excess = job.errors.len().saturating_sub(MAX_ERROR_HISTORY);
    job.errors.drain(..excess);
    job.last_error = Some(error);
}

fn fail_attempt(
    job: &mut Job,
    error: String,
    retry_in_ms: Option<i64>,
    discard: bool,
    now_ms: i64,
) {
    record_failure(job, error, now_ms);
    if !discard && job.retries_left() {
        let delay = retry_in_ms
            .unwrap_or_else(|| retry_backoff_ms(job.attempts))
            .max(0);
        requeue(job, now_ms.saturating_add(delay));
    } else {
        job.status = JobStatus::Failed;
        job.failed_at_ms = Some(now_ms);
    }
}

/// Applies a fenced report to a `handed_off` row (the caller checked the lease).
pub fn apply_outcome(job: &mut Job, outcome: &Outcome, now_ms: i64) {
    debug_assert_eq!(job.status, JobStatus::HandedOff);
    match outcome {
        Outcome::Completed => {
            job.status = JobStatus::Completed;
            job.completed_at_ms = Some(now_ms);
        }
        Outcome::CompletedWith { output } => match output_size_error(output) {
            None => {
                job.status = JobStatus::Completed;
                job.completed_at_ms = Some(now_ms);
                job.output = Some(output.clone());
            }
            Some(error) => fail_attempt(job, error, None, false, now_ms),
        },
        Outcome::Failed {
            error,
            retry_in_ms,
            discard,
        } => fail_attempt(job, error.clone(), *retry_in_ms, *discard, now_ms),
        Outcome::Reschedule { delay_ms } => {
            job.attempts -= 1;
            requeue(job, now_ms.saturating_add((*delay_ms).max(0)));
        }
        Outcome::ReturnToQueue => {
            job.attempts -= 1;
            requeue(job, now_ms);
        }
        Outcome::AwaitSignal { name, until_ms } => {
            job.attempts -= 1;
            requeue(job, *until_ms);
            job.status = JobStatus::Pending;
            job.awaiting_signal = Some(name.clone());
        }
    }
}

/// A `pending` job waiting for a signal ([`Job::awaiting_signal`]) that
/// arrived, or whose wait timed out: `queued`, due at `now_ms`, waiting for
/// nothing. Its next attempt reads the signal, or finds the time up.
pub fn end_wait(job: &mut Job, now_ms: i64) {
    debug_assert!(job.is_awaiting_signal());
    job.status = JobStatus::Queued;
    job.scheduled_at_ms = now_ms;
    job.awaiting_signal = None;
}

/// The most a job's output may hold, as compact JSON: 256 KiB.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// The `lastError` of an attempt whose output is over [`MAX_OUTPUT_BYTES`]
/// (it starts with the stable code `output-too-large`), `None` when it fits.
///
/// ```
/// use duraq_core::driver::transitions::output_size_error;
/// assert_eq!(output_size_error(&serde_json::json!({"ok": true})), None);
/// let big = serde_json::Value::String("x".repeat(300 * 1024));
/// assert!(output_size_error(&big).unwrap().starts_with("output-too-large:"));
/// ```
pub fn output_size_error(output: &serde_json::Value) -> Option<String> {
    let bytes = serde_json::to_vec(output).map_or(usize::MAX, |v| v.len());
    (bytes > MAX_OUTPUT_BYTES).then(|| {
        format!(
            "{}: the handler's output is {bytes} bytes of JSON; at most {MAX_OUTPUT_BYTES} are kept",
            ErrorCode::OutputTooLarge.as_str()
        )
    })
}

/// A lease lost with its worker: a failed attempt, `orphaned` when exhausted.
pub fn recover_lost(job: &mut Job, now_ms: i64) {
    let worker = job.worker_id.clone().unwrap_or_default();
    let error = format!("worker {worker} stopped heartbeating; lease recovered");
    record_failure(job, error, now_ms);
    if job.retries_left() {
        requeue(job, now_ms.saturating_add(retry_backoff_ms(job.attempts)));
    } else {
        job.status = JobStatus::Orphaned;
        job.orphaned_at_ms = Some(now_ms);
    }
}

/// Operator retry of a terminal job. The error history is kept.
pub fn operator_retry(job: &mut Job, now_ms: i64) -> Result<()> {
    if !job.status.is_terminal() {
        return Err(Error::invalid(
            ErrorCode::InvalidJobState,
            format!(
                "job {} is {}; only terminal jobs can be retried",
                job.id, job.status
            ),
        ));
    }
    job.attempts = 0;
    job.completed_at_ms = None;
    job.failed_at_ms = None;
    job.cancelled_at_ms = None;
    job.cancel_reason = None;
    job.orphaned_at_ms = None;
    job.handed_off_at_ms = None;
    job.output = None;
    job.open_dependencies = 0;
    requeue(job, now_ms);
    Ok(())
}

/// Operator (or keyed) cancel of a `queued` or `handed_off` job.
pub fn operator_cancel(job: &mut Job, now_ms: i64) -> Result<()> {
    if job.status.is_terminal() {
        return Err(Error::invalid(
            ErrorCode::InvalidJobState,
            format!("job {} is already {}", job.id, job.status),
        ));
    }
    job.status = JobStatus::Cancelled;
    job.cancelled_at_ms = Some(now_ms);
    job.cancel_reason = Some(CancelReason::Operator);
    Ok(())
}

/// A claim's cancel of a `queued` job that has expired ([`Job::is_expired`]).
/// Its `lastError` is `expired: not started by <its expiry, UTC>`.
pub fn expire(job: &mut Job, now_ms: i64) {
    job.status = JobStatus::Cancelled;
    job.cancelled_at_ms = Some(now_ms);
    job.cancel_reason = Some(CancelReason::Expired);
    let by = crate::display::utc_time(job.expires_at_ms.unwrap_or(now_ms));
    job.last_error = Some(format!("{}: not started by {by}", Job::EXPIRED));
}

/// The concurrency reservation a claim of `job` takes: its own key and cap, else
/// `queue:<name>` when the claim's config caps its queue. Stores persist the key
/// on the row (internally) so the reservation is released even if the config changes.
pub fn reservation_for(
    job: &Job,
    queue_config: &std::collections::BTreeMap<String, crate::QueueConfig>,
) -> Option<(String, i64)> {
    match (&job.concurrency_key, job.max_concurrency) {
        (Some(key), Some(max)) => Some((key.clone(), max)),
        _ => queue_config
            .get(&job.queue)
            .and_then(|c| c.max_concurrent)
            .map(|max| (crate::driver::queue_concurrency_key(&job.queue), max)),
    }
}

/// Time order: `scheduledAtMs`, `createdAtMs`, `id` (dedupe's "earliest").
pub fn due_order(a: &Job, b: &Job) -> std::cmp::Ordering {
    (a.scheduled_at_ms, a.created_at_ms, a.id.as_bytes()).cmp(&(
        b.scheduled_at_ms,
        b.created_at_ms,
        b.id.as_bytes(),
    ))
}

/// The claim order (`docs/jobs.md`) within one queue priority: job priority
/// (higher first), then [`due_order`].
pub fn claim_order(a: &Job, b: &Job) -> std::cmp::Ordering {
    b.priority.cmp(&a.priority).then_with(|| due_order(a, b))
}

/// Which of the `held` leases are no longer current, given the rows' lease
/// states as a store read them (one query over the held job ids): a lease is
/// current only while its job is `handed_off` under that very handoff id. A
/// job missing from `states` (pruned) lost its lease too. A cancelled job is
/// [`crate::driver::LeaseLoss::Cancelled`]; anything else (recovered as a dead
/// worker's, re-queued, claimed again under another handoff) is
/// [`crate::driver::LeaseLoss::Lost`]. The order of `held` is kept.
///
/// ```
/// use duraq_core::JobStatus;
/// use duraq_core::driver::{transitions::lost_leases, Lease, LeaseLoss, LeaseState};
/// let held = vec![
///     Lease { job_id: "a".into(), handoff_id: "h1".into() },
///     Lease { job_id: "b".into(), handoff_id: "h2".into() },
/// ];
/// let states = vec![
///     LeaseState { job_id: "a".into(), status: JobStatus::HandedOff, handoff_id: Some("h1".into()) },
///     LeaseState { job_id: "b".into(), status: JobStatus::Cancelled, handoff_id: None },
/// ];
/// let lost = lost_leases(&held, &states);
/// assert_eq!(lost.len(), 1);
/// assert_eq!((lost[0].lease.job_id.as_str(), lost[0].loss), ("b", LeaseLoss::Cancelled));
/// ```
pub fn lost_leases(
    held: &[crate::driver::Lease],
    states: &[crate::driver::LeaseState],
) -> Vec<crate::driver::LostLease> {
    let by_id: std::collections::HashMap<&str, &crate::driver::LeaseState> =
        states.iter().map(|s| (s.job_id.as_str(), s)).collect();
    held.iter()
        .filter_map(|lease| {
            let loss = match by_id.get(lease.job_id.as_str()) {
                Some(s) if lease.is_current(s.status, s.handoff_id.as_deref()) => return None,
                Some(s) if s.status == JobStatus::Cancelled => crate::driver::LeaseLoss::Cancelled,
                _ => crate::driver::LeaseLoss::Lost,
            };
            Some(crate::driver::LostLease {
                lease: lease.clone(),
                loss,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EnqueueOptions;

    /// The wire names of the fields that differ between two rows.
    fn changed_fields(before: &Job, after: &Job) -> Vec<String> {
        let (a, b) = (
            serde_json::to_value(before).unwrap(),
            serde_json::to_value(after).unwrap(),
        );
        let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
        let mut keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
        keys.sort();
        keys.dedup();
        keys.retain(|k| a.get(k) != b.get(k));
        keys
    }

    #[test]
    fn the_store_shortcuts_change_what_the_transitions_change() {
        let mut queued = claimed(3);
        queued.status = JobStatus::Queued;
        (queued.handoff_id, queued.worker_id, queued.handed_off_at_ms) = (None, None, None);
        let mut after_claim = queued.clone();
        claim(&mut after_claim, "w2", "h2".into(), 77);
        let mut declared: Vec<String> = CLAIM_CHANGES.iter().map(|s| s.to_string()).collect();
        declared.sort();
        assert_eq!(changed_fields(&queued, &after_claim), declared);

        let running = claimed(3);
        let mut completed = running.clone();
        apply_outcome(&mut completed, &Outcome::Completed, 99);
        let mut declared: Vec<String> = COMPLETION_CHANGES.iter().map(|s| s.to_string()).collect();
        declared.sort();
        assert_eq!(changed_fields(&running, &completed), declared);
    }

    fn claimed(max_retries: u32) -> Job {
        let new = NewJob::new(
            "j",
            serde_json::json!([]),
            EnqueueOptions::new().max_retries(max_retries),
        )
        .unwrap();
        let mut job = new_job_row(&new, 1_000);
        claim(&mut job, "w", "h".into(), 1_000);
        job
    }

    #[test]
    fn failure_with_retries_left_requeues_after_backoff() {
        let mut job = claimed(1);
        apply_outcome(&mut job, &Outcome::failed("boom"), 2_000);
        assert_eq!(job.status, JobStatus::Queued);
        assert_eq!(job.scheduled_at_ms, 12_000);
        assert_eq!(job.handoff_id, None);
        claim(&mut job, "w", "h2".into(), 12_000);
        apply_outcome(&mut job, &Outcome::failed("boom"), 13_000);
        assert_eq!(job.status, JobStatus::Failed);
        assert_eq!(job.failed_at_ms, Some(13_000));
    }

    #[test]
    fn failures_append_to_a_bounded_history() {
        let mut job = claimed(30);
        apply_outcome(&mut job, &Outcome::failed("first"), 2_000);
        assert_eq!(
            job.errors,
            [AttemptError {
                attempt: 1,
                at_ms: 2_000,
                error: "first".into(),
                worker_id: Some("w".into()),
            }]
        );
        for n in 2..=25 {
            claim(&mut job, &format!("w{n}"), format!("h{n}"), 3_000 + n);
            apply_outcome(&mut job, &Outcome::failed(format!("fail {n}")), 4_000 + n);
        }
        assert_eq!(job.errors.len(), MAX_ERROR_HISTORY);
        assert_eq!(job.errors[0].attempt, 6);
        let newest = job.errors.last().unwrap();
        assert_eq!(
            (newest.attempt, newest.at_ms, newest.worker_id.as_deref()),
            (25, 4_025, Some("w25"))
        );
        assert_eq!(job.last_error.as_deref(), Some("fail 25"));
    }

    #[test]
    fn recovery_appends_and_reschedule_and_retry_do_not() {
        let mut job = claimed(1);
        apply_outcome(&mut job, &Outcome::Reschedule { delay_ms: 0 }, 1_500);
        claim(&mut job, "w", "h1".into(), 1_500);
        apply_outcome(&mut job, &Outcome::ReturnToQueue, 1_500);
        claim(&mut job, "dead", "h2".into(), 1_600);
        assert!(job.errors.is_empty());
        recover_lost(&mut job, 9_000);
        assert_eq!(job.errors.len(), 1);
        assert_eq!(job.errors[0].worker_id.as_deref(), Some("dead"));
        assert_eq!(job.errors[0].error, job.last_error.clone().unwrap());
        claim(&mut job, "w", "h3".into(), 20_000);
        apply_outcome(&mut job, &Outcome::failed("boom"), 21_000);
        assert_eq!(job.status, JobStatus::Failed);
        let before = job.errors.clone();
        operator_retry(&mut job, 22_000).unwrap();
        assert_eq!(job.errors, before);
    }

    #[test]
    fn reschedule_does_not_use_an_attempt() {
        let mut job = claimed(0);
        apply_outcome(&mut job, &Outcome::Reschedule { delay_ms: 5 }, 2_000);
        assert_eq!(
            (job.status, job.attempts, job.scheduled_at_ms),
            (JobStatus::Queued, 0, 2_005)
        );
        assert_eq!(job.last_error, None);
    }

    #[test]
    fn operator_actions_check_status() {
        let mut job = claimed(0);
        assert_eq!(
            operator_retry(&mut job, 5).unwrap_err().code(),
            ErrorCode::InvalidJobState
        );
        recover_lost(&mut job, 9);
        assert_eq!(job.status, JobStatus::Orphaned);
        assert_eq!(
            operator_cancel(&mut job, 10).unwrap_err().code(),
            ErrorCode::InvalidJobState
        );
        operator_retry(&mut job, 11).unwrap();
        assert_eq!(
            (job.status, job.attempts, job.orphaned_at_ms),
            (JobStatus::Queued, 0, None)
        );
    }

    #[test]
    fn an_output_is_kept_on_completion_and_cleared_by_a_retry() {
        let mut job = claimed(1);
        let output = Outcome::CompletedWith {
            output: serde_json::json!({"rows": 3}),
        };
        apply_outcome(&mut job, &output, 50);
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(job.output, Some(serde_json::json!({"rows": 3})));
        operator_retry(&mut job, 60).unwrap();
        assert_eq!(job.output, None);
    }

    #[test]
    fn an_output_too_large_fails_the_attempt_and_keeps_nothing() {
        let mut job = claimed(1);
        let big = Outcome::CompletedWith {
            output: serde_json::Value::String("x".repeat(MAX_OUTPUT_BYTES)),
        };
        apply_outcome(&mut job, &big, 50);
        assert_eq!((job.status, job.output.clone()), (JobStatus::Queued, None));
        let error = job.last_error.clone().unwrap();
        assert!(error.starts_with("output-too-large:"), "{error}");
        let fits = serde_json::Value::String("x".repeat(MAX_OUTPUT_BYTES - 2));
        assert_eq!(output_size_error(&fits), None);
    }
}
