//! `GET /jobs` (the search form, the filtered list with keyset paging and the
//! bulk controls) and `GET /jobs/search?id=`.
//!
//! The list is one `search_jobs` call with a limit, in the store's index order
//! (newest first); the next page starts strictly after the last job shown
//! (`?after=<id>`, the search kept beside it), so pages stay stable while jobs
//! are added or change status, and deep pages cost what the first one does
//! (no OFFSET). A search on args, error text or finished time reads a bounded
//! number of rows per page; when it stops early the page says so and links
//! to where it goes on (`JobPage::resume`). The search lives in the query string ([`Search`]), so a search
//! is a link. Bad input (a status that is none, args that are not JSON, a time
//! that is no time) is named by its error code above the form, with a 400.
//!
//! When actions are allowed, the table sits in one POST form: a checkbox per
//! row, a select-all box (`assets/bulk.js`), and Retry / Cancel / Delete
//! buttons acting on the checked ids (`POST /jobs/bulk`); with a search set,
//! "apply to all matching" links lead to the confirmation (`pages::bulk`).

use axum::extract::{Query, RawQuery, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use duraq_core::inspect::{resolve_job, BulkAction, JobCursor};
use duraq_core::limits::DEFAULT_SCAN_LIMIT;
use duraq_core::ErrorCode;
use maud::{html, Markup};
use serde::Deserialize;

use super::search::Search;
use super::store_error;
pub use super::table::{job_table, job_table_with, Table};
use crate::format::urlencode;
use crate::format::{thousands, visible};
use crate::html::{csrf_field, link, page};
use crate::{AppState, State};

#[path = "search_form.rs"]
mod search_form;
use search_form::search_form;

/// Default and largest page size.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;

/// A query string as pairs (repeated keys kept).
pub fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default()
}

fn value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// `GET /jobs`.
pub async fn list(AxumState(state): AxumState<State>, RawQuery(raw): RawQuery) -> Response {
    let pairs = pairs(raw.as_deref());
    let search = Search::from_pairs(&pairs);
    let limit_text = value(&pairs, "limit").map(str::to_owned);
    let after = value(&pairs, "after").map(str::to_owned);
    let bad = |code: &str, text: String| {
        let body = html! {
            h1 { "Jobs" }
            (search_form(&state, &search, limit_text.as_deref(), true))
            p.notice.error role="status" data-error=(code) { (visible(&text)) }
        };
        (StatusCode::BAD_REQUEST, page(&state, "jobs", "Jobs", body)).into_response()
    };
    let mut filter = match search.filter() {
        Ok(f) => f,
        Err(e) => {
            let code = e.code().as_str();
            return bad(code, format!("error[{code}]: {e}"));
        }
    };
    let limit = match limit_text.as_deref().map(str::parse::<usize>).transpose() {
        Ok(l) => l.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
        Err(_) => return bad("invalid-limit", "limit must be a whole number".into()),
    };
    filter.limit = Some(limit);
    // Rows read per page: the store's default budget, or fewer when asked.
    let scan = value(&pairs, "scan_limit").and_then(|v| v.parse::<usize>().ok());
    filter.scan_limit = scan.map(|n| n.clamp(1, DEFAULT_SCAN_LIMIT));
    if let Some(after) = &after {
        match state.store.get_job(after).await {
            Ok(Some(job)) => filter.after = Some(JobCursor::after(&job)),
            Ok(None) => {
                return bad(
                    "job-not-found",
                    format!("no job with id {after} to continue after (was it pruned?)"),
                )
            }
            Err(e) => return store_error(&state, "jobs", &e),
        }
    }
    let found = match state.store.search_jobs(&filter).await {
        Ok(page) => page,
        Err(e) => return store_error(&state, "jobs", &e),
    };
    let jobs = found.jobs;
    let here = |after: Option<&str>| {
        let mut q = search.pairs();
        q.push(("limit", limit.to_string()));
        if let Some(n) = filter.scan_limit {
            q.push(("scan_limit", n.to_string()));
        }
        if let Some(a) = after {
            q.push(("after", a.to_string()));
        }
        link(
            &state,
            &format!(
                "/jobs?{}",
                serde_urlencoded::to_string(q).unwrap_or_default()
            ),
        )
    };
    // A scan that stopped early goes on from the last row it read; a full
    // page from its last job.
    let resume = found.resume.as_ref().map(|c| here(Some(&c.id)));
    let next = (resume.is_none() && jobs.len() == limit)
        .then(|| jobs.last().map(|j| here(Some(&j.id))))
        .flatten();
    let table = Table {
        select: !state.options.is_read_only(),
        errors: search.shows_errors(),
    };
    let body = html! {
        h1 { "Jobs" }
        (search_form(&state, &search, limit_text.as_deref(), false))
        @if after.is_some() {
            p.muted { "Continuing after job " code { (visible(after.as_deref().unwrap_or(""))) } ". "
                a href=(here(None)) { "Back to the newest" } }
        }
        @if table.select && search.is_set() { (apply_all(&state, &search)) }
        @if table.select {
            form.bulk data-bulk method="post" action=(link(&state, "/jobs/bulk")) {
                (csrf_field(&state))
                input type="hidden" name="back" value=(search.query());
                div.actions {
                    span.muted data-selected-count { "Selected jobs:" }
                    button type="submit" name="action" value="retry" data-bulk-action="retry" { "Retry" }
                    button.danger type="submit" name="action" value="cancel" data-bulk-action="cancel" { "Cancel" }
                    button.danger type="submit" name="action" value="delete" data-bulk-action="delete"
                        title="Deletes finished jobs; others are skipped" { "Delete" }
                }
                (job_table_with(&state, &jobs, table))
            }
        } @else {
            (job_table_with(&state, &jobs, table))
        }
        @if jobs.is_empty() && resume.is_none() { p.muted { "No jobs match." } }
        @if let Some(resume) = resume {
            p.notice.warning role="status" data-scan-stopped=(found.scanned) {
                "The search stopped after reading " (thousands(found.scanned as i64))
                " jobs without filling the page (args, error text and finished time are \
                 checked row by row). "
                a data-continue href=(resume) { "Continue the search →" }
            }
        }
        @if let Some(next) = next {
            p { a data-next href=(next) rel="next" { "Older jobs →" } }
        }
    };
    page(&state, "jobs", "Jobs", body)
}

/// The "apply to all matching" links, each to its confirmation page.
fn apply_all(state: &AppState, search: &Search) -> Markup {
    let href = |a: BulkAction| {
        link(
            state,
            &format!(
                "/jobs/bulk/confirm?action={}&{}",
                a.as_str(),
                search.query()
            ),
        )
    };
    html! {
        p.actions data-apply-all {
            span.muted { "Every job matching this search:" }
            a href=(href(BulkAction::Retry)) data-apply-all-action="retry" { "Retry all matching…" }
            a href=(href(BulkAction::Cancel)) data-apply-all-action="cancel" { "Cancel all matching…" }
            a href=(href(BulkAction::Delete)) data-apply-all-action="delete" { "Delete all finished matching…" }
        }
    }
}

/// The query of `GET /jobs/search`.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    id: String,
}

/// How many jobs an ambiguous id prefix lists.
const AMBIGUOUS_SHOWN: usize = 20;

/// `GET /jobs/search?id=`: an id or a unique id prefix to the job's page
/// (core's [`resolve_job`]); several matches list them under `ambiguous-id`,
/// none is "not found" (404), text that cannot start an id `invalid-id` (400).
pub async fn search(AxumState(state): AxumState<State>, Query(q): Query<SearchQuery>) -> Response {
    let id = q.id.trim();
    let err = match resolve_job(state.store.as_ref(), id).await {
        Ok(job) => {
            let to = link(&state, &format!("/jobs/{}", urlencode(&job.id)));
            return Redirect::to(&to).into_response();
        }
        Err(e) => e,
    };
    let body = match err.code() {
        ErrorCode::JobNotFound => html! {
            h1 { "Job not found" }
            p data-not-found { "No job has an id that is or starts with " code { (visible(id)) } "." }
        },
        ErrorCode::AmbiguousId => {
            let matches = match state.store.jobs_with_id_prefix(id, AMBIGUOUS_SHOWN).await {
                Ok(jobs) => jobs,
                Err(e) => return store_error(&state, "jobs", &e),
            };
            html! {
                h1 { "Several jobs match" }
                p.notice.error role="status" data-error="ambiguous-id" {
                    "error[ambiguous-id]: several job ids start with " code { (visible(id)) } "; type more of it."
                }
                (job_table(&state, &matches))
                @if matches.len() == AMBIGUOUS_SHOWN {
                    p.muted { "The first " (AMBIGUOUS_SHOWN) " in id order." }
                }
            }
        }
        ErrorCode::InvalidId => html! {
            h1 { "Job not found" }
            p.notice.error role="status" data-error="invalid-id" {
                "error[invalid-id]: " (visible(&err.to_string()))
            }
        },
        _ => return store_error(&state, "jobs", &err),
    };
    let status = match err.code() {
        ErrorCode::JobNotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    };
    (status, page(&state, "jobs", "Not found", body)).into_response()
}
