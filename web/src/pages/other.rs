//! `GET /workers` and `GET /keys?key=`.
//!
//! Workers: there is no worker registry yet, so the page shows what the jobs
//! say: the worker ids on `handed_off` jobs and the jobs each one is running
//! (one limited, index-ordered read). Workers that are idle do not appear; the
//! page says so rather than pretending to list every worker.
//!
//! Keys: a schedule-key lookup (`get_scheduled(key, true)`): the current owner
//! and the newest terminal job, with a link to the key's whole history.

use std::collections::BTreeMap;

use axum::extract::{Query, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use duraq_core::{Job, JobFilter, JobStatus, ScheduleKey};
use maud::html;
use serde::Deserialize;

use super::jobs::job_table;
use super::overview::urlencode;
use super::store_error;
use crate::format::visible;
use crate::html::{link, notice, page};
use crate::State;

/// At most this many running jobs are read for the workers page.
const RUNNING_LIMIT: usize = 1_000;

/// `GET /workers`.
pub async fn workers(AxumState(state): AxumState<State>) -> Response {
    let filter = JobFilter {
        status: Some(JobStatus::HandedOff),
        limit: Some(RUNNING_LIMIT),
        ..JobFilter::default()
    };
    let running = match state.store.list_jobs(&filter).await {
        Ok(jobs) => jobs,
        Err(e) => return store_error(&state, "workers", &e),
    };
    let mut by_worker: BTreeMap<String, Vec<Job>> = BTreeMap::new();
    for job in &running {
        let worker = job.worker_id.clone().unwrap_or_else(|| "(unknown)".into());
        by_worker.entry(worker).or_default().push(job.clone());
    }
    let body = html! {
        h1 { "Workers" }
        p.muted { "duraq does not keep a list of workers yet. This page shows the workers \
                   that are running jobs right now, from the jobs themselves; an idle \
                   worker does not appear." }
        @if running.len() == RUNNING_LIMIT {
            (notice("info", &format!("Showing the newest {RUNNING_LIMIT} running jobs only.")))
        }
        @if by_worker.is_empty() { p data-empty { "No job is running." } }
        @for (worker, jobs) in &by_worker {
            section.worker data-worker-id=(worker) {
                h2 { "Worker " code { (visible(worker)) } " · " (jobs.len()) " running" }
                (job_table(&state, jobs))
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
