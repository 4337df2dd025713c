//! `GET /api/v1/jobs/{id}/wait?timeout=30s`: answers when the job is terminal
//! or when the time is up, whichever comes first.
//!
//! Both answers are 200 `{"done": bool, "job": {…}}`: the time running out is
//! an expected outcome of a long poll, not a failed request (a 408 would tell
//! HTTP clients and proxies that the *client* was too slow, and some retry
//! it on their own). `done` is true for a terminal job; a job deleted while
//! waited for (an ephemeral job that completed, or a prune) is `done` with
//! `"job": null`.
//!
//! The wait is the store's own ([`duraq_core::Inspect::wait_for`]): woken by
//! the count changes the store hears of (its own writes; PostgreSQL's NOTIFY
//! from every process) and reading the job at least every 100 ms for the
//! ones it cannot hear (another process's commit on SQLite). The timeout is
//! capped at [`MAX_WAIT`].

use std::time::Duration;

use axum::extract::{Path, RawQuery, State as AxumState};
use axum::http::StatusCode;
use axum::response::Response;
use duraq_core::inspect::Waited;
use serde_json::json;

use super::error::{json_response, ApiError};
use super::jobs::{find, job_json};
use crate::job_options::values::duration_ms;
use crate::State;

/// The longest wait one request may ask for: 5 minutes (longer asks are cut
/// to it; a client loops for longer).
pub const MAX_WAIT: Duration = Duration::from_secs(300);

/// The wait when `timeout` is not given.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// `GET /api/v1/jobs/{id}/wait`.
pub async fn wait(
    AxumState(state): AxumState<State>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let timeout = timeout(query.as_deref())?;
    let job = find(&state, &id).await?;
    let waited = (state.store.wait_for(&job.id, timeout).await)
        .map_err(|e| ApiError::store(&state, "", e))?;
    Ok(match waited {
        Waited::Finished(job) => answer(true, job_json(&state, &job)),
        Waited::TimedOut(job) => answer(false, job_json(&state, &job)),
        Waited::Deleted => answer(true, serde_json::Value::Null),
    })
}

fn answer(done: bool, job: serde_json::Value) -> Response {
    json_response(StatusCode::OK, &json!({"done": done, "job": job}))
}

/// The `timeout` parameter (a duration like `30s`), at most [`MAX_WAIT`].
fn timeout(query: Option<&str>) -> Result<Duration, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|_| ApiError::bad_request("invalid-request", "the query does not parse"))?;
    let mut timeout = DEFAULT_WAIT;
    for (key, value) in pairs {
        if key != "timeout" {
            let message = format!("unknown query key {key:?}: the wait takes timeout");
            return Err(ApiError::bad_request("unknown-key", message));
        }
        let ms =
            duration_ms("timeout", &value).map_err(|e| ApiError::invalid(e.code, e.message))?;
        timeout = Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    }
    Ok(timeout.min(MAX_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_is_a_duration_capped_at_five_minutes() {
        assert_eq!(timeout(None).unwrap(), DEFAULT_WAIT);
        assert_eq!(timeout(Some("timeout=2s")).unwrap(), Duration::from_secs(2));
        assert_eq!(timeout(Some("timeout=1h")).unwrap(), MAX_WAIT);
        assert_eq!(
            timeout(Some("timeout=soon")).unwrap_err().code,
            "invalid-duration"
        );
        assert_eq!(timeout(Some("timeout=-1s")).unwrap_err().status, 422);
        assert_eq!(timeout(Some("wait=1s")).unwrap_err().code, "unknown-key");
    }
}
