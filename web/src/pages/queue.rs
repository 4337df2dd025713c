//! `GET /queues/{queue}`: one queue. Its counts (the queues table's row),
//! links to its jobs, and its fairness keys with their queued jobs
//! (`Inspect::fairness_keys`: at most 100 keys, each counted up to 10,000, one
//! index range per key), so an operator sees at once which tenant floods it.

use axum::extract::{Path, State as AxumState};
use axum::response::Response;
use duraq_core::inspect::KeyBacklog;
use duraq_core::QueueName;
use maud::{html, Markup};

use super::overview::queues_table;
use super::{queue_rows, store_error};
use crate::format::{thousands, urlencode, visible};
use crate::html::{link, page};
use crate::{AppState, State};

/// `GET /queues/{queue}` (a name that is no queue name is `invalid-queue`, 400).
pub async fn queue(AxumState(state): AxumState<State>, Path(queue): Path<String>) -> Response {
    let name = match QueueName::new(&queue) {
        Ok(name) => name,
        Err(e) => return store_error(&state, "queues", &e),
    };
    let (rows, _, _) = match queue_rows(state.store.as_ref()).await {
        Ok(r) => r,
        Err(e) => return store_error(&state, "queues", &e),
    };
    let keys = match state.store.fairness_keys(name.as_str()).await {
        Ok(keys) => keys,
        Err(e) => return store_error(&state, "queues", &e),
    };
    let rows: Vec<_> = (rows.into_iter())
        .filter(|r| r.queue.as_deref() == Some(name.as_str()))
        .collect();
    let q = urlencode(name.as_str());
    let body = html! {
        h1 { "Queue " code { (visible(name.as_str())) } }
        (queues_table(&state, &rows))
        p {
            a href=(link(&state, &format!("/jobs?queue={q}"))) { "Its jobs" } " · "
            a href=(link(&state, &format!("/jobs?queue={q}&status=queued"))) { "queued" } " · "
            a href=(link(&state, &format!("/jobs?queue={q}&status=failed"))) { "failed" }
        }
        section data-fairness-keys {
            h2 { "Fairness keys" }
            (keys_table(&state, name.as_str(), &keys))
        }
    };
    page(
        &state,
        "queues",
        &format!("Queue {}", visible(name.as_str())),
        body,
    )
}

/// The keys table (`table[data-table="keys"]`, one `tr[data-key]` per key).
fn keys_table(state: &AppState, queue: &str, keys: &[KeyBacklog]) -> Markup {
    html! {
        @if keys.is_empty() {
            p.muted data-empty { "No queued job of this queue has a fairness key." }
        } @else {
            p.muted { "Due jobs of different keys are claimed in turn: a key's backlog \
                       never makes another key's jobs wait behind all of it." }
            div.table { table data-table="keys" {
                thead { tr { th { "Key" } th.num { "Queued" } } }
                tbody {
                    @for k in keys {
                        @let href = format!("/jobs?queue={}&fairness={}&status=queued", urlencode(queue), urlencode(&k.key));
                        tr data-key=(k.key) {
                            td { a href=(link(state, &href)) { (visible(&k.key)) } }
                            td.num data-queued=(k.queued) {
                                (thousands(i64::try_from(k.queued).unwrap_or(i64::MAX)))
                                @if k.more { "+" }
                            }
                        }
                    }
                }
            } }
            @if keys.len() == duraq_core::inspect::MAX_KEYS_LISTED {
                p.muted { "The first " (keys.len()) " keys by name." }
            }
        }
    }
}
