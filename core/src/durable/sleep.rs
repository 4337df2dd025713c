//! [`JobContext::sleep`]: end the attempt until a time, keeping the slot free
//! and the retries untouched; the next attempt replays up to here and goes on.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::worker::{JobContext, JobError};

impl JobContext {
    /// Sleeps durably for `d`: see [`JobContext::sleep_until`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use duraq_core::{JobContext, JobError, JobResult};
    ///
    /// async fn trial(ctx: &JobContext) -> Result<JobResult, JobError> {
    ///     ctx.step("welcome", || async { Ok(()) }).await?;
    ///     ctx.sleep(Duration::from_secs(14 * 86_400)).await?; // no worker waits
    ///     ctx.step("trial over", || async { Ok(()) }).await?;
    ///     Ok(JobResult::Completed)
    /// }
    /// ```
    pub async fn sleep(&self, d: Duration) -> Result<(), JobError> {
        let ms = crate::time::duration_to_ms(d).unwrap_or(i64::MAX);
        let until = self.now_ms().saturating_add(ms);
        self.sleep_until_ms(until).await
    }

    /// Sleeps durably until `t`. The first time the handler gets here, the
    /// wake-up time is recorded as a step and the call returns an error that
    /// ends the attempt (`?` passes it on): the job goes back to `queued`,
    /// due at `t`, without using a retry or touching `lastError`. The next
    /// attempt replays the handler's steps, and this call, finding `t`
    /// recorded and passed, returns `Ok(())`. Each sleep of a handler is
    /// told apart by its order (`duraq.sleep.1`, `duraq.sleep.2`, …), so the
    /// sleeps a handler reaches must not depend on anything but its args and
    /// step outputs.
    pub async fn sleep_until(&self, t: SystemTime) -> Result<(), JobError> {
        // Before the epoch is past; beyond the range is never.
        let until = crate::time::system_time_to_ms(t).unwrap_or_else(|ms| {
            if ms == i64::MIN {
                i64::MAX
            } else {
                0
            }
        });
        self.sleep_until_ms(until).await
    }

    async fn sleep_until_ms(&self, until_ms: i64) -> Result<(), JobError> {
        let name = self.journal.lock().await.next_sleep();
        let until = match self.replay(&name).await? {
            Some(stored) => stored["untilMs"].as_i64().unwrap_or(until_ms),
            None => {
                let stored = self.record(&name, json!({ "untilMs": until_ms })).await?;
                stored["untilMs"].as_i64().unwrap_or(until_ms)
            }
        };
        let left = until - self.now_ms();
        if left <= 0 {
            return Ok(());
        }
        Err(JobError::suspended(
            Duration::from_millis(left as u64),
            until,
        ))
    }
}
