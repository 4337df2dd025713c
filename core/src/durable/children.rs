//! [`JobContext::spawn_and_wait`]: a child job enqueued once, its parent
//! waiting as `pending` until the child is finished.
//!
//! Why a signal and not a dependency: the parent is already running when it
//! asks, and it must learn the child's outcome whatever it is (a dependency
//! cancels its dependents when it fails). The child's row names its parent
//! ([`crate::Job::parent_id`]); the transition that finishes the child
//! delivers its outcome to the parent as signal `duraq.child.<child id>`, in
//! the same transaction ([`ChildNotice`]). The parent's side is an ordinary
//! [`JobContext::wait_for_signal`], so a child that finishes before its
//! parent waits, a worker killed in between, and the replays after it are the
//! cases signals already answer.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::journal::{check_name, RESERVED_PREFIX};
use super::signal::Signalled;
use crate::error::ErrorCode;
use crate::job::{Job, JobStatus};
use crate::new_job::NewJob;
use crate::worker::{JobContext, JobError};

/// How long a parent waits for its child before the wait times out.
pub const CHILD_WAIT: Duration = Duration::from_secs(365 * 86_400);

/// The signal a child's outcome is delivered as.
fn child_signal(child_id: &str) -> String {
    format!("{RESERVED_PREFIX}child.{child_id}")
}

/// How a spawned child ended ([`JobContext::spawn_and_wait`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChildOutcome<T> {
    /// The child's id.
    pub job_id: String,
    /// `completed`, `failed`, `cancelled` or `orphaned`.
    pub status: JobStatus,
    /// Its output read as `T` (JSON `null` when it returned none), when it
    /// completed.
    pub output: Option<T>,
    /// Its last error, when it has one.
    pub last_error: Option<String>,
}

impl<T> ChildOutcome<T> {
    /// The output of a completed child; any other end is an error that
    /// fails the parent at once (a retry would replay the same outcome).
    pub fn into_output(self) -> Result<T, JobError> {
        match self.output {
            Some(output) => Ok(output),
            None => Err(JobError::new(format!(
                "child job {} ended {}: {}",
                self.job_id,
                self.status,
                self.last_error.as_deref().unwrap_or("no error recorded")
            ))
            .discard()),
        }
    }
}

/// A finished child's outcome, to deliver to its parent in the transaction
/// that finished it: a store calls its signal delivery with these three and
/// passes the answer through [`ChildNotice::settle`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChildNotice {
    /// The parent's id.
    pub parent_id: String,
    /// The signal's name (`duraq.child.<child id>`).
    pub name: String,
    /// `{"jobId", "status", "output", "lastError"}`.
    pub payload: Value,
}

impl ChildNotice {
    /// The notice of `job`, a child just finished; `None` for a job that is
    /// not finished or has no parent.
    ///
    /// ```
    /// use duraq_core::driver::ChildNotice;
    /// use duraq_core::driver::transitions::new_job_row;
    /// use duraq_core::{EnqueueOptions, JobStatus, NewJob};
    ///
    /// let new = NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// let mut job = new_job_row(&new, 0);
    /// job.parent_id = Some("parent".into());
    /// assert!(ChildNotice::of(&job).is_none(), "still queued");
    /// job.status = JobStatus::Completed;
    /// assert_eq!(ChildNotice::of(&job).unwrap().parent_id, "parent");
    /// ```
    pub fn of(job: &Job) -> Option<Self> {
        let parent_id = job.parent_id.clone()?;
        job.status.is_terminal().then(|| Self {
            name: child_signal(&job.id),
            payload: json!({
                "jobId": job.id,
                "status": job.status,
                "output": job.output,
                "lastError": job.last_error,
            }),
            parent_id,
        })
    }

    /// The notice of child `child_id` of `parent_id`, completed without an
    /// output (a store's completion that never loads the row).
    pub fn completed(parent_id: String, child_id: &str) -> Self {
        Self {
            name: child_signal(child_id),
            payload: json!({
                "jobId": child_id,
                "status": JobStatus::Completed,
                "output": null,
                "lastError": null,
            }),
            parent_id,
        }
    }

    /// What the child's transition makes of the delivery: a parent that is
    /// gone or finished (deleted, cancelled) waits for nothing, and a parent
    /// that already holds an outcome of this child (a failed child retried
    /// by hand and finished again) keeps the first. Other errors stand.
    pub fn settle(delivered: crate::Result<Signalled>) -> crate::Result<()> {
        match delivered {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::JobNotFound | ErrorCode::JobFinished | ErrorCode::SignalConflict
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

impl JobContext {
    /// Enqueues `job` as this job's child, once, and waits until it is
    /// finished; returns how it ended, its output read as `T`.
    ///
    /// The enqueue is a step named `duraq.spawn.NAME`, and the child is keyed
    /// by this job and `name` (its idempotency key, unless `job` has one), so
    /// a replay, even one after a crash between the enqueue and the step's
    /// record, gets the same child back. Until the child is finished, the
    /// call ends the attempt like [`JobContext::wait_for_signal`] (`?` passes
    /// it on): this job waits as `pending`, holding no slot and using no
    /// retry, and the child's finishing transaction wakes it. A child waited
    /// for longer than [`CHILD_WAIT`] fails the call.
    ///
    /// `invalid-step-name` for a bad `name`; `unsupported-option` for a
    /// child with dependencies or in a workflow.
    ///
    /// ```
    /// use duraq_core::{EnqueueOptions, JobContext, JobError, JobResult, NewJob};
    ///
    /// async fn invoice(ctx: &JobContext) -> Result<JobResult, JobError> {
    ///     let render = NewJob::new("render-pdf", serde_json::json!({"invoice": 7}), EnqueueOptions::new())
    ///         .map_err(JobError::new)?;
    ///     let url: String = ctx.spawn_and_wait("pdf", render).await?.into_output()?;
    ///     JobResult::output(&url)
    /// }
    /// ```
    pub async fn spawn_and_wait<T: DeserializeOwned>(
        &self,
        name: &str,
        job: NewJob,
    ) -> Result<ChildOutcome<T>, JobError> {
        check_name(name)?;
        let step = format!("{RESERVED_PREFIX}spawn.{name}");
        // The id stored under the step: this attempt's enqueue, or an
        // earlier attempt's (a replay after a crash gets the same child).
        let stored = match self.replay(&step).await? {
            Some(stored) => stored,
            None => {
                let child = job.child_of(&self.job.id, name).map_err(store_error)?;
                let enqueued = self.store.enqueue(child).await.map_err(store_error)?;
                let id = Value::String(enqueued.job_id().to_owned());
                self.record(&step, id).await?
            }
        };
        let child_id: String = serde_json::from_value(stored)
            .map_err(|e| JobError::new(format!("step {step:?} holds no job id: {e}")))?;
        let Some(payload) = self
            .signal_value(&child_signal(&child_id), CHILD_WAIT)
            .await?
        else {
            return Err(JobError::new(format!(
                "child job {child_id} did not finish within {} days",
                CHILD_WAIT.as_secs() / 86_400
            ))
            .discard());
        };
        read_outcome(&child_id, payload)
    }
}

/// A store's error met while spawning: its code kept; refused input ends
/// the job, anything else is retried.
fn store_error(e: crate::Error) -> JobError {
    let refused = matches!(e, crate::Error::Invalid { .. });
    let error = JobError::coded(e.code(), format!("spawning a child: {e}"));
    if refused {
        error.discard()
    } else {
        error
    }
}

fn read_outcome<T: DeserializeOwned>(
    child_id: &str,
    payload: Value,
) -> Result<ChildOutcome<T>, JobError> {
    let unreadable =
        |what: &str| JobError::new(format!("child job {child_id}'s outcome has no {what}"));
    let status: JobStatus =
        serde_json::from_value(payload["status"].clone()).map_err(|_| unreadable("status"))?;
    let output = if status == JobStatus::Completed {
        let value = payload.get("output").cloned().unwrap_or(Value::Null);
        Some(serde_json::from_value(value).map_err(|e| {
            JobError::new(format!(
                "child job {child_id}'s output does not read as {}: {e}",
                std::any::type_name::<T>()
            ))
        })?)
    } else {
        None
    };
    Ok(ChildOutcome {
        job_id: child_id.to_owned(),
        status,
        output,
        last_error: payload["lastError"].as_str().map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_reads_back_as_delivered() {
        let mut job = crate::transitions::new_job_row(
            &NewJob::new("j", json!([]), crate::EnqueueOptions::new()).unwrap(),
            0,
        );
        job.parent_id = Some("p".into());
        job.status = JobStatus::Failed;
        job.last_error = Some("boom".into());
        let notice = ChildNotice::of(&job).unwrap();
        assert_eq!(notice.name, format!("duraq.child.{}", job.id));
        let outcome: ChildOutcome<String> = read_outcome(&job.id, notice.payload).unwrap();
        assert_eq!(outcome.status, JobStatus::Failed);
        assert_eq!(outcome.output, None);
        let err = outcome.into_output().unwrap_err();
        assert!(err.is_discard() && err.message().contains("boom"));

        let done = ChildNotice::completed("p".into(), "c");
        let outcome: ChildOutcome<Option<u32>> = read_outcome("c", done.payload).unwrap();
        assert_eq!(outcome.into_output().unwrap(), None);
    }

    #[test]
    fn a_gone_or_finished_parent_is_not_the_childs_error() {
        let settle = |code| ChildNotice::settle(Err(crate::Error::conflict(code, "x")));
        assert!(settle(ErrorCode::JobFinished).is_ok());
        assert!(settle(ErrorCode::SignalConflict).is_ok());
        assert!(ChildNotice::settle(Err(crate::Error::job_not_found("p"))).is_ok());
        let busy = settle(ErrorCode::DatabaseBusy).unwrap_err();
        assert_eq!(busy.code(), ErrorCode::DatabaseBusy);
    }
}
