//! `POST /api/v1/jobs`, `POST /api/v1/jobs/batch` and `GET /api/v1/jobs/{id}`.
//!
//! An enqueue answers 201 when it created the job and 200 when the store
//! answered with an existing one (a replay of the same `Idempotency-Key`, or
//! `dedupeWhileQueued` finding a queued twin), so a client can tell a retry
//! of its own request from new work by the status alone; the body says which
//! (`outcome`). A batch is one store transaction: every job is checked first,
//! then all are enqueued or none. A job's JSON is the `duraq jobs show
//! --json` object, with the dashboard's secrets masked in `lastError`.

use axum::body::Body;
use axum::extract::{Path, State as AxumState};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use duraq_core::{EnqueueOutcome, Job, Producer};
use serde_json::{json, Value};

use super::body::{idempotency_header, job_from, read_json};
use super::error::{json_response, ApiError};
use crate::State;

/// `created`, `replayed` or `deduplicated`.
fn outcome_name(outcome: &EnqueueOutcome) -> &'static str {
    match outcome {
        EnqueueOutcome::Created(_) => "created",
        EnqueueOutcome::Replayed(_) => "replayed",
        EnqueueOutcome::Deduplicated(_) => "deduplicated",
    }
}

/// The store's producer side, or 501 when the router was built without one
/// ([`crate::WebOptions::producer`]).
pub fn producer(state: &State) -> Result<std::sync::Arc<dyn Producer>, ApiError> {
    state.options.producer.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "api-writes-unavailable",
            "this dashboard was built without a producer (WebOptions::producer): it cannot enqueue",
        )
    })
}

/// `POST /api/v1/jobs`.
pub async fn create(
    AxumState(state): AxumState<State>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let producer = producer(&state)?;
    let key = idempotency_header(&headers)?;
    let value = read_json(&headers, body).await?;
    let job = job_from(&state, "", value, key)?;
    let outcome = (producer.enqueue(job).await).map_err(|e| ApiError::store(&state, "", e))?;
    let status = match outcome {
        EnqueueOutcome::Created(_) => StatusCode::CREATED,
        _ => StatusCode::OK,
    };
    let body = json!({"jobId": outcome.job_id(), "outcome": outcome_name(&outcome)});
    let mut response = json_response(status, &body);
    let location = format!("{}/api/v1/jobs/{}", state.options.base(), outcome.job_id());
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// `POST /api/v1/jobs/batch`: `{"jobs": [job, …]}` → `{"jobs": [{"jobId",
/// "outcome"}, …]}` in the same order; 201 when any was created, else 200.
pub async fn batch(
    AxumState(state): AxumState<State>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let producer = producer(&state)?;
    if headers.contains_key("idempotency-key") {
        let why = "a batch takes no Idempotency-Key: give each job its \"idempotencyKey\"";
        return Err(ApiError::bad_request("invalid-request", why));
    }
    let shape = || ApiError::bad_request("invalid-request", "the body is {\"jobs\": [job, …]}");
    let Value::Object(mut body) = read_json(&headers, body).await? else {
        return Err(shape());
    };
    if let Some(key) = body.keys().find(|k| *k != "jobs") {
        let message = format!("unknown key {key:?}: a batch is {{\"jobs\": [job, …]}}");
        return Err(ApiError::bad_request("unknown-key", message));
    }
    let Some(Value::Array(items)) = body.remove("jobs") else {
        return Err(shape());
    };
    if items.is_empty() {
        return Err(ApiError::bad_request(
            "invalid-request",
            "\"jobs\" is empty",
        ));
    }
    let jobs = (items.into_iter().enumerate())
        .map(|(n, item)| job_from(&state, &format!("jobs[{n}]: "), item, None))
        .collect::<Result<Vec<_>, _>>()?;
    let outcomes =
        (producer.enqueue_batch(jobs).await).map_err(|e| ApiError::store(&state, "", e))?;
    let created = outcomes
        .iter()
        .any(|o| matches!(o, EnqueueOutcome::Created(_)));
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let list: Vec<Value> = (outcomes.iter())
        .map(|o| json!({"jobId": o.job_id(), "outcome": outcome_name(o)}))
        .collect();
    Ok(json_response(status, &json!({"jobs": list})))
}

/// `GET /api/v1/jobs/{id}`: the job, or 404 `job-not-found`.
pub async fn show(
    AxumState(state): AxumState<State>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = find(&state, &id).await?;
    Ok(json_response(StatusCode::OK, &job_json(&state, &job)))
}

/// The job of exactly `id` (no prefixes: a client holds whole ids).
pub async fn find(state: &State, id: &str) -> Result<Job, ApiError> {
    let job = (state.store.get_job(id).await).map_err(|e| ApiError::store(state, "", e))?;
    job.ok_or_else(|| ApiError::store(state, "", duraq_core::Error::job_not_found(id)))
}

/// `serde_json::to_value(&Job)`, `lastError` masked like the pages'.
pub fn job_json(state: &State, job: &Job) -> Value {
    let mut value = serde_json::to_value(job).unwrap_or(Value::Null);
    if let Some(Value::String(error)) = value.get_mut("lastError") {
        *error = state.options.scrub(error);
    }
    value
}
