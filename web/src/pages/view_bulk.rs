//! "Run all now" and "Cancel all" on the retries and scheduled views:
//! `GET /{view}/confirm?action=run-now|cancel&<view query>` counts the jobs
//! the view holds now and lists a few, and its button,
//! `POST /{view}/all`, acts on every one of them.
//!
//! Why not the jobs page's "all matching" (`pages::bulk`): that one selects
//! by a search, and no search tells a retry from a job due later (both are
//! queued; only the attempts differ), so "every queued job" would also run
//! the other view's jobs. Here the POST reads the view again, with the same
//! narrowing and window (`pages::view_scan`), and hands the ids it finds to
//! core's `run_bulk` in its default batches, one transaction each. Jobs that
//! came or went since the confirmation are counted as the jobs page counts
//! them (`[data-stale]`), a job already due or finished is skipped, and the
//! answer is the same report page (`pages::bulk::result`). Both requests are
//! refused in read-only mode and the POST without the form token, by the
//! guard and [`check_csrf`] as every action is.

use axum::extract::{RawQuery, State as AxumState};
use axum::response::Response;
use duraq_core::inspect::{BulkAction, BulkRequest, BulkSelection};
use maud::html;

use super::bulk::{act, result};
use super::jobs::pairs;
use super::store_error;
use super::view_kind::View;
use super::view_query::{Refusal, ViewQuery};
use super::view_scan::{read, WINDOW};
use super::views::{count_text, refused};
use crate::format::{thousands, urlencode, visible};
use crate::html::{csrf_field, link, page};
use crate::live::now_ms;
use crate::security::check_csrf;
use crate::{AppState, State};

/// How many ids the confirmation lists.
const SAMPLE: usize = 5;

/// Keys of the confirmation's query and of the POST besides the view's.
const EXTRA: [&str; 3] = ["action", "csrf", "expected"];

/// The action and the view query of `fields`, or the page refusing them.
fn parse(
    state: &AppState,
    view: View,
    fields: &[(String, String)],
) -> Result<(BulkAction, ViewQuery), Box<Response>> {
    let action = fields
        .iter()
        .find(|(k, _)| k == "action")
        .and_then(|(_, v)| BulkAction::parse(v.trim()))
        .filter(|a| matches!(a, BulkAction::RunNow | BulkAction::Cancel));
    let Some(action) = action else {
        let refusal = Refusal {
            code: "invalid-bulk-action",
            text: "the action must be run-now or cancel".to_owned(),
        };
        return Err(Box::new(refused(state, view, &refusal)));
    };
    let query =
        ViewQuery::parse(view, fields, &EXTRA).map_err(|r| Box::new(refused(state, view, &r)))?;
    Ok((action, query))
}

fn verb(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Cancel => "Cancel",
        _ => "Run now",
    }
}

/// `GET /retries/confirm`.
pub async fn retries_confirm(state: AxumState<State>, raw: RawQuery) -> Response {
    confirm(state, raw, View::Retries).await
}

/// `GET /scheduled/confirm`.
pub async fn scheduled_confirm(state: AxumState<State>, raw: RawQuery) -> Response {
    confirm(state, raw, View::Scheduled).await
}

/// `POST /retries/all`.
pub async fn retries_all(state: AxumState<State>, body: String) -> Response {
    all(state, body, View::Retries).await
}

/// `POST /scheduled/all`.
pub async fn scheduled_all(state: AxumState<State>, body: String) -> Response {
    all(state, body, View::Scheduled).await
}

async fn confirm(
    AxumState(state): AxumState<State>,
    RawQuery(raw): RawQuery,
    view: View,
) -> Response {
    let (action, query) = match parse(&state, view, &pairs(raw.as_deref())) {
        Ok(parts) => parts,
        Err(refusal) => return *refusal,
    };
    let now = now_ms();
    let window = match read(&state, view, &query, now).await {
        Ok(window) => window,
        Err(e) => return store_error(&state, view.name(), &e),
    };
    let n = window.jobs.len();
    let changes = window
        .jobs
        .iter()
        .filter(|j| action.changes(j, now))
        .count();
    let back = view.link(&state, &query.query(None));
    let body = html! {
        h1 { "Confirm: " (verb(action).to_lowercase()) " every job of " (view.title()) }
        section.confirm data-confirm data-action=(action.as_str()) data-matched=(n) {
            p { (view.title()) " holds " strong data-confirm-count { (count_text(&window)) } " jobs now"
                @if query.narrowed() { " matching this search" } "." }
            @if !window.complete() {
                p.notice.warning data-window-stopped=(window.read) {
                    "Counted among the newest " (thousands(WINDOW as i64)) " queued jobs; older ones are left alone." }
            }
            p { (thousands(changes as i64)) " of them would change; "
                span data-would-skip=(n - changes) { (thousands((n - changes) as i64)) }
                " would be skipped (already due, running or finished)." }
            @if n > 0 {
                ul data-sample {
                    @for job in window.jobs.iter().take(SAMPLE) {
                        li { a.mono href=(link(&state, &format!("/jobs/{}", urlencode(&job.id)))) { (visible(&job.id)) }
                            " " (visible(&job.job_name)) }
                    }
                }
            }
            @if state.options.is_read_only() {
                p.notice.error { "This dashboard is read-only." }
            } @else if n > 0 {
                form data-action=(format!("{}-all-{}", view.name(), action.as_str())) method="post"
                    action=(link(&state, &format!("/{}/all", view.name()))) {
                    (csrf_field(&state))
                    input type="hidden" name="action" value=(action.as_str());
                    input type="hidden" name="expected" value=(n);
                    @for (k, v) in query.selection() { input type="hidden" name=(k) value=(v); }
                    button.danger type="submit" data-confirm-button {
                        (verb(action)) ": all " (thousands(n as i64)) " jobs" }
                }
            }
            p { a href=(back) data-cancel-confirm { "Back to " (view.title()) ", changing nothing" } }
        }
    };
    page(&state, view.name(), "Confirm", body)
}

async fn all(AxumState(state): AxumState<State>, body: String, view: View) -> Response {
    let form = pairs(Some(&body));
    let csrf = form
        .iter()
        .find(|(k, _)| k == "csrf")
        .map_or("", |(_, v)| v);
    if let Some(denied) = check_csrf(&state, csrf) {
        return denied;
    }
    let (action, query) = match parse(&state, view, &form) {
        Ok(parts) => parts,
        Err(refusal) => return *refusal,
    };
    let expected = form
        .iter()
        .find(|(k, _)| k == "expected")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok());
    let window = match read(&state, view, &query, now_ms()).await {
        Ok(window) => window,
        Err(e) => return store_error(&state, view.name(), &e),
    };
    let ids = window.jobs.into_iter().map(|j| j.id).collect();
    let req = BulkRequest::new(action, BulkSelection::Ids(ids));
    match act(&state, &req).await {
        Ok(report) => {
            let back = view.link(&state, &query.query(None));
            result(&state, action, &report, expected, &back)
        }
        Err(stopped) => stopped,
    }
}
