//! What the retries and scheduled views read: one bounded window of queued
//! rows, the jobs of the view among them, counted and sorted by due time.
//!
//! Neither view is a status (both kinds of job are `queued`) and no store
//! keeps a counter or a due-time index of them, so a view reads the queued
//! rows in the store's index order (newest first, narrowed by queue, name
//! and error text as any search is) up to [`WINDOW`] rows, keeps the jobs of
//! its kind, and sorts those by due time: the count in the heading and the
//! order of the pages are exact for everything the window read, and the
//! window is the whole queue whenever the queue holds at most [`WINDOW`]
//! jobs. A larger queue is read a window at a time (`older=<id>`: the next
//! window starts after the last row read), and the page says so. The cost of
//! a request is bounded by [`WINDOW`] whatever the size of the queue; a
//! store-side count would make it O(1) and cover any size.

use duraq_core::inspect::{JobCursor, JobFilter};
use duraq_core::limits::DEFAULT_SCAN_LIMIT;
use duraq_core::{Job, JobStatus};

use super::view_kind::View;
use super::view_query::{Cursor, ViewQuery};
use crate::AppState;

/// Queued rows one request reads at most: the budget of any search.
pub const WINDOW: usize = DEFAULT_SCAN_LIMIT;
/// Rows per store read.
const READ: usize = 500;

/// The view's jobs in one window.
pub struct Window {
    /// The jobs of the view, by due time then id.
    pub jobs: Vec<Job>,
    /// Queued rows read.
    pub read: usize,
    /// The last row read, when the window stopped before the end of the queue.
    pub more: Option<String>,
}

impl Window {
    /// Whether the window read every queued row the narrowing selects (then
    /// `jobs.len()` is the view's exact count).
    pub fn complete(&self) -> bool {
        self.more.is_none()
    }

    /// The jobs strictly after `after` in due order, at most `n`, and the
    /// cursor of the next page when more follow.
    pub fn page(&self, after: Option<&Cursor>, n: usize) -> (&[Job], Option<Cursor>) {
        let start = after.map_or(0, |c| {
            self.jobs.partition_point(|j| {
                (j.scheduled_at_ms, j.id.as_str()) <= (c.due_ms, c.id.as_str())
            })
        });
        let end = (start + n).min(self.jobs.len());
        let shown = &self.jobs[start..end];
        let next = (end < self.jobs.len())
            .then(|| shown.last())
            .flatten()
            .map(|j| Cursor {
                due_ms: j.scheduled_at_ms,
                id: j.id.clone(),
            });
        (shown, next)
    }
}

/// Whether `job` (queued) belongs in `view` at `now`.
pub fn keeps(view: View, job: &Job, now: i64) -> bool {
    match view {
        View::Retries => job.attempts > 0,
        View::Scheduled => job.attempts == 0 && job.scheduled_at_ms > now,
    }
}

/// Reads the window `query` names for `view`, as of `now`.
///
/// Errors: `job-not-found` when `older` names no job; the store's errors.
pub async fn read(
    state: &AppState,
    view: View,
    query: &ViewQuery,
    now: i64,
) -> duraq_core::Result<Window> {
    let text = |v: &str| (!v.is_empty()).then(|| v.to_owned());
    let mut filter = JobFilter {
        statuses: vec![JobStatus::Queued],
        queue: text(&query.queue),
        job_name: text(&query.name),
        error_contains: text(&query.error),
        limit: Some(READ),
        ..JobFilter::default()
    };
    if !query.older.is_empty() {
        let job = state
            .store
            .get_job(&query.older)
            .await?
            .ok_or_else(|| duraq_core::Error::job_not_found(&query.older))?;
        filter.after = Some(JobCursor::after(&job));
    }
    let mut window = Window {
        jobs: Vec::new(),
        read: 0,
        more: None,
    };
    loop {
        filter.scan_limit = Some(READ.min(WINDOW - window.read).max(1));
        let page = duraq_core::Inspect::search_jobs(state.store.as_ref(), &filter).await?;
        window.read += page.scanned;
        let ended = page.resume.is_none() && page.jobs.len() < READ;
        let last = page
            .resume
            .clone()
            .or_else(|| page.jobs.last().map(JobCursor::after));
        window
            .jobs
            .extend(page.jobs.into_iter().filter(|j| keeps(view, j, now)));
        if ended || last.is_none() {
            break;
        }
        if window.read >= WINDOW {
            window.more = last.map(|c| c.id);
            break;
        }
        filter.after = last;
    }
    window
        .jobs
        .sort_by(|a, b| (a.scheduled_at_ms, &a.id).cmp(&(b.scheduled_at_ms, &b.id)));
    Ok(window)
}
