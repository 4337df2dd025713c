//! The table of the retries and scheduled views
//! (`table[data-table="retries"|"scheduled"]`, one `tr[data-job-id]` per job,
//! in due order), apart from the page around it so that the page reads as
//! what it shows and this as how a row looks.
//!
//! The columns are those Sidekiq's and Oban's views lead with: when the job
//! runs next first (the order of the rows), then what it is; retries add the
//! attempts and the last error (its first line, the whole in `title`, the one
//! cell allowed to wrap). Every other cell keeps to one line (`app.css`), ids
//! shown short with the whole id a hover or a click away (`pages::table`).

use duraq_core::Job;
use maud::{html, Markup};

use super::table::{error_cell, id_cell};
use super::view_kind::View;
use crate::format::{relative, utc, visible};
use crate::AppState;

/// The view's table; `actions` adds the selection boxes and each row's "Run
/// now" button (the bulk form around it is the page's).
pub fn view_table(state: &AppState, view: View, jobs: &[Job], actions: bool, now: i64) -> Markup {
    let when = |ms: i64| html! { time data-ms=(ms) title=(utc(ms)) { (relative(ms, now)) } };
    html! {
        div.table { table data-table=(view.name()) {
            thead { tr {
                @if actions { th { input type="checkbox" data-select-all aria-label="Select every job on this page"; } }
                @match view {
                    View::Retries => { th { "Next attempt" } }
                    View::Scheduled => { th { "Due" } }
                }
                th { "Id" } th { "Name" } th { "Queue" }
                @match view {
                    View::Retries => { th.num { "Attempts" } th { "Last error" } }
                    View::Scheduled => { th { "Created" } }
                }
                @if actions { th { span.sr { "Action" } } }
            } }
            tbody {
                @for job in jobs {
                    tr data-job-id=(job.id) data-status=(job.status.as_str()) data-due-ms=(job.scheduled_at_ms) {
                        @if actions {
                            td { input type="checkbox" name="id" value=(job.id) data-select aria-label="Select this job"; }
                        }
                        @match view {
                            View::Retries => {
                                td data-next-attempt { @if job.scheduled_at_ms > now { (when(job.scheduled_at_ms)) } @else { "due now" } }
                            }
                            View::Scheduled => { td data-due { (when(job.scheduled_at_ms)) } }
                        }
                        (id_cell(state, &job.id))
                        td { (visible(&job.job_name)) }
                        td { (visible(&job.queue)) }
                        @match view {
                            View::Retries => {
                                td.num data-attempts=(job.attempts) { (job.attempts) " of " (job.max_retries.saturating_add(1)) }
                                (error_cell(state, job))
                            }
                            View::Scheduled => { td { (when(job.created_at_ms)) } }
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
