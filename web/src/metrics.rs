//! Prometheus `/metrics`: the store's job gauges, plus a worker's metrics when
//! served by `duraq worker --metrics-listen`.
//!
//! The gauges are read at scrape time from the O(1) count snapshot, so a scrape
//! costs one cheap read whatever the table size, and the numbers are exact for
//! one count revision. The text is OpenMetrics (`prometheus-client`, the
//! Prometheus project's Rust client) for a scraper that asks for it, as
//! Prometheus does, else the classic text format 0.0.4 (what `curl` gets), which
//! passes `promtool check metrics` (`web/tests/promtool.rs`): promtool reads
//! only the classic format, where a counter's metadata carries the `_total` name.
//!
//! The conventions the names keep (`docs/dashboard.md` lists them):
//! - One aggregation level per name, so a `sum()` never counts twice: the jobs
//!   over all queues are `duraq_jobs{status}`, per queue `duraq_queue_jobs{queue,status}`.
//! - Every queue the snapshot knows has each `duraq_queue_*` series, at 0 when
//!   there is nothing to count, so a queue's series never vanish and come back.
//! - Series come in label order (`Sorted`), the same from one scrape to the next
//!   (prometheus-client's `Family` is a `HashMap`, whose order is not).
//! - Label values are escaped (`\\`, `"`, newline) in both formats: queue and
//!   job names are anyone's text ([`crate::series::LabelValue`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use axum::extract::{Request, State as AxumState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use duraq_core::inspect::OutcomeTotals;
use duraq_core::{Inspect, JobStatus};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::pages::queue_rows;
use crate::series::{Label, Sorted};
use crate::worker_metrics::WorkerMetrics;
use crate::State;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

type IntGauges<const N: usize> = Sorted<[Label; N], Gauge>;
type FloatGauges<const N: usize> = Sorted<[Label; N], Gauge<f64, AtomicU64>>;

/// The exposition text, in this order: `duraq_build_info{version}`; when
/// `store` is given, its gauges: `duraq_jobs{status}` over all queues,
/// `duraq_queue_jobs{queue,status}`, `duraq_jobs_revision`,
/// `duraq_queue_latency_seconds{queue}` and `duraq_queue_unhandled_due_jobs{queue}`
/// for every queue the snapshot knows (0 when there is none),
/// `duraq_queue_job_outcomes_total{queue,outcome}` (the stored monotonic
/// totals, `docs/history.md`, so they survive restarts),
/// `duraq_unhandled_due_jobs{queue,job_name}` for the job names that have such
/// jobs; then `worker`'s series. Each family's series are in label order; the
/// text ends with `# EOF`.
pub async fn render_metrics(
    store: Option<&dyn Inspect>,
    worker: Option<&WorkerMetrics>,
) -> crate::Result<String> {
    let mut registry = Registry::default();
    let build = IntGauges::<1>::default();
    build.with([("version", env!("CARGO_PKG_VERSION").into())], |g| {
        g.set(1)
    });
    registry.register(
        "duraq_build_info",
        "The duraq version serving these metrics (always 1)",
        build,
    );
    if let Some(store) = store {
        let (rows, total, revision) = queue_rows(store).await?;
        let jobs = IntGauges::<1>::default();
        let queue_jobs = IntGauges::<2>::default();
        let latency = FloatGauges::<1>::default();
        let queue_unhandled = IntGauges::<1>::default();
        let unhandled = IntGauges::<2>::default();
        let rev = Gauge::<i64>::default();
        rev.set(revision);
        for status in JobStatus::ALL {
            let labels = [("status", status.as_str().into())];
            jobs.with(labels, |g| g.set(total.get(status)));
        }
        for row in &rows {
            let Some(queue) = &row.queue else { continue };
            let q = || ("queue", queue.as_str().into());
            for status in JobStatus::ALL {
                let labels = [q(), ("status", status.as_str().into())];
                queue_jobs.with(labels, |g| g.set(row.counts.get(status)));
            }
            let seconds = row.latency_ms.unwrap_or(0).max(0) as f64 / 1000.0;
            latency.with([q()], |g| g.set(seconds));
            let mut due_in_queue = 0_i64;
            for (name, due) in &row.unhandled {
                let due = i64::try_from(*due).unwrap_or(i64::MAX);
                due_in_queue = due_in_queue.saturating_add(due);
                unhandled.with([q(), ("job_name", name.as_str().into())], |g| g.set(due));
            }
            queue_unhandled.with([q()], |g| g.set(due_in_queue));
        }
        registry.register(
            "duraq_jobs",
            "Jobs per status, over all queues (per queue: duraq_queue_jobs)",
            jobs,
        );
        registry.register("duraq_queue_jobs", "Jobs per queue and status", queue_jobs);
        registry.register(
            "duraq_jobs_revision",
            "The count revision the job gauges are exact for",
            rev,
        );
        registry.register(
            "duraq_queue_latency_seconds",
            "Age of the queue's oldest due queued job (0 when none is due)",
            latency,
        );
        registry.register(
            "duraq_queue_unhandled_due_jobs",
            "Due jobs of the queue that no alive worker handles \
             (among the oldest 10,000 due jobs)",
            queue_unhandled,
        );
        registry.register(
            "duraq_queue_job_outcomes",
            "Jobs of the queue that ever entered each outcome (enqueued, completed, failed, \
             retried, cancelled, orphaned), from the stored totals: survive restarts, \
             never lowered by prune",
            outcome_counters(store, &rows).await?,
        );
        registry.register(
            "duraq_unhandled_due_jobs",
            "Due jobs that no alive worker handles, per queue and job name \
             (among the oldest 10,000 due jobs; only job names that have some)",
            unhandled,
        );
    }
    let mut out = String::new();
    let _ = prometheus_client::encoding::text::encode_registry(&mut out, &registry);
    if let Some(worker) = worker {
        worker.encode_into(&mut out);
    }
    let _ = prometheus_client::encoding::text::encode_eof(&mut out);
    Ok(out)
}

/// `duraq_queue_job_outcomes_total{queue,outcome}`: every queue with stored
/// totals or in the snapshot (`rows`), each of the six outcomes, 0 when none.
async fn outcome_counters(
    store: &dyn Inspect,
    rows: &[crate::pages::QueueRow],
) -> crate::Result<Sorted<[Label; 2], Counter>> {
    let mut queues: BTreeMap<String, OutcomeTotals> = store
        .outcome_totals()
        .await?
        .into_iter()
        .map(|q| (q.queue, q.totals))
        .collect();
    for row in rows {
        if let Some(queue) = &row.queue {
            queues.entry(queue.clone()).or_default();
        }
    }
    let family = Sorted::<[Label; 2], Counter>::default();
    for (queue, totals) in &queues {
        for (outcome, n) in OutcomeTotals::NAMES.iter().zip(totals.as_array()) {
            let labels = [
                ("queue", queue.as_str().into()),
                ("outcome", (*outcome).into()),
            ];
            family.with(labels, |c| c.inc_by(u64::try_from(n).unwrap_or(0)));
        }
    }
    Ok(family)
}

/// The response to a scrape: OpenMetrics when the scraper's `Accept` names it
/// (Prometheus does), else the classic text format 0.0.4, which `curl` gets and
/// `promtool check metrics` reads (as the Go client answers too).
fn exposition(headers: &HeaderMap, result: crate::Result<String>) -> Response {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    match result {
        Ok(text) if openmetrics => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Ok(text) => ([(header::CONTENT_TYPE, CLASSIC)], classic_text(&text)).into_response(),
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

/// The classic text format 0.0.4 of an OpenMetrics text: the same samples, a
/// counter's `# HELP` and `# TYPE` named after its `_total` samples, `unknown`
/// written `untyped`, and no `# UNIT` or `# EOF` lines.
fn classic_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?.split_once(' ')?)));
        match meta {
            Some((prefix, (name, rest))) if counters.contains(name) => {
                out.push_str(&format!("{prefix}{name}_total {rest}"));
            }
            Some(("# TYPE ", (name, "unknown"))) => {
                out.push_str(&format!("# TYPE {name} untyped"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// `GET /metrics` of the dashboard router.
pub async fn dashboard_metrics(AxumState(state): AxumState<State>, headers: HeaderMap) -> Response {
    exposition(
        &headers,
        render_metrics(Some(state.store.as_ref()), None).await,
    )
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

async fn scrape(AxumState(state): AxumState<MetricsState>, headers: HeaderMap) -> Response {
    exposition(
        &headers,
        render_metrics(state.store.as_deref(), state.worker.as_ref()).await,
    )
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
