//! `GET /retries` and `GET /scheduled`: the two kinds of `queued` job that
//! are not simply waiting for a worker, each in its own view as Sidekiq and
//! Oban have them.
//!
//! - Retries: queued jobs that have failed at least once (attempts > 0),
//!   soonest next attempt first, with their attempts and the last error;
//!   narrowed by queue, name and the text of the last error.
//! - Scheduled: queued jobs due later that have not run yet (attempts 0),
//!   soonest first; narrowed by queue and name.
//!
//! What a view reads, and why its count and order are exact within a bounded
//! window, is `pages::view_scan`; its strict query, `pages::view_query`. The
//! heading counts the view (`[data-view-count]`); each job has a "Run now"
//! button and the checked ones a bulk one, the CSRF-protected form of
//! `pages::bulk`; "Run all now" and "Cancel all" act on every job of the view
//! behind a confirmation (`pages::view_bulk`). The part under the filters
//! (`#view[data-live-view]`) and the count follow the store without a reload
//! (`assets/views.js`), as the overview's counts do.

use axum::extract::{RawQuery, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::jobs::pairs;
use super::store_error;
use super::view_kind::View;
use super::view_query::{Refusal, ViewQuery};
use super::view_scan::{read, Window};
use super::view_table::view_table;
use crate::format::{thousands, visible};
use crate::html::{csrf_field, link, page};
use crate::live::now_ms;
use crate::{AppState, State};

/// Jobs a view shows per page.
pub const SHOWN: usize = 50;

/// The view's count as shown: exact, or "N+" when the window stopped early.
pub fn count_text(window: &Window) -> String {
    let n = thousands(i64::try_from(window.jobs.len()).unwrap_or(i64::MAX));
    if window.complete() {
        n
    } else {
        format!("{n}+")
    }
}

/// A refused query: its code in `data-error`, a 400, the view's frame.
pub fn refused(state: &AppState, view: View, refusal: &Refusal) -> Response {
    let body = html! {
        h1 { (view.title()) }
        p.notice.error role="status" data-error=(refusal.code) {
            "error[" (refusal.code) "]: " (visible(&refusal.text)) }
        p { a href=(view.link(state, "")) { "Back to " (view.title()) } }
    };
    (
        StatusCode::BAD_REQUEST,
        page(state, view.name(), view.title(), body),
    )
        .into_response()
}

/// `GET /retries`.
pub async fn retries(state: AxumState<State>, raw: RawQuery) -> Response {
    render(state, raw, View::Retries).await
}

/// `GET /scheduled`.
pub async fn scheduled(state: AxumState<State>, raw: RawQuery) -> Response {
    render(state, raw, View::Scheduled).await
}

async fn render(
    AxumState(state): AxumState<State>,
    RawQuery(raw): RawQuery,
    view: View,
) -> Response {
    let query = match ViewQuery::parse(view, &pairs(raw.as_deref()), &[]) {
        Ok(q) => q,
        Err(refusal) => return refused(&state, view, &refusal),
    };
    // The revision first: a change after it shows as a newer one to the
    // page's live refresh, even when the window below already holds it.
    let revision = match state.store.count_snapshot().await {
        Ok(snap) => snap.revision,
        Err(e) => return store_error(&state, view.name(), &e),
    };
    let now = now_ms();
    let window = match read(&state, view, &query, now).await {
        Ok(window) => window,
        Err(e) => return store_error(&state, view.name(), &e),
    };
    let (shown, next) = window.page(query.after.as_ref(), SHOWN);
    let count = count_text(&window);
    let actions = !state.options.is_read_only();
    let here = |after| view.link(&state, &query.query(after));
    let to_all = |action: &str| {
        let mut q = vec![("action", action.to_owned())];
        q.extend(query.selection());
        let q = serde_urlencoded::to_string(q).unwrap_or_default();
        link(&state, &format!("/{}/confirm?{q}", view.name()))
    };
    let body = html! {
        h1 { (view.title()) " " span.muted data-view-count=(window.jobs.len())
            data-complete=(window.complete()) { "(" (count) ")" } }
        p.muted { (intro(view)) }
        (super::view_query::filters(&state, view, &query))
        section id="view" data-live-view=(view.name()) data-revision=(revision) {
            @if let Some(last) = &window.more {
                p.notice.warning role="status" data-window-stopped=(window.read) {
                    "This view read " (thousands(window.read as i64)) " queued jobs"
                    @if query.narrowed() { " of this search" }
                    "; its count and order cover those. "
                    a data-older href=(view.link(&state, &ViewQuery { older: last.clone(), after: None, ..query.clone() }.query(None))) {
                        "Read the next older queued jobs →" }
                }
            }
            @if !query.older.is_empty() || query.after.is_some() {
                p.muted { "Continuing further down the view. "
                    a href=(view.link(&state, &ViewQuery { older: String::new(), after: None, ..query.clone() }.query(None))) {
                        "Back to the start" } }
            }
            @if actions && !window.jobs.is_empty() {
                p.actions data-apply-all {
                    span.muted { "Every job of this view:" }
                    a href=(to_all("run-now")) data-apply-all-action="run-now" { "Run all now (" (count) ")…" }
                    a href=(to_all("cancel")) data-apply-all-action="cancel" { "Cancel all (" (count) ")…" }
                }
            }
            @if actions {
                form.bulk data-bulk method="post" action=(link(&state, "/jobs/bulk")) {
                    (csrf_field(&state))
                    input type="hidden" name="view" value=(view.name());
                    input type="hidden" name="back" value=(query.query(query.after.as_ref()));
                    div.actions {
                        span.muted data-selected-count { "Selected jobs:" }
                        button type="submit" name="action" value="run-now" data-bulk-action="run-now" { "Run now" }
                        button.danger type="submit" name="action" value="cancel" data-bulk-action="cancel" { "Cancel" }
                    }
                    (view_table(&state, view, shown, true, now))
                }
            } @else {
                (view_table(&state, view, shown, false, now))
            }
            @if window.jobs.is_empty() {
                p.muted data-empty { (empty(view, query.narrowed())) }
            }
            @if let Some(next) = next {
                p { a data-next href=(here(Some(&next))) rel="next" { "Later jobs →" } }
            }
        }
    };
    page(
        &state,
        view.name(),
        &format!("{} ({count})", view.title()),
        body,
    )
}

fn intro(view: View) -> &'static str {
    match view {
        View::Retries => {
            "Queued jobs whose last attempt failed, soonest next attempt first: each \
             runs again then, or now if you say so. Jobs with no retries left are failed."
        }
        View::Scheduled => {
            "Queued jobs due later that have not run yet, soonest first. \
             Run now makes a job due at once; nothing else about it changes."
        }
    }
}

fn empty(view: View, narrowed: bool) -> &'static str {
    match (view, narrowed) {
        (_, true) => "No job of this view matches.",
        (View::Retries, false) => "No job is waiting to be retried.",
        (View::Scheduled, false) => "No job is scheduled for later.",
    }
}
