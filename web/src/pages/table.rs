//! The jobs table every page lists jobs with (`table[data-table="jobs"]`,
//! one `tr[data-job-id]` per job), and the two columns only some lists have:
//! the selection boxes of the bulk actions and the last error of failed,
//! cancelled and orphaned jobs (its first line, cut; the whole, scrubbed, in
//! `title`, so an error is read without opening the job).
//!
//! No cell breaks a word (`app.css`): a UUID's 36 characters are shown as
//! their last [`SHORT_ID`] (the random part, which tells jobs apart; the
//! leading timestamp is shared by jobs of the same moment), the whole id in
//! `title` and one click away on the job's page, and a table wider than the
//! screen scrolls sideways in its `div.table` rather than squeezing columns.

use duraq_core::Job;
use maud::{html, Markup};

use crate::format::{label, urlencode};
use crate::format::{relative, visible};
use crate::html::link;
use crate::live::now_ms;
use crate::AppState;

/// How much of a last error's first line the list shows.
const ERROR_CHARS: usize = 120;

/// How many trailing characters of a long id a table shows.
pub const SHORT_ID: usize = 8;

/// `id` as a table shows it: whole when short, else `…` and its last
/// [`SHORT_ID`] characters.
pub fn short_id(id: &str) -> String {
    let n = id.chars().count();
    if n <= SHORT_ID + 4 {
        return visible(id).into_owned();
    }
    let tail: String = id.chars().skip(n - SHORT_ID).collect();
    format!("…{}", visible(&tail))
}

/// The id cell: the short id, linking to the job's page, the whole id in
/// `title` (`a[data-job-link]`).
pub fn id_cell(state: &AppState, id: &str) -> Markup {
    html! {
        td.id { a.mono data-job-link href=(link(state, &format!("/jobs/{}", urlencode(id)))) title=(visible(id)) { (short_id(id)) } }
    }
}

/// What a jobs table shows beyond the common columns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Table {
    /// A checkbox per row (`input[name="id"]`) and a select-all box.
    pub select: bool,
    /// The last error's first line (`td[data-last-error]`, full text in `title`).
    pub errors: bool,
}

/// The jobs table (`table[data-table="jobs"]`, one `tr[data-job-id]` per job).
pub fn job_table(state: &AppState, jobs: &[Job]) -> Markup {
    job_table_with(state, jobs, Table::default())
}

/// [`job_table`] with the extra columns of `table`.
pub fn job_table_with(state: &AppState, jobs: &[Job], table: Table) -> Markup {
    let now = now_ms();
    html! {
        div.table { table data-table="jobs" {
            thead { tr {
                @if table.select {
                    th { input type="checkbox" data-select-all aria-label="Select every job on this page"; }
                }
                th { "Id" } th { "Name" } th { "Queue" } th { "Status" }
                th.num { "Attempts" } th { "Created" } th { "Due / finished" }
                @if table.errors { th { "Last error" } }
            } }
            tbody {
                @for job in jobs {
                    tr data-job-id=(job.id) data-status=(job.status.as_str()) {
                        @if table.select {
                            td { input type="checkbox" name="id" value=(job.id) data-select aria-label="Select this job"; }
                        }
                        (id_cell(state, &job.id))
                        td { (visible(&job.job_name)) }
                        td { (visible(&job.queue)) }
                        td { span.status.(job.status.as_str()) { (label(job.status)) } }
                        td.num { (job.attempts) "/" (job.max_retries.saturating_add(1)) }
                        td { (relative(job.created_at_ms, now)) }
                        td { (relative(job.terminal_at_ms().unwrap_or(job.scheduled_at_ms), now)) }
                        @if table.errors { (error_cell(state, job)) }
                    }
                }
            }
        } }
    }
}

/// The first line of the last error, cut to [`ERROR_CHARS`], the whole
/// (scrubbed) text in `title`.
pub fn error_cell(state: &AppState, job: &Job) -> Markup {
    match &job.last_error {
        None => html! { td.muted data-last-error="" { "—" } },
        Some(e) => {
            let full = state.options.scrub(e);
            let first = full.lines().next().unwrap_or("");
            let mut short: String = first.chars().take(ERROR_CHARS).collect();
            if short.len() < full.trim_end().len() {
                short.push('…');
            }
            html! { td.error data-last-error=(visible(first)) title=(visible(&full)) { (visible(&short)) } }
        }
    }
}
