//! `GET /retries` and `GET /scheduled`: the two kinds of `queued` job that
//! are not simply waiting for a worker, each in its own view as Sidekiq and
//! Oban have them.
//!
//! - Retries: queued jobs that have failed at least once (attempts > 0),
//!   with their attempts, the time of the next attempt and the last error.
//! - Scheduled: queued jobs due later that have not run yet (attempts 0).
//!
//! Neither is a status, so a view reads queued jobs in the store's index
//! order (newest first) a bounded page at a time and keeps those of its kind:
//! at most [`SHOWN`] jobs from at most [`SCAN`] rows per request, and a link
//! goes on from the last row read (`?after=<id>`), so a view costs the same on
//! a million queued jobs as on ten. Each job has a "Run now" button and the
//! checked ones a bulk one, both the CSRF-protected bulk form of
//! `pages::bulk` (`action=run-now`); the scheduled view also links to the
//! confirmation of running every job due later now.

use axum::extract::{RawQuery, State as AxumState};
use axum::response::Response;
use duraq_core::inspect::{JobCursor, JobFilter};
use duraq_core::{Job, JobStatus};
use maud::{html, Markup};

use super::jobs::pairs;
use super::store_error;
use super::table::{error_cell, id_cell};
use crate::format::{relative, utc, visible};
use crate::html::{csrf_field, link, page};
use crate::live::now_ms;
use crate::{AppState, State};

/// Jobs a view shows per page.
pub const SHOWN: usize = 50;
/// Queued rows a view reads per request at most.
pub const SCAN: usize = 2_000;
/// Rows per read.
const READ: usize = 250;

/// Which view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Queued jobs that failed at least once.
    Retries,
    /// Queued jobs due later that never ran.
    Scheduled,
}

impl View {
    /// The page name (`main[data-page]`, the nav key and the path).
    pub fn name(self) -> &'static str {
        match self {
            Self::Retries => "retries",
            Self::Scheduled => "scheduled",
        }
    }

    /// The view `name` names, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Retries, Self::Scheduled]
            .into_iter()
            .find(|v| v.name() == name)
    }

    fn title(self) -> &'static str {
        match self {
            Self::Retries => "Retries",
            Self::Scheduled => "Scheduled",
        }
    }

    /// Whether `job` (queued) belongs in the view at `now`.
    fn keeps(self, job: &Job, now: i64) -> bool {
        match self {
            Self::Retries => job.attempts > 0,
            Self::Scheduled => job.attempts == 0 && job.scheduled_at_ms > now,
        }
    }
}

/// One page of a view: the jobs kept, the rows read, and where the next
/// page starts (the last row read) when there may be more.
struct Found {
    jobs: Vec<Job>,
    scanned: usize,
    next: Option<String>,
}

async fn find(state: &AppState, view: View, after: Option<&str>) -> duraq_core::Result<Found> {
    let mut filter = JobFilter {
        statuses: vec![JobStatus::Queued],
        limit: Some(READ),
        ..JobFilter::default()
    };
    if let Some(after) = after {
        let job = state
            .store
            .get_job(after)
            .await?
            .ok_or_else(|| duraq_core::Error::job_not_found(after))?;
        filter.after = Some(JobCursor::after(&job));
    }
    let now = now_ms();
    let mut found = Found {
        jobs: Vec::new(),
        scanned: 0,
        next: None,
    };
    loop {
        let page = state.store.search_jobs(&filter).await?;
        let full = page.jobs.len() == READ;
        for job in page.jobs {
            found.scanned += 1;
            found.next = Some(job.id.clone());
            filter.after = Some(JobCursor::after(&job));
            if view.keeps(&job, now) {
                found.jobs.push(job);
                if found.jobs.len() == SHOWN {
                    return Ok(found);
                }
            }
        }
        if !full || found.scanned >= SCAN {
            if !full {
                found.next = None;
            }
            return Ok(found);
        }
    }
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
    let query = pairs(raw.as_deref());
    let after = query
        .iter()
        .find(|(k, v)| k == "after" && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_owned());
    let mut found = match find(&state, view, after.as_deref()).await {
        Ok(found) => found,
        Err(e) => return store_error(&state, view.name(), &e),
    };
    found
        .jobs
        .sort_by_key(|j| (j.scheduled_at_ms, j.id.clone()));
    let path = link(&state, &format!("/{}", view.name()));
    let next = found.next.as_ref().map(|id| {
        format!(
            "{path}?{}",
            serde_urlencoded::to_string([("after", id)]).unwrap_or_default()
        )
    });
    let actions = !state.options.is_read_only();
    let body = html! {
        h1 { (view.title()) }
        p.muted { (intro(view)) }
        @if after.is_some() { p.muted { "Continuing from an older job. " a href=(path) { "Back to the newest" } } }
        @if actions && view == View::Scheduled && !found.jobs.is_empty() {
            p.actions data-apply-all {
                a href=(link(&state, "/jobs/bulk/confirm?action=run-now&status=queued")) data-apply-all-action="run-now" {
                    "Run every job due later now…" }
            }
        }
        @if actions {
            form.bulk data-bulk method="post" action=(link(&state, "/jobs/bulk")) {
                (csrf_field(&state))
                input type="hidden" name="view" value=(view.name());
                div.actions {
                    span.muted data-selected-count { "Selected jobs:" }
                    button type="submit" name="action" value="run-now" data-bulk-action="run-now" { "Run now" }
                    button.danger type="submit" name="action" value="cancel" data-bulk-action="cancel" { "Cancel" }
                }
                (table(&state, view, &found.jobs, true))
            }
        } @else {
            (table(&state, view, &found.jobs, false))
        }
        @if found.jobs.is_empty() {
            p.muted data-empty { (empty(view)) }
        }
        @if let Some(next) = next {
            p { a data-next href=(next) rel="next" { "Older jobs →" }
                span.muted { " (" (found.scanned) " queued jobs read for this page)" } }
        }
    };
    page(&state, view.name(), view.title(), body)
}

fn intro(view: View) -> &'static str {
    match view {
        View::Retries => {
            "Queued jobs whose last attempt failed: each runs again at its next \
                          attempt time, or now if you say so. Jobs with no retries left are failed."
        }
        View::Scheduled => {
            "Queued jobs due later that have not run yet, soonest first. \
                            Run now makes a job due at once; nothing else about it changes."
        }
    }
}

fn empty(view: View) -> &'static str {
    match view {
        View::Retries => "No job is waiting to be retried.",
        View::Scheduled => "No job is scheduled for later.",
    }
}

/// The view's table (`table[data-table="retries"|"scheduled"]`).
fn table(state: &AppState, view: View, jobs: &[Job], actions: bool) -> Markup {
    let now = now_ms();
    let when = |ms: i64| html! { time data-ms=(ms) title=(utc(ms)) { (relative(ms, now)) } };
    html! {
        div.table { table data-table=(view.name()) {
            thead { tr {
                @if actions { th { input type="checkbox" data-select-all aria-label="Select every job on this page"; } }
                th { "Id" } th { "Name" } th { "Queue" }
                @match view {
                    View::Retries => { th.num { "Attempts" } th { "Next attempt" } th { "Last error" } }
                    View::Scheduled => { th { "Due" } th { "Created" } }
                }
                @if actions { th { span.sr { "Action" } } }
            } }
            tbody {
                @for job in jobs {
                    tr data-job-id=(job.id) data-status=(job.status.as_str()) {
                        @if actions {
                            td { input type="checkbox" name="id" value=(job.id) data-select aria-label="Select this job"; }
                        }
                        (id_cell(state, &job.id))
                        td { (visible(&job.job_name)) }
                        td { (visible(&job.queue)) }
                        @match view {
                            View::Retries => {
                                td.num data-attempts=(job.attempts) { (job.attempts) " of " (job.max_retries.saturating_add(1)) }
                                td data-next-attempt { @if job.scheduled_at_ms > now { (when(job.scheduled_at_ms)) } @else { "due now" } }
                                (error_cell(state, job))
                            }
                            View::Scheduled => {
                                td data-due { (when(job.scheduled_at_ms)) }
                                td { (when(job.created_at_ms)) }
                            }
                        }
                        @if actions {
                            td {
                                @if job.scheduled_at_ms > now {
                                    button type="submit" name="run" value=(job.id) data-run-now { "Run now" }
                                }
                            }
                        }
                    }
                }
            }
        } }
    }
}
