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
//! Why no polling loop of its own: the wait wakes on the store's count
//! deltas (in-process writers, PostgreSQL's NOTIFY) and on the dashboard's
//! live-count task (one read per poll interval for the whole router, which
//! sees other processes' writes too), and re-reads the one job only then. A
//! job changes status only with a count change, so no terminal status is
//! missed. The timeout is capped at [`MAX_WAIT`].

use std::time::Duration;

use axum::extract::{Path, RawQuery, State as AxumState};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

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
    let deadline = tokio::time::Instant::now() + timeout;
    let mut counts = state.store.subscribe_counts();
    state.live.ensure_started();
    let mut live = state.live.subscribe();
    let mut job = find(&state, &id).await?;
    let (mut counts_open, mut live_open) = (true, true);
    while !job.status.is_terminal() {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => break,
            got = counts.recv(), if counts_open => {
                counts_open = !matches!(got, Err(RecvError::Closed));
            }
            got = live.changed(), if live_open => live_open = got.is_ok(),
        }
        match state.store.get_job(&id).await {
            Ok(Some(now)) => job = now,
            Ok(None) => return Ok(answer(true, serde_json::Value::Null)),
            Err(e) => return Err(ApiError::store(&state, "", e)),
        }
    }
    let done = job.status.is_terminal();
    Ok(answer(done, job_json(&state, &job)))
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
