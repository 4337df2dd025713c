//! [`JobContext::step`]: run a closure once per job, and hand its stored
//! output to every later attempt.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::journal::{check_name, StepWrite};
use crate::worker::{JobContext, JobError};
use crate::ErrorCode;

impl JobContext {
    /// Runs `run` once for this job and returns its output; every later
    /// attempt of the job (a retry, or the resumption after a
    /// [`JobContext::sleep`]) gets the stored output without running it. The
    /// output is stored as JSON (at most 256 KiB, else the attempt fails with
    /// `output-too-large`) before this returns.
    ///
    /// A step is at least once: a crash after its side effect and before its
    /// record runs it again. A closure that fails fails the attempt as any
    /// error does (nothing is recorded: the retry runs it again). Errors of
    /// the step itself carry a code ([`JobError::code`]): `invalid-step-name`
    /// (empty, over 200 bytes, control characters, or starting with
    /// `duraq.`) and `duplicate-step` (a name this attempt already used) end
    /// the job at once; `lease-lost` says the attempt no longer holds the job.
    ///
    /// ```
    /// use duraq_core::{JobContext, JobError, JobResult};
    ///
    /// async fn order(ctx: &JobContext) -> Result<JobResult, JobError> {
    ///     let charge: String = ctx.step("charge", || async { Ok("ch_123".to_owned()) }).await?;
    ///     // A retry after a failure below does not charge again.
    ///     ctx.step("receipt", || async { Ok(format!("receipt for {charge}")) }).await?;
    ///     Ok(JobResult::Completed)
    /// }
    /// ```
    pub async fn step<T, F, Fut>(&self, name: &str, run: F) -> Result<T, JobError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, JobError>>,
    {
        check_name(name)?;
        if let Some(stored) = self.replay(name).await? {
            return read_output(name, stored);
        }
        let output = run().await?;
        let output = serde_json::to_value(&output).map_err(|e| {
            JobError::new(format!(
                "step {name:?}'s output does not serialize to JSON: {e}"
            ))
        })?;
        read_output(name, self.record(name, output).await?)
    }

    /// The stored output of step `name` if an earlier attempt (or this one)
    /// recorded it, else `None`; marks the name used by this attempt, as
    /// [`JobContext::step`] does. With a store's `record_step_in` (PostgreSQL)
    /// or `record_step_in_transaction` (SQLite) it makes a step **exactly
    /// once**: the step's writes and its record commit in the application's
    /// own transaction, or neither does.
    ///
    /// ```
    /// use duraq_core::{JobContext, JobError};
    ///
    /// async fn balance_after_debit(ctx: &JobContext) -> Result<i64, JobError> {
    ///     if let Some(balance) = ctx.recorded::<i64>("debit").await? {
    ///         return Ok(balance); // committed by an earlier attempt
    ///     }
    ///     // Else, in one transaction of your client: debit the account, call
    ///     // the store's record_step_in(&tx, ctx, "debit", &balance), commit.
    ///     let balance = 90;
    ///     Ok(balance)
    /// }
    /// ```
    pub async fn recorded<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, JobError> {
        check_name(name)?;
        match self.replay(name).await? {
            Some(stored) => read_output(name, stored).map(Some),
            None => Ok(None),
        }
    }

    /// Marks `name` used by this attempt and answers with its recorded
    /// output, reading the job's records on the attempt's first step.
    pub(crate) async fn replay(&self, name: &str) -> Result<Option<Value>, JobError> {
        let mut journal = self.journal.lock().await;
        journal.use_name(name)?;
        if !journal.is_loaded() {
            let records = self
                .store
                .job_steps(&self.job.id)
                .await
                .map_err(|e| JobError::new(format!("reading the job's steps: {}", e)))?;
            journal.load(records);
        }
        Ok(journal.recorded(name))
    }

    /// Records `output` as step `name` under this attempt's lease; answers
    /// with what is stored under that name now.
    pub(crate) async fn record(&self, name: &str, output: Value) -> Result<Value, JobError> {
        if let Some(error) = crate::transitions::output_size_error(&output) {
            return Err(JobError::coded(ErrorCode::OutputTooLarge, error));
        }
        let write = StepWrite {
            lease: self.lease(),
            attempt: self.job.attempts,
            name: name.to_owned(),
            output,
            keep_completed: self.job.keep_completed,
        };
        match self.store.record_step(write).await {
            Ok(Some(stored)) => Ok(stored.output),
            Ok(None) => Err(JobError::coded(
                ErrorCode::LeaseLost,
                format!("step {name:?} was not recorded: this attempt no longer holds the job"),
            )),
            Err(e) => Err(JobError::new(format!("recording step {name:?}: {}", e))),
        }
    }
}

/// The record of step `name` with `output` for `ctx`'s attempt, as a
/// store's `record_step_in` writes it in the application's transaction:
/// `invalid-step-name` or `output-too-large` (nothing written) otherwise.
pub fn step_write<T: Serialize>(
    ctx: &JobContext,
    name: &str,
    output: &T,
) -> crate::Result<StepWrite> {
    use crate::error::Error;
    check_name(name).map_err(|e| Error::invalid(ErrorCode::InvalidStepName, e.message()))?;
    let output = serde_json::to_value(output).map_err(|e| {
        Error::invalid(
            ErrorCode::InvalidArgs,
            format!("step {name:?}'s output: {e}"),
        )
    })?;
    if let Some(error) = crate::transitions::output_size_error(&output) {
        return Err(Error::invalid(ErrorCode::OutputTooLarge, error));
    }
    Ok(StepWrite {
        lease: ctx.lease(),
        attempt: ctx.job().attempts,
        name: name.to_owned(),
        output,
        keep_completed: ctx.job().keep_completed,
    })
}

fn read_output<T: DeserializeOwned>(name: &str, stored: Value) -> Result<T, JobError> {
    serde_json::from_value(stored).map_err(|e| {
        JobError::new(format!(
            "step {name:?}'s stored output does not read as {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}
