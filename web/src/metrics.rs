//! Prometheus `/metrics`: the store's job gauges, plus a worker's metrics when
//! served by `duraq worker --metrics-listen`.
//!
//! The gauges are read at scrape time from the O(1) count snapshot, so a scrape
//! costs one cheap read whatever the table size, and the numbers are exact for
//! one count revision. The text is OpenMetrics (`prometheus-client`, the
//! Prometheus project's Rust client), which Prometheus scrapes as is.

use std::sync::Arc;

use axum::extract::{Request, State as AxumState};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use duraq_core::{Inspect, JobStatus};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::pages::queue_rows;
use crate::worker_metrics::WorkerMetrics;
use crate::State;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The exposition text: `duraq_jobs{queue,status}` per queue and
/// `duraq_jobs{status}` over all queues, `duraq_jobs_revision`,
/// `duraq_queue_latency_seconds{queue}` for queues with a due job, then
/// `worker`'s series; ends with `# EOF`.
pub async fn render_metrics(
    store: Option<&dyn Inspect>,
    worker: Option<&WorkerMetrics>,
) -> crate::Result<String> {
    let mut out = String::new();
    if let Some(store) = store {
        let (rows, total, revision) = queue_rows(store).await?;
        let mut registry = Registry::default();
        let jobs = Family::<Vec<(&'static str, String)>, Gauge>::default();
        let latency = Family::<Vec<(&'static str, String)>, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        let rev = Gauge::<i64>::default();
        registry.register(
            "duraq_jobs",
            "Jobs per queue and status; without `queue`, over all queues",
            jobs.clone(),
        );
        registry.register(
            "duraq_jobs_revision",
            "The count revision the job gauges are exact for",
            rev.clone(),
        );
        registry.register(
            "duraq_queue_latency_seconds",
            "Age of the queue's oldest due queued job",
            latency.clone(),
        );
        let unhandled = Family::<Vec<(&'static str, String)>, Gauge>::default();
        registry.register(
            "duraq_unhandled_due_jobs",
            "Due jobs that no alive worker handles, per queue and job name \
             (among the oldest 10,000 due jobs)",
            unhandled.clone(),
        );
        rev.set(revision);
        let all = crate::pages::QueueRow {
            queue: None,
            counts: total,
            latency_ms: None,
            paused: false,
            unhandled: Vec::new(),
        };
        for row in rows.iter().chain([&all]) {
            for status in JobStatus::ALL {
                let mut labels = Vec::with_capacity(2);
                if let Some(q) = &row.queue {
                    labels.push(("queue", q.clone()));
                }
                labels.push(("status", status.as_str().to_string()));
                jobs.get_or_create(&labels).set(row.counts.get(status));
            }
            for (name, due) in &row.unhandled {
                let labels = vec![
                    ("queue", row.queue.clone().unwrap_or_default()),
                    ("job_name", name.clone()),
                ];
                unhandled
                    .get_or_create(&labels)
                    .set(i64::try_from(*due).unwrap_or(i64::MAX));
            }
            if let (Some(q), Some(ms)) = (&row.queue, row.latency_ms) {
                latency
                    .get_or_create(&vec![("queue", q.clone())])
                    .set(ms as f64 / 1000.0);
            }
        }
        let _ = prometheus_client::encoding::text::encode_registry(&mut out, &registry);
    }
    if let Some(worker) = worker {
        worker.encode_into(&mut out);
    }
    let _ = prometheus_client::encoding::text::encode_eof(&mut out);
    Ok(out)
}

fn exposition(result: crate::Result<String>) -> Response {
    match result {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::warn!("metrics: {e}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("error[{}]\n", e.code()),
            )
                .into_response()
        }
    }
}

/// `GET /metrics` of the dashboard router.
pub async fn dashboard_metrics(AxumState(state): AxumState<State>) -> Response {
    exposition(render_metrics(Some(state.store.as_ref()), None).await)
}

#[derive(Clone)]
struct MetricsState {
    store: Option<Arc<dyn Inspect>>,
    worker: Option<WorkerMetrics>,
    token: Option<String>,
}

/// A router with only `GET /metrics` (what `duraq worker --metrics-listen`
/// serves): the store's gauges when `store` is given, the worker's series when
/// `worker` is. With `token`, scrapes need `Authorization: Bearer <token>`.
pub fn metrics_router(
    store: Option<Arc<dyn Inspect>>,
    worker: Option<WorkerMetrics>,
    token: Option<String>,
) -> Router {
    let state = MetricsState {
        store,
        worker,
        token: token.filter(|t| !t.is_empty()),
    };
    Router::new()
        .route("/metrics", get(scrape))
        .layer(axum::middleware::from_fn_with_state(state.clone(), bearer))
        .with_state(state)
}

async fn scrape(AxumState(state): AxumState<MetricsState>) -> Response {
    exposition(render_metrics(state.store.as_deref(), state.worker.as_ref()).await)
}

async fn bearer(
    AxumState(state): AxumState<MetricsState>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| crate::security::same_secret(g.trim(), token)) {
            return (StatusCode::UNAUTHORIZED, "a token is required\n").into_response();
        }
    }
    next.run(request).await
}
