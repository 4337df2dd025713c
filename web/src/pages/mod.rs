//! The pages. Each module renders one or two pages with maud (escaping every
//! value) inside [`crate::html::page`]; every read is one O(1) count snapshot
//! or one index-ordered, limited `search_jobs` page, so a page costs the same on a
//! million jobs as on ten.
//!
//! [`queue_rows`] is the one place the per-queue numbers come from
//! (`Inspect::queue_snapshot`: exact counters per queue, plus each queue's
//! latency, one revision for all of them), with the due jobs no alive worker
//! handles attached to their queue (`Inspect::unhandled_jobs`, a bounded read of
//! the oldest due jobs, judged by the default stale timeout).

pub mod bulk;
pub mod job;
pub mod jobs;
pub mod other;
pub mod overview;
pub mod queue;
pub mod search;
pub mod table;
pub mod view_bulk;
pub mod view_kind;
pub mod view_query;
pub mod view_scan;
pub mod view_table;
pub mod views;
pub mod workflow;
pub mod workflows;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use duraq_core::inspect::StatusCounts;
use duraq_core::Inspect;
use maud::html;

use crate::html::{notice, page};
use crate::{AppState, State};

/// One row of the queues table.
#[derive(Clone, Debug)]
pub struct QueueRow {
    /// The queue (`None` would stand for "every queue").
    pub queue: Option<String>,
    /// Its jobs per status.
    pub counts: StatusCounts,
    /// Age of its oldest due queued job, when the store reports it.
    pub latency_ms: Option<i64>,
    /// Whether workers skip the queue (durably paused).
    pub paused: bool,
    /// Job names with due jobs in this queue that no alive worker handles,
    /// each with how many of them were seen.
    pub unhandled: Vec<(String, u64)>,
}

/// The stale timeout the dashboard judges workers by (the worker's default).
pub fn stale_after_ms() -> i64 {
    i64::try_from(duraq_core::worker::DEFAULT_STALE_AFTER.as_millis()).unwrap_or(i64::MAX)
}

/// The per-queue numbers (queues holding at least one job, by name), the
/// global counts, and the count revision they are all exact for (the
/// unhandled names are read just after).
pub async fn queue_rows(
    store: &dyn Inspect,
) -> duraq_core::Result<(Vec<QueueRow>, StatusCounts, i64)> {
    let snap = store.queue_snapshot().await?;
    let unhandled = store.unhandled_jobs(stale_after_ms()).await?;
    let rows = snap
        .queues
        .into_iter()
        .map(|q| QueueRow {
            unhandled: unhandled
                .iter()
                .filter(|g| g.queue == q.queue)
                .map(|g| (g.job_name.clone(), g.due))
                .collect(),
            queue: Some(q.queue),
            counts: q.counts,
            latency_ms: q.latency_ms,
            paused: q.paused,
        })
        .collect();
    Ok((rows, snap.counts, snap.revision))
}

/// 404 for an unknown path, in the page frame.
pub async fn not_found(axum::extract::State(state): axum::extract::State<State>) -> Response {
    let body = html! { h1 { "Not found" } p { "There is no such page." } };
    (
        StatusCode::NOT_FOUND,
        page(&state, "overview", "Not found", body),
    )
        .into_response()
}

/// A store error as a page: its stable code and message, nothing else.
pub fn store_error(state: &AppState, name: &'static str, err: &duraq_core::Error) -> Response {
    store_error_and(state, name, err, html! {})
}

/// [`store_error`] followed by `more` (what an interrupted action had done).
pub fn store_error_and(
    state: &AppState,
    name: &'static str,
    err: &duraq_core::Error,
    more: maud::Markup,
) -> Response {
    let status = match err {
        duraq_core::Error::NotFound { .. } => StatusCode::NOT_FOUND,
        duraq_core::Error::Invalid { .. } => StatusCode::BAD_REQUEST,
        duraq_core::Error::Conflict { .. } => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let chain = state.options.scrub(&duraq_core::inspect::error_chain(err));
    let text = format!("error[{}]: {chain}", err.code().as_str());
    let body = html! { h1 { "Something went wrong" } (notice("error", &text)) (more) };
    (status, page(state, name, "Error", body)).into_response()
}
