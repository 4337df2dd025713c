//! The JSON API under `/api/v1`, for programs in any language: enqueue one
//! job, a batch or a workflow, read a job, wait for a job to finish, send a
//! job a signal (`docs/http-api.md`).
//!
//! Why in the dashboard's router: it is already the one HTTP face of a store
//! with its guard (the token, read-only mode, the `Host` allow-list), and
//! `duraq web` serves it, so a team gets the API wherever it runs the
//! dashboard without a second server to secure. The guard treats `/api/`
//! paths as an API's: refusals are JSON, writes need the bearer token (no
//! cookie, so no CSRF form token either), and a `?token=` is never a login.
//! Options are read by [`crate::job_options`], the parser of the `duraq`
//! flags and workflow files, so every spelling and code is shared.

mod body;
mod error;
mod jobs;
mod signals;
mod wait;
mod workflows;

use axum::routing::{get, post};
use axum::Router;

pub use error::refusal;

use crate::State;

/// Whether `path` (inside the router) is an API path, answered in JSON.
pub fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// The API's routes, nested at `/api/v1`; anything else under it is a JSON 404.
pub fn routes() -> Router<State> {
    Router::new()
        .route("/jobs", post(jobs::create))
        .route("/jobs/batch", post(jobs::batch))
        .route("/jobs/{id}", get(jobs::show))
        .route("/jobs/{id}/wait", get(wait::wait))
        .route("/jobs/{id}/signals/{name}", post(signals::deliver))
        .route("/workflows", post(workflows::create))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

async fn not_found() -> error::ApiError {
    let why = "no such API path (the paths are in docs/http-api.md)";
    error::ApiError::new(axum::http::StatusCode::NOT_FOUND, "not-found", why)
}

async fn method_not_allowed() -> error::ApiError {
    let why = "this API path does not take that method";
    error::ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        why,
    )
}
