//! `GET /` (overview), `GET /queues`, and `POST /queues/{queue}/pause|resume`
//! (a queue's own page is [`super::queue`]).
//!
//! The overview shows the counts per status (`[data-count=STATUS]` holds the
//! plain number, which the page's script replaces from `/events`), the
//! throughput chart of the stored history (`#history`, `?range=1h|24h|7d`, see
//! [`history_chart`]), the workflows per state when there are any
//! (`[data-workflow-tally]`, [`super::workflows::tally_section`]) and the queues
//! table. Everything comes from one O(1) count snapshot, an O(minutes) read of
//! the history and a bounded walk of the workflows.

use axum::extract::{Form, Path, Query, State as AxumState};
use axum::response::{IntoResponse, Redirect, Response};
use duraq_core::inspect::HistoryRange;
use duraq_core::{JobStatus, QueueName};
use maud::{html, Markup};

use super::job::ActionForm;
use super::{queue_rows, store_error, QueueRow};
use crate::format::{duration, thousands, urlencode};
use crate::html::{csrf_field, link, page};
use crate::live::{history_points, now_ms};
use crate::security::check_csrf;
use crate::{AppState, State};

#[path = "history_chart.rs"]
mod history_chart;

/// The overview's query: `?range=1h|24h|7d` (default `1h`).
#[derive(Debug, Default, serde::Deserialize)]
pub struct OverviewQuery {
    range: Option<String>,
}

async fn render(state: &AppState, query: &OverviewQuery) -> Response {
    state_live(state);
    let range = match query.range.as_deref().map(HistoryRange::parse) {
        None => HistoryRange::Hour,
        Some(Ok(range)) => range,
        Some(Err(e)) => return store_error(state, "overview", &e),
    };
    let now = now_ms();
    state.live.sample(now).await;
    let (rows, total, revision) = match queue_rows(state.store.as_ref()).await {
        Ok(r) => r,
        Err(e) => return store_error(state, "overview", &e),
    };
    let points = match history_points(state.store.as_ref(), range, now).await {
        Ok(points) => points,
        Err(e) => return store_error(state, "overview", &e),
    };
    let workflows = match super::workflows::tally_section(state).await {
        Ok(section) => section,
        Err(e) => return store_error(state, "overview", &e),
    };
    let link_for = |r: HistoryRange| link(state, &format!("/?range={}", r.as_str()));
    let body = html! {
        h1 { "Overview" }
        section.counts aria-label="Jobs per status" data-revision=(revision) {
            @for status in JobStatus::ALL {
                a.count href=(link(state, &format!("/jobs?status={status}"))) {
                    span.label { (status.label()) }
                    span.number data-count=(status.as_str()) { (total.get(status)) }
                }
            }
            div.count {
                span.label { "total" }
                span.number data-count="total" { (total.all) }
            }
        }
        (workflows)
        (history_chart::history_section(range, &points, link_for))
        section {
            h2 { "Queues" }
            (queues_table(state, &rows))
        }
    };
    page(state, "overview", "Overview", body)
}

/// `GET /` (`?range=1h|24h|7d` picks the chart's view; another value is
/// `invalid-range`, 400).
pub async fn overview(
    AxumState(state): AxumState<State>,
    Query(query): Query<OverviewQuery>,
) -> Response {
    render(&state, &query).await
}

fn state_live(state: &AppState) {
    state.live.ensure_started();
}

/// `GET /queues`.
pub async fn queues(AxumState(state): AxumState<State>) -> Response {
    let (rows, _, _) = match queue_rows(state.store.as_ref()).await {
        Ok(r) => r,
        Err(e) => return store_error(&state, "queues", &e),
    };
    let body = html! {
        h1 { "Queues" }
        (queues_table(&state, &rows))
        p.muted { "A paused queue keeps its jobs; every worker stops claiming from it \
                   at its next poll, and jobs already running finish." }
    };
    page(&state, "queues", "Queues", body)
}

/// `POST /queues/{queue}/pause`.
pub async fn pause(
    state: AxumState<State>,
    queue: Path<String>,
    form: Form<ActionForm>,
) -> Response {
    set_paused(state, queue, form, true).await
}

/// `POST /queues/{queue}/resume`.
pub async fn resume(
    state: AxumState<State>,
    queue: Path<String>,
    form: Form<ActionForm>,
) -> Response {
    set_paused(state, queue, form, false).await
}

async fn set_paused(
    AxumState(state): AxumState<State>,
    Path(queue): Path<String>,
    Form(form): Form<ActionForm>,
    pause: bool,
) -> Response {
    if let Some(refused) = check_csrf(&state, form.csrf()) {
        return refused;
    }
    let result = match QueueName::new(&queue) {
        Ok(name) if pause => state.store.pause_queue(&name).await,
        Ok(name) => state.store.resume_queue(&name).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => Redirect::to(&link(&state, "/queues")).into_response(),
        Err(e) => store_error(&state, "queues", &e),
    }
}

/// The pause or resume button of one queue (none when read-only).
fn pause_form(state: &AppState, queue: &str, paused: bool) -> Markup {
    let (what, label) = if paused {
        ("resume", "Resume")
    } else {
        ("pause", "Pause")
    };
    let action = link(state, &format!("/queues/{}/{what}", path_segment(queue)));
    html! {
        @if !state.options.is_read_only() {
            form data-action=(what) method="post" action=(action) {
                (csrf_field(state))
                button type="submit" { (label) }
            }
        }
    }
}

/// `value` percent-encoded for one path segment.
fn path_segment(value: &str) -> String {
    urlencode(value).replace('+', "%20")
}

/// What a "no worker for" badge means, in its tooltip after its whole text.
const UNHANDLED: &str = "due jobs of this name wait in this queue, and no alive worker \
    handles them: a typo in the name, a handler that is not registered, or a queue no \
    worker serves.";

/// The queues table. A queue's "no worker for" badges sit beside its name on
/// one line when they fit; otherwise a whole badge goes to the next line, and a
/// badge longer than its cap ends in "…" with its whole text in its tooltip,
/// so a long job name does not make the table scroll on a desktop.
pub(super) fn queues_table(state: &AppState, rows: &[QueueRow]) -> Markup {
    html! {
        @if rows.is_empty() { p.muted data-empty { "No queue holds a job." } }
        div.table { table data-table="queues" {
            thead { tr {
                th { "Queue" } th.num { "Size (queued)" } th.num { "Running" }
                th.num { "Completed" } th.num { "Failed" } th.num { "Latency" }
                th { "State" }
            } }
            tbody {
                @for row in rows {
                    tr data-queue=[row.queue.as_deref()] {
                        td.badges[!row.unhandled.is_empty()] { @match &row.queue {
                            Some(q) => a href=(link(state, &format!("/queues/{}", path_segment(q)))) { (crate::format::visible(q)) },
                            None => em { "all queues" },
                        }
                        @for (name, due) in &row.unhandled {
                            @let text = format!("no worker for {} ({})", crate::format::visible(name), thousands(i64::try_from(*due).unwrap_or(i64::MAX)));
                            " "
                            span.badge data-unhandled=(name) title=(format!("{text}: {UNHANDLED}")) { (text) }
                        } }
                        td.num data-queue-count="queued" { (thousands(row.counts.queued)) }
                        td.num data-queue-count="handed_off" { (thousands(row.counts.handed_off)) }
                        td.num data-queue-count="completed" { (thousands(row.counts.completed)) }
                        td.num data-queue-count="failed" { (thousands(row.counts.failed)) }
                        td.num { @match row.latency_ms {
                            Some(ms) => (duration(ms)),
                            None => span.muted { "—" },
                        } }
                        td data-paused=(row.paused) {
                            @if row.paused { strong { "paused" } } @else { span.muted { "running" } }
                            @if let Some(q) = &row.queue { (pause_form(state, q, row.paused)) }
                        }
                    }
                }
            }
        } }
    }
}
