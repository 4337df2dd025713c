//! `POST /api/v1/jobs/{id}/signals/{name}` with `{"payload": …}` (optional,
//! default `null`): delivers a signal to a job, as `duraq jobs signal` does,
//! and answers 200 `{"jobId", "signal", "delivered": true, "replayed",
//! "woke"}`. A second delivery of the same payload is a replay (200, nothing
//! changes, even once the job finished); another payload is 409
//! `signal-conflict`, a new signal to a finished job 409
//! `job-finished`, no job 404 `job-not-found`, a bad name or a payload over
//! 256 KiB 422 `invalid-signal`.

use axum::body::Body;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::body::read_json;
use super::error::{json_response, ApiError};
use super::jobs::producer;
use crate::State;

/// `POST /api/v1/jobs/{id}/signals/{name}`.
pub async fn deliver(
    AxumState(state): AxumState<State>,
    Path((id, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let producer = producer(&state)?;
    let shape = || ApiError::bad_request("invalid-request", "the body is {\"payload\": …}");
    let Value::Object(mut body) = read_json(&headers, body).await? else {
        return Err(shape());
    };
    if let Some(key) = body.keys().find(|k| *k != "payload") {
        let message = format!("unknown key {key:?}: a signal is {{\"payload\": …}}");
        return Err(ApiError::bad_request("unknown-key", message));
    }
    let payload = body.remove("payload").unwrap_or(Value::Null);
    let done =
        (producer.signal(&id, &name, payload).await).map_err(|e| ApiError::store(&state, "", e))?;
    let answer = json!({
        "jobId": id,
        "signal": name,
        "delivered": true,
        "replayed": done.replayed,
        "woke": done.woke,
    });
    Ok(json_response(StatusCode::OK, &answer))
}
