//! `GET /jobs` (filtered list with keyset paging) and `GET /jobs/search?id=`.
//!
//! The list is one `list_jobs` call with a limit, in the store's index order
//! (newest first); the next page starts strictly after the last job shown
//! (`?after=<id>`), so pages stay stable while jobs are added or change status,
//! and deep pages cost what the first one does (no OFFSET).

use axum::extract::{Query, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use duraq_core::{Job, JobCursor, JobFilter, JobStatus};
use maud::{html, Markup};
use serde::{Deserialize, Serialize};

use super::overview::{label, urlencode};
use super::store_error;
use crate::format::{relative, visible};
use crate::html::{link, notice, page};
use crate::live::now_ms;
use crate::{AppState, State};

/// Default and largest page size.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;

/// The query of `GET /jobs`; every field optional, empty means unset.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ListQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<String>,
}

fn set(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `GET /jobs`.
pub async fn list(AxumState(state): AxumState<State>, Query(q): Query<ListQuery>) -> Response {
    let bad = |text: String| {
        let body = html! { h1 { "Jobs" } (filters(&state, &q)) (notice("error", &text)) };
        (StatusCode::BAD_REQUEST, page(&state, "jobs", "Jobs", body)).into_response()
    };
    // Core's one parser: `running` or `handed_off`, else `invalid-status`,
    // the code `duraq jobs list --status` gives.
    let status = match set(&q.status).map(|s| s.parse::<JobStatus>()).transpose() {
        Ok(s) => s,
        Err(e) => return bad(format!("error[{}]: {e}", e.code().as_str())),
    };
    let limit = match set(&q.limit).map(|l| l.parse::<usize>()).transpose() {
        Ok(l) => l.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
        Err(_) => return bad("limit must be a whole number".into()),
    };
    let mut filter = JobFilter {
        status,
        job_name: set(&q.name),
        queue: set(&q.queue),
        schedule_key: set(&q.key),
        after: None,
        limit: Some(limit),
    };
    if let Some(after) = set(&q.after) {
        match state.store.get_job(&after).await {
            Ok(Some(job)) => filter.after = Some(JobCursor::after(&job)),
            Ok(None) => {
                return bad(format!(
                    "no job with id {after} to continue after (was it pruned?)"
                ))
            }
            Err(e) => return store_error(&state, "jobs", &e),
        }
    }
    let jobs = match state.store.list_jobs(&filter).await {
        Ok(jobs) => jobs,
        Err(e) => return store_error(&state, "jobs", &e),
    };
    let next = (jobs.len() == limit).then(|| {
        let mut next = q.clone();
        next.after = jobs.last().map(|j| j.id.clone());
        next.limit = Some(limit.to_string());
        let query = serde_urlencoded::to_string(&next).unwrap_or_default();
        link(&state, &format!("/jobs?{query}"))
    });
    let body = html! {
        h1 { "Jobs" }
        (filters(&state, &q))
        @if filter.after.is_some() {
            p.muted { "Continuing after job " code { (visible(set(&q.after).as_deref().unwrap_or(""))) } ". "
                a href=(link(&state, "/jobs")) { "Back to the newest" } }
        }
        (job_table(&state, &jobs))
        @if jobs.is_empty() { p.muted { "No jobs match." } }
        @if let Some(next) = next {
            p { a data-next href=(next) rel="next" { "Older jobs →" } }
        }
    };
    page(&state, "jobs", "Jobs", body)
}

fn filters(state: &AppState, q: &ListQuery) -> Markup {
    // `?status=running` selects the same option as `?status=handed_off`.
    let current = set(&q.status).and_then(|s| s.parse::<JobStatus>().ok());
    html! {
        form.filters data-filters method="get" action=(link(state, "/jobs")) {
            label { "Status "
                select name="status" {
                    option value="" { "any" }
                    @for s in JobStatus::ALL {
                        option value=(s.as_str()) selected[current == Some(s)] { (label(s)) }
                    }
                }
            }
            label { "Queue " input name="queue" value=[set(&q.queue)]; }
            label { "Name " input name="name" value=[set(&q.name)]; }
            label { "Schedule key " input name="key" value=[set(&q.key)]; }
            label { "Per page " input name="limit" type="number" min="1" max=(MAX_LIMIT)
                value=(set(&q.limit).unwrap_or_else(|| DEFAULT_LIMIT.to_string())); }
            button type="submit" { "Filter" }
        }
    }
}

/// The jobs table (`table[data-table="jobs"]`, one `tr[data-job-id]` per job).
pub fn job_table(state: &AppState, jobs: &[Job]) -> Markup {
    let now = now_ms();
    html! {
        table data-table="jobs" {
            thead { tr {
                th { "Id" } th { "Name" } th { "Queue" } th { "Status" }
                th.num { "Attempts" } th { "Created" } th { "Due / finished" }
            } }
            tbody {
                @for job in jobs {
                    tr data-job-id=(job.id) data-status=(job.status.as_str()) {
                        td { a.mono href=(link(state, &format!("/jobs/{}", urlencode(&job.id)))) { (visible(&job.id)) } }
                        td { (visible(&job.job_name)) }
                        td { (visible(&job.queue)) }
                        td { span.status.(job.status.as_str()) { (label(job.status)) } }
                        td.num { (job.attempts) "/" (job.max_retries.saturating_add(1)) }
                        td { (relative(job.created_at_ms, now)) }
                        td { (relative(job.terminal_at_ms().unwrap_or(job.scheduled_at_ms), now)) }
                    }
                }
            }
        }
    }
}

/// The query of `GET /jobs/search`.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    id: String,
}

/// `GET /jobs/search?id=`: to the job's page, or a "not found" page.
pub async fn search(AxumState(state): AxumState<State>, Query(q): Query<SearchQuery>) -> Response {
    let id = q.id.trim();
    match state.store.get_job(id).await {
        Ok(Some(job)) => {
            Redirect::to(&link(&state, &format!("/jobs/{}", urlencode(&job.id)))).into_response()
        }
        Ok(None) => {
            let body = html! {
                h1 { "Job not found" }
                p data-not-found { "No job has the id " code { (visible(id)) } "." }
            };
            (
                StatusCode::NOT_FOUND,
                page(&state, "jobs", "Not found", body),
            )
                .into_response()
        }
        Err(e) => store_error(&state, "jobs", &e),
    }
}
