//! Bulk actions: `POST /jobs/bulk` (the jobs checked on a page),
//! `GET /jobs/bulk/confirm` (how many jobs a search matches now, a few of
//! them, and a button) and `POST /jobs/bulk/all` (the action on every job the
//! search matches).
//!
//! Both POSTs carry the CSRF token like every other action and are refused in
//! read-only mode by the guard; both run core's [`run_bulk`] in its default
//! batches (one transaction each), and answer with the page of its report:
//! matched, changed and skipped (`[data-bulk-result]`). The confirmation counts
//! N with a dry run of the same request; the POST re-selects by the search, so
//! a confirmation gone stale (jobs came or went since) acts on what matches
//! then and says both numbers. A row's own "Run now" button (`run=<id>`) is
//! a run-now of that job alone, and a form from the retries or scheduled view
//! (`view=`, its query in `back`) leads back there, a job page's button back
//! to the job. Delete applies to finished jobs only: with no
//! status in the search, "delete all matching" walks the terminal statuses;
//! any other job is skipped by the store and counted as such. An action
//! stopped by a store error says how far it got (`[data-bulk-progress]`): the
//! batches before the error stay done, and running it again is safe.

use axum::extract::{RawQuery, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use duraq_core::inspect::{run_bulk, BulkAction, BulkReport, BulkRequest, BulkSelection};
use duraq_core::JobStatus;
use maud::{html, Markup};

use super::jobs::pairs;
use super::search::Search;
use super::{store_error, store_error_and};
use crate::format::urlencode;
use crate::format::{thousands, visible};
use crate::html::{csrf_field, link, page};
use crate::security::check_csrf;
use crate::{AppState, State};

fn value<'a>(pairs: &'a [(String, String)], key: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.trim())
}

fn action_of(text: &str) -> Option<BulkAction> {
    BulkAction::parse(text)
}

/// The refusal of an unknown action.
const ACTIONS: &str = "the action must be retry, cancel, delete or run-now";

/// A refused request: the code in `data-error`, a 400, the page frame.
fn refused(state: &AppState, code: &str, text: &str) -> Response {
    let body = html! {
        h1 { "Bulk action" }
        p.notice.error role="status" data-error=(code) { "error[" (code) "]: " (text) }
        p { a href=(link(state, "/jobs")) { "Back to the jobs" } }
    };
    (
        StatusCode::BAD_REQUEST,
        page(state, "bulk", "Bulk action", body),
    )
        .into_response()
}

fn imperative(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Retry => "Retry",
        BulkAction::Cancel => "Cancel",
        BulkAction::Delete => "Delete",
        BulkAction::RunNow => "Run",
    }
}

fn past(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Retry => "Retried",
        BulkAction::Cancel => "Cancelled",
        BulkAction::Delete => "Deleted",
        BulkAction::RunNow => "Made due now",
    }
}

/// Why a job is skipped, for people.
fn skip_reason(action: BulkAction) -> &'static str {
    match action {
        BulkAction::RunNow => "already due, running or finished",
        _ => "their status forbids it",
    }
}

/// The selection of every job `search` matches, for `action` (see the module
/// doc for delete).
fn matching(search: &Search, action: BulkAction) -> Result<BulkSelection, duraq_core::Error> {
    let mut filter = search.filter()?;
    if action == BulkAction::Delete && filter.statuses.is_empty() {
        filter.statuses = JobStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
    }
    Ok(BulkSelection::Matching(filter))
}

/// `POST /jobs/bulk`: `action` on the checked `id`s.
pub async fn selected(AxumState(state): AxumState<State>, body: String) -> Response {
    let form = pairs(Some(&body));
    if let Some(denied) = check_csrf(&state, value(&form, "csrf")) {
        return denied;
    }
    // A row's own "Run now" button names its job alone (`run=<id>`).
    let run = value(&form, "run");
    let action = match run {
        "" => action_of(value(&form, "action")),
        _ => Some(BulkAction::RunNow),
    };
    let Some(action) = action else {
        return refused(&state, "invalid-bulk-action", ACTIONS);
    };
    let ids: Vec<String> = match run {
        "" => form
            .iter()
            .filter(|(k, v)| k == "id" && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_string())
            .collect(),
        id => vec![id.to_owned()],
    };
    if ids.is_empty() {
        return refused(&state, "no-jobs-selected", "select at least one job first");
    }
    let back = match (super::view_kind::View::parse(value(&form, "view")), run) {
        (Some(view), _) => view.link(&state, value(&form, "back")),
        (None, "") => jobs_link(&state, value(&form, "back")),
        (None, id) => link(&state, &format!("/jobs/{}", urlencode(id))),
    };
    let req = BulkRequest::new(action, BulkSelection::Ids(ids));
    match act(&state, &req).await {
        Ok(report) => result(&state, action, &report, None, &back),
        Err(stopped) => stopped,
    }
}

/// The action, search and selection of an "all matching" request (the
/// confirmation and the real run read the same fields), or the page refusing it.
fn all_matching(
    state: &AppState,
    fields: &[(String, String)],
) -> Result<(BulkAction, Search, BulkSelection), Box<Response>> {
    let Some(action) = action_of(value(fields, "action")) else {
        return Err(Box::new(refused(state, "invalid-bulk-action", ACTIONS)));
    };
    let search = Search::from_pairs(fields);
    if !search.is_set() {
        return Err(Box::new(refused(
            state,
            "search-required",
            "an action on all matching jobs needs a search",
        )));
    }
    let selection = matching(&search, action)
        .map_err(|e| Box::new(refused(state, e.code().as_str(), &e.to_string())))?;
    Ok((action, search, selection))
}

/// `GET /jobs/bulk/confirm?action=&<search>`: a dry run naming N.
pub async fn confirm(AxumState(state): AxumState<State>, RawQuery(raw): RawQuery) -> Response {
    let query = pairs(raw.as_deref());
    let (action, search, selection) = match all_matching(&state, &query) {
        Ok(parts) => parts,
        Err(refusal) => return *refusal,
    };
    let mut req = BulkRequest::new(action, selection);
    req.dry_run = true;
    let report = match run_bulk(state.store.as_ref(), &req, &mut |_| {}).await {
        Ok(r) => r,
        Err(e) => return store_error(&state, "bulk", &e),
    };
    let verb = action.as_str();
    let back = link(&state, &format!("/jobs?{}", search.query()));
    let body = html! {
        h1 { "Confirm: " (verb) " every matching job" }
        section.confirm data-confirm data-action=(verb) data-matched=(report.matched) {
            p { "The search matches "
                strong data-confirm-count { (thousands(report.matched as i64)) } " jobs now:" }
            ul data-search-terms {
                @for (k, v) in search.pairs() { li { (k.replace('_', " ")) " " code { (visible(&v)) } } }
                @if action == BulkAction::Delete && search.statuses.is_empty() {
                    li { "status " code { "completed, failed, cancelled, orphaned" } " (delete takes finished jobs only)" }
                }
            }
            p { (thousands(report.changed as i64)) " of them would be " (past(action).to_lowercase())
                "; " span data-would-skip=(report.skipped) { (thousands(report.skipped as i64)) } " would be skipped (" (skip_reason(action)) ")." }
            @if !report.sample.is_empty() {
                p.muted { "Among them:" }
                ul data-sample {
                    @for id in &report.sample {
                        li { a.mono href=(link(&state, &format!("/jobs/{}", urlencode(id)))) { (visible(id)) } }
                    }
                }
            }
            @if state.options.is_read_only() {
                p.notice.error { "This dashboard is read-only." }
            } @else if report.matched > 0 {
                form data-action=(format!("bulk-{verb}")) method="post" action=(link(&state, "/jobs/bulk/all")) {
                    (csrf_field(&state))
                    input type="hidden" name="action" value=(verb);
                    input type="hidden" name="expected" value=(report.matched);
                    @for (k, v) in search.pairs() { input type="hidden" name=(k) value=(v); }
                    button.danger type="submit" data-confirm-button {
                        (imperative(action)) " all " (thousands(report.matched as i64)) " matching jobs"
                    }
                }
            }
            p { a href=(back) data-cancel-confirm { "Back to the search, changing nothing" } }
        }
    };
    page(&state, "bulk", "Confirm", body)
}

/// `POST /jobs/bulk/all`: `action` on every job the search matches now.
pub async fn all(AxumState(state): AxumState<State>, body: String) -> Response {
    let form = pairs(Some(&body));
    if let Some(denied) = check_csrf(&state, value(&form, "csrf")) {
        return denied;
    }
    let (action, search, selection) = match all_matching(&state, &form) {
        Ok(parts) => parts,
        Err(refusal) => return *refusal,
    };
    let expected = value(&form, "expected").parse::<u64>().ok();
    let req = BulkRequest::new(action, selection);
    match act(&state, &req).await {
        Ok(report) => {
            let back = jobs_link(&state, &search.query());
            result(&state, action, &report, expected, &back)
        }
        Err(stopped) => stopped,
    }
}

/// Runs `req`; a store error answers with its page, which also says how far
/// the action got when some batches were committed before it.
pub(super) async fn act(state: &AppState, req: &BulkRequest) -> Result<BulkReport, Response> {
    let mut done = BulkReport::default();
    let outcome = run_bulk(state.store.as_ref(), req, &mut |r| done.clone_from(r)).await;
    let err = match outcome {
        Ok(report) => return Ok(report),
        Err(err) => err,
    };
    if done.batches == 0 {
        return Err(store_error(state, "bulk", &err));
    }
    let progress = html! {
        p data-bulk-progress data-matched=(done.matched) data-changed=(done.changed)
            data-skipped=(done.skipped) data-batches=(done.batches) {
            "Before it stopped: " (thousands(done.matched as i64)) " matched, "
            (thousands(done.changed as i64)) " changed, "
            (thousands(done.skipped as i64)) " skipped, in "
            (thousands(done.batches as i64)) " committed batches. "
            "Running the action again is safe: what is done is skipped."
        }
    };
    Err(store_error_and(state, "bulk", &err, progress))
}

/// The jobs list of the search `query` (the list itself when empty).
fn jobs_link(state: &AppState, query: &str) -> String {
    match query {
        "" => link(state, "/jobs"),
        q => link(state, &format!("/jobs?{q}")),
    }
}

/// The report page (`section[data-bulk-result]`), its back link to `back`.
pub(super) fn result(
    state: &AppState,
    action: BulkAction,
    report: &BulkReport,
    expected: Option<u64>,
    back: &str,
) -> Response {
    let n = |v: u64| thousands(i64::try_from(v).unwrap_or(i64::MAX));
    let body: Markup = html! {
        h1 { (past(action)) " jobs" }
        section data-bulk-result data-action=(action.as_str()) {
            dl.fields {
                dt { "Matched" } dd data-matched=(report.matched) { (n(report.matched)) }
                dt { "Changed" } dd data-changed=(report.changed) { (n(report.changed)) }
                dt { "Skipped" } dd data-skipped=(report.skipped) { (n(report.skipped))
                    span.muted { " (" (skip_reason(action)) ", or they were gone)" } }
                dt { "Transactions" } dd data-batches=(report.batches) { (n(report.batches)) }
            }
            @if let Some(expected) = expected.filter(|e| *e != report.matched) {
                p.notice.warning role="status" data-stale {
                    "The confirmation named " (n(expected)) " jobs; the search matched "
                    (n(report.matched)) " when it ran, and those are the jobs acted on."
                }
            }
        }
        p { a href=(back) data-back { "Back" } }
    };
    page(state, "bulk", "Bulk action", body)
}
