//! The API's one error shape, `{"error": {"code", "message"}}`, and the HTTP
//! status of each kind of failure.
//!
//! Why statuses by kind and codes by name: a client in any language branches
//! on the status first (retry a 503, fix the request on a 4xx) and on the
//! stable code when it needs the detail; the codes are those of core and the
//! `duraq` program (`invalid-duration`, `idempotency-conflict`,
//! `job-not-found`), so one table of codes serves the CLI, the dashboard and
//! the API. Messages pass through the dashboard's secret masking.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::State;

/// A refused API request: its status, its stable code and why.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: the request is not of the API's shape (`invalid-request`,
    /// `unknown-key`, `invalid-json`).
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 422: a value of the right type that is not allowed (`invalid-duration`,
    /// `invalid-priority`, …).
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// A store's error by its kind: invalid input 422, a conflict with what
    /// is stored 409, a missing job 404, and a store that cannot answer now
    /// (busy, full, unreachable, another schema) 503. `at` prefixes the
    /// message (`jobs[2]: `); configured secrets are masked.
    pub fn store(state: &State, at: &str, e: duraq_core::Error) -> Self {
        use duraq_core::Error as E;
        let status = match &e {
            E::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            E::Conflict { .. } => StatusCode::CONFLICT,
            E::NotFound { .. } => StatusCode::NOT_FOUND,
            E::Busy { .. }
            | E::StorageFull { .. }
            | E::SchemaIncompatible { .. }
            | E::Backend { .. } => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = state.options.scrub(&format!("{at}{e}"));
        Self::new(status, e.code().as_str(), message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        let mut response = json_response(self.status, &body);
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            let retry = HeaderValue::from_static("1");
            response.headers_mut().insert(header::RETRY_AFTER, retry);
        }
        response
    }
}

/// `value` as an `application/json` answer with `status`.
pub fn json_response(status: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The guard's refusal of an API request (421, 401, 403) in the API's shape.
pub fn refusal(status: StatusCode, code: &'static str, why: &str) -> Response {
    ApiError::new(status, code, why).into_response()
}
