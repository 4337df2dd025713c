//! `GET /workers` and `GET /keys?key=`.
//!
//! Workers: the registered worker processes (`Inspect::list_workers`: two
//! reads, the worker rows and the handed-off jobs), each alive or stale by the
//! default stale timeout, with what it handles and the jobs it is running, and
//! a notice naming due jobs that no alive worker handles.
//!
//! Keys: a schedule-key lookup (`get_scheduled(key, true)`): the current owner
//! and the newest terminal job, with a link to the key's whole history.

use axum::extract::{Query, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use duraq_core::inspect::WorkerState;
use duraq_core::ScheduleKey;
use maud::html;
use serde::Deserialize;

use super::jobs::job_table;
use super::store_error;
use super::table::id_cell;
use crate::format::urlencode;
use crate::format::{duration, relative, thousands, utc, visible};
use crate::html::{link, notice, page};
use crate::live::now_ms;
use crate::State;

/// `GET /workers`.
pub async fn workers(AxumState(state): AxumState<State>) -> Response {
    let stale_after = super::stale_after_ms();
    let workers = match state.store.list_workers(stale_after).await {
        Ok(workers) => workers,
        Err(e) => return store_error(&state, "workers", &e),
    };
    let unhandled = match state.store.unhandled_jobs(stale_after).await {
        Ok(groups) => groups,
        Err(e) => return store_error(&state, "workers", &e),
    };
    let now = now_ms();
    let body = html! {
        h1 { "Workers" }
        p.muted { "Every worker process records itself when it starts and removes itself \
                   when it stops gracefully. A worker is stale when its last heartbeat is \
                   older than " (duration(stale_after)) ": it is gone or stuck, and its \
                   running jobs go back to the queue at the next recovery." }
        @if !unhandled.is_empty() {
            div.notice.warning role="status" data-unhandled-notice {
                "Due jobs that no alive worker handles (a typo in the name, a handler that \
                 is not registered, or a queue no worker serves):"
                ul {
                    @for g in &unhandled {
                        li data-unhandled=(g.job_name) data-queue=(g.queue) {
                            code { (visible(&g.job_name)) } " in queue "
                            a href=(link(&state, &format!("/jobs?status=queued&queue={}&name={}", urlencode(&g.queue), urlencode(&g.job_name)))) {
                                (visible(&g.queue))
                            }
                            " · " (thousands(i64::try_from(g.due).unwrap_or(i64::MAX))) " due"
                        }
                    }
                }
            }
        }
        @if workers.is_empty() { p data-empty { "No worker is registered." } }
        @for w in &workers {
            section.worker data-worker-id=(w.info.worker_id) data-state=(w.state.as_str()) {
                h2 {
                    "Worker " code { (visible(&w.info.worker_id)) } " "
                    @if w.state == WorkerState::Alive { span.muted { "alive" } } @else { span.badge { "stale" } }
                    " · " (w.running.len()) " running"
                }
                dl.fields {
                    dt { "Host" } dd data-field="host" { (visible(&w.info.host)) }
                    dt { "Process id" } dd data-field="pid" { (w.info.pid) }
                    dt { "Queues" } dd data-field="queues" { @match &w.info.queues {
                        Some(queues) => (visible(&queues.join(", "))),
                        None => em { "every queue" },
                    } }
                    dt { "Job names" } dd data-field="jobNames" { (visible(&w.info.job_names.join(", "))) }
                    dt { "Slots" } dd data-field="slots" { (w.info.slots) }
                    dt { "Started" } dd data-field="startedAt" { (utc(w.started_at_ms)) " (" (relative(w.started_at_ms, now)) ")" }
                    dt { "Last heartbeat" } dd data-field="lastHeartbeat" { (relative(w.last_heartbeat_ms, now)) }
                }
                @if !w.running.is_empty() {
                    div.table { table data-table="running" {
                        thead { tr { th { "Job" } th { "Name" } } }
                        tbody {
                            @for r in &w.running {
                                tr data-job-id=(r.id) {
                                    (id_cell(&state, &r.id))
                                    td { (visible(&r.job_name)) }
                                }
                            }
                        }
                    } }
                }
            }
        }
    };
    page(&state, "workers", "Workers", body)
}

/// The query of `GET /keys`.
#[derive(Debug, Default, Deserialize)]
pub struct KeyQuery {
    #[serde(default)]
    key: Option<String>,
}

/// `GET /keys?key=`.
pub async fn keys(AxumState(state): AxumState<State>, Query(q): Query<KeyQuery>) -> Response {
    let raw = q.key.unwrap_or_default();
    let form = html! {
        form data-key-search method="get" action=(link(&state, "/keys")) {
            label { "Schedule key " input name="key" value=(raw) placeholder="event:42:reminder" required; }
            button type="submit" { "Look up" }
        }
    };
    if raw.is_empty() {
        let body = html! {
            h1 { "Schedule keys" }
            p { "A schedule key names at most one queued or running job, its owner. \
                 Look one up to see its owner and its newest finished job." }
            (form)
        };
        return page(&state, "keys", "Schedule keys", body);
    }
    let key = match ScheduleKey::new(raw.clone()) {
        Ok(k) => k,
        Err(e) => {
            let body = html! { h1 { "Schedule keys" } (form) (notice("error", &format!("error[{}]: {e}", e.code().as_str()))) };
            return (
                StatusCode::BAD_REQUEST,
                page(&state, "keys", "Schedule keys", body),
            )
                .into_response();
        }
    };
    let found = match state.store.get_scheduled(&key, true).await {
        Ok(found) => found,
        Err(e) => return store_error(&state, "keys", &e),
    };
    let history = link(&state, &format!("/jobs?key={}", urlencode(&raw)));
    let body = html! {
        h1 { "Schedule key " code { (visible(&raw)) } }
        (form)
        section data-owner {
            h2 { "Current owner" }
            @match &found.current_job {
                Some(job) => (job_table(&state, std::slice::from_ref(job))),
                None => p.muted { "No queued or running job holds this key." },
            }
        }
        section data-latest-terminal {
            h2 { "Latest finished job" }
            @match &found.latest_terminal_job {
                Some(job) => (job_table(&state, std::slice::from_ref(job))),
                None => p.muted { "No job of this key has finished." },
            }
        }
        p { a href=(history) { "Every job of this key" } }
    };
    page(&state, "keys", "Schedule keys", body)
}
