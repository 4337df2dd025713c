//! [`JobContext::wait_for_signal`]: read a signal delivered to the job, or
//! end the attempt and wait for it as `pending`, without a slot or a retry.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::journal::RESERVED_PREFIX;
use crate::worker::{JobContext, JobError};

impl JobContext {
    /// The payload of signal `name` once the job has received it (before
    /// or after this call), or `None` when `timeout` passed first.
    ///
    /// When the signal is not there yet the call returns an error that ends
    /// the attempt (`?` passes it on, [`JobError::is_suspension`]): the job
    /// waits as `pending`, holding no slot and using no retry, until
    /// [`crate::Producer::signal`] (or `duraq jobs signal`) delivers it or
    /// the time is up; it is then `queued`, due now, and its next attempt
    /// replays the steps before this call. What the call returns is recorded
    /// as a step (`duraq.signal.NAME`), so a replay returns the same:
    /// a wait that timed out stays timed out if the signal comes later.
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::{JobContext, JobError, JobResult};
    ///
    /// async fn ship(ctx: &JobContext) -> Result<JobResult, JobError> {
    ///     let day = Duration::from_secs(86_400);
    ///     match ctx.wait_for_signal::<String>("shipped", 7 * day).await? {
    ///         Some(tracking) => JobResult::output(&tracking),
    ///         None => Err(JobError::new("not shipped within a week").discard()),
    ///     }
    /// }
    /// ```
    pub async fn wait_for_signal<T: DeserializeOwned>(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<T>, JobError> {
        let value = self.signal_value(name, timeout).await?;
        match value {
            None => Ok(None),
            Some(payload) => serde_json::from_value(payload).map(Some).map_err(|e| {
                JobError::new(format!(
                    "signal {name:?}'s payload does not read as {}: {e}",
                    std::any::type_name::<T>()
                ))
            }),
        }
    }

    pub(super) async fn signal_value(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Option<Value>, JobError> {
        let result = format!("{RESERVED_PREFIX}signal.{name}");
        let deadline = format!("{RESERVED_PREFIX}wait.{name}");
        if let Some(decided) = self.replay(&result).await? {
            return Ok(decided.get("payload").cloned());
        }
        let delivered = self
            .store
            .job_signals(&self.job.id)
            .await
            .map_err(|e| JobError::new(format!("reading the job's signals: {e}")))?;
        if let Some(signal) = delivered.into_iter().find(|s| s.name == name) {
            let decided = self
                .record(&result, json!({ "payload": signal.payload }))
                .await?;
            return Ok(decided.get("payload").cloned());
        }
        let now = self.now_ms();
        let ms = crate::time::duration_to_ms(timeout).unwrap_or(i64::MAX);
        let until = match self.replay(&deadline).await? {
            Some(stored) => stored["untilMs"].as_i64().unwrap_or(now),
            None => {
                let until = now.saturating_add(ms);
                let stored = self.record(&deadline, json!({ "untilMs": until })).await?;
                stored["untilMs"].as_i64().unwrap_or(until)
            }
        };
        if now >= until {
            let decided = self.record(&result, json!({ "timedOut": true })).await?;
            return Ok(decided.get("payload").cloned());
        }
        Err(JobError::awaiting(name, until))
    }
}
