//! `duraq-web`: the dashboard and Prometheus metrics of duraq, as an axum
//! [`Router`] an application nests in its own server (like Sidekiq::Web or Oban
//! Web), and what `duraq web` and `duraq worker --metrics-listen` serve.
//!
//! Why it is built this way:
//! - It reads and acts only through [`duraq_core::Inspect`] and
//!   [`duraq_core::Operate`] (the parts of a [`duraq_core::Store`] it uses), so it
//!   works on every store and can never disagree with the CLI on what a job is.
//! - Pages are rendered on the server with `maud`, which escapes every
//!   interpolated value by construction: job names, args and `lastError` come
//!   from whoever can enqueue, so no value can become markup. The few lines of
//!   CSS and JS are embedded in the binary (no CDN): it works offline.
//! - Live counts: ONE task per router polls the O(1) `count_snapshot` about once a
//!   second and publishes the newest snapshot to every browser through a `watch`
//!   channel (server-sent events at `/events`), so the store's cost does not grow
//!   with the number of browsers, and it works across processes (SQLite announces
//!   deltas only inside the writing process).
//!
//! ```no_run
//! use std::sync::Arc;
//! use duraq_core::{MemoryStore, Store};
//! use duraq_web::{router, WebOptions};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "my app" }))
//!     .nest("/admin/jobs", router(store, WebOptions::new().mount_path("/admin/jobs")));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

// The guide's Rust blocks compile as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../docs/dashboard.md")]
mod dashboard_guide {}

mod accept;
mod api;
pub mod builtin_args;
mod error;
mod format;
mod host;
mod html;
pub mod job_options;
mod live;
mod metrics;
mod options;
mod pages;
mod scrub;
mod security;
mod series;
mod serve;
mod worker_metrics;
pub mod workflow_file;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use duraq_core::Operate;

pub use accept::ServeLimits;
pub use error::{Result, WebError};
pub use metrics::{metrics_router, render_metrics};
pub use options::WebOptions;
pub use scrub::{mask_secrets, MIN_TOKEN_BYTES};
pub use serve::{check_listen, is_loopback, serve};
pub use worker_metrics::WorkerMetrics;

/// The state every handler shares: one per [`router`] call.
pub(crate) struct AppState {
    /// Reads and operator actions: all the dashboard does with a store.
    pub(crate) store: Arc<dyn Operate>,
    pub(crate) options: WebOptions,
    /// Random per process (per router), embedded in every form, checked on POST.
    pub(crate) csrf: String,
    pub(crate) live: Arc<live::Live>,
}

pub(crate) type State = Arc<AppState>;

/// The dashboard: pages, `/events` (live counts), `/metrics`, embedded assets.
///
/// It takes the part of a store it uses, [`Operate`] (which includes
/// [`duraq_core::Inspect`]): pass an application's `Arc<dyn Store>`, or any
/// store, as it is. It never enqueues, claims or reports.
///
/// Nest it anywhere (`Router::nest("/admin/jobs", …)`) and tell it where with
/// [`WebOptions::mount_path`] so that its links and redirects point back into
/// it. The live-count task starts with the first request (or at once when called
/// inside a Tokio runtime) and stops when the router is dropped.
///
/// # Panics
/// Never for valid options; the CSRF token falls back to a clock-and-address
/// seed only if the operating system has no randomness (see [`WebOptions`]).
pub fn router(store: Arc<dyn Operate>, options: WebOptions) -> Router {
    let csrf = security::random_token();
    let live = live::Live::new(
        store.clone(),
        options.poll_interval,
        options.max_live_streams,
    );
    if tokio::runtime::Handle::try_current().is_ok() {
        live.ensure_started();
    }
    let state: State = Arc::new(AppState {
        store,
        options,
        csrf,
        live,
    });
    Router::new()
        .route("/", get(pages::overview::overview))
        .route("/events", get(live::events))
        .route("/queues", get(pages::overview::queues))
        .route("/queues/{queue}", get(pages::queue::queue))
        .route("/queues/{queue}/pause", post(pages::overview::pause))
        .route("/queues/{queue}/resume", post(pages::overview::resume))
        .route("/jobs", get(pages::jobs::list))
        .route("/jobs/search", get(pages::jobs::search))
        .route("/jobs/bulk", post(pages::bulk::selected))
        .route("/jobs/bulk/confirm", get(pages::bulk::confirm))
        .route("/jobs/bulk/all", post(pages::bulk::all))
        .route("/jobs/{id}", get(pages::job::detail))
        .route("/jobs/{id}/retry", post(pages::job::retry))
        .route("/jobs/{id}/cancel", post(pages::job::cancel))
        .route("/retries", get(pages::views::retries))
        .route("/scheduled", get(pages::views::scheduled))
        .route("/retries/confirm", get(pages::view_bulk::retries_confirm))
        .route(
            "/scheduled/confirm",
            get(pages::view_bulk::scheduled_confirm),
        )
        .route("/retries/all", post(pages::view_bulk::retries_all))
        .route("/scheduled/all", post(pages::view_bulk::scheduled_all))
        .route("/workflows", get(pages::workflows::list))
        .route("/workflows/{id}", get(pages::workflow::detail))
        .route("/workers", get(pages::other::workers))
        .route("/keys", get(pages::other::keys))
        .route("/metrics", get(metrics::dashboard_metrics))
        .route("/assets/app.css", get(html::css))
        .route("/assets/app.js", get(html::js))
        .route("/assets/bulk.js", get(html::bulk_js))
        .route("/assets/views.js", get(html::views_js))
        .nest("/api/v1", api::routes())
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}
