//! `GET /jobs/{id}` and its actions, `POST /jobs/{id}/retry` and `/cancel`
//! (and "Run now" for a queued job due later, a run-now of `pages::bulk`).
//!
//! The detail shows every field a store keeps: args as pretty JSON, every
//! timestamp in UTC with a relative time, keys, the lease, `lastError` and the
//! error history (`ol[data-errors]`, newest first, one `li` per failed attempt:
//! its number, time, worker and error; every value escaped and scrubbed like
//! `lastError`). The fields are [`job_fields`]. An action
//! is a POST form with the CSRF token; after it the browser is sent back to the
//! detail page (303), where `[data-field="status"]` shows the new status, and a
//! refused action (`invalid-job-state`: retrying a running job) is named there.
//!
//! What the job said while it ran (`docs/jobs.md`, "Progress and logs") is
//! `section#progress`: a `progress` bar with `[data-field="progressPercent"]`
//! and `[data-field="progressMessage"]`, and the kept log lines in
//! `ol[data-logs]` (oldest first, one `li[data-seq]` per line, scrubbed and
//! escaped like `lastError`). While the job runs the section carries
//! `data-live`, and `app.js` fetches the page again every two seconds and
//! swaps the fresh section in, until it comes back without `data-live`.

use axum::extract::{Path, Query, State as AxumState};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use duraq_core::inspect::{BulkAction, JobProgress, SignalRecord, StepRecord};
use duraq_core::{ErrorCode, Job, JobStatus};
use maud::{html, Markup};
use serde::Deserialize;

use super::store_error;
use crate::format::urlencode;
use crate::format::{visible, visible_multiline};
use crate::html::{csrf_field, link, notice, page, time};
use crate::live::now_ms;
use crate::security::check_csrf;
use crate::{AppState, State};

#[path = "job_fields.rs"]
mod job_fields;
use job_fields::{fields, opt};

/// `?error=<code>` after a refused action.
#[derive(Debug, Default, Deserialize)]
pub struct DetailQuery {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    done: Option<String>,
}

/// `GET /jobs/{id}`.
pub async fn detail(
    AxumState(state): AxumState<State>,
    Path(id): Path<String>,
    Query(q): Query<DetailQuery>,
) -> Response {
    let (job, said, steps, signals) = match state.store.get_job(&id).await {
        Ok(Some(job)) => {
            let said = state.store.job_progress(&job.id).await;
            let steps = state.store.job_steps(&job.id).await;
            let signals = state.store.job_signals(&job.id).await;
            match said.and_then(|said| Ok((said, steps?, signals?))) {
                Ok((said, steps, signals)) => (job, said, steps, signals),
                Err(e) => return store_error(&state, "job", &e),
            }
        }
        Ok(None) => {
            return store_error(
                &state,
                "job",
                &duraq_core::Error::job_not_found(&visible(&id)),
            )
        }
        Err(e) => return store_error(&state, "job", &e),
    };
    let held_by = match job_fields::held_by(&state, &job).await {
        Ok(held) => held,
        Err(e) => return store_error(&state, "job", &e),
    };
    let message = match (q.error.as_deref(), q.done.as_deref()) {
        (Some("invalid-job-state"), _) => Some((
            "error",
            "That action does not apply to a job in this status.",
        )),
        (Some(_), _) => Some(("error", "The action failed; see the server log.")),
        (None, Some("retry")) => Some(("info", "Retried: the job is queued and due now.")),
        (None, Some("cancel")) => Some(("info", "Cancelled.")),
        _ => None,
    };
    let body = html! {
        h1 { "Job " code { (visible(&job.id)) } }
        @if let Some((kind, text)) = message { (notice(kind, text)) }
        (actions(&state, &job))
        (fields(&state, &job, held_by.as_ref()))
        h2 { "Args" }
        pre.json data-field="args" { (visible_multiline(&pretty(&job.args))) }
        @if !job.depends_on.is_empty() {
            h2 { "Dependencies" }
            (dependencies(&state, &job))
        }
        @if let Some(output) = &job.output {
            h2 { "Output" }
            pre.json data-field="output" { (visible_multiline(&pretty(output))) }
        }
        h2 { "Last error" }
        @match &job.last_error {
            Some(e) => pre.error data-field="lastError" { (visible_multiline(&state.options.scrub(e))) },
            None => p.muted data-field="lastError" { "None." },
        }
        h2 { "Progress" }
        (progress(&state, &job, said.as_ref()))
        @if !steps.is_empty() {
            h2 { "Steps" }
            (step_list(&steps))
        }
        @if !signals.is_empty() {
            h2 { "Signals received" }
            (signal_list(&signals))
        }
        h2 { "Error history" }
        (errors(&state, &job))
    };
    page(&state, "job", &format!("Job {}", visible(&job.id)), body)
}

/// The jobs this one waits for, each linked, with its edge's policy, and how
/// many have not finished yet (`docs/workflows.md`).
fn dependencies(state: &AppState, job: &Job) -> Markup {
    html! {
        p data-field="openDependencies" {
            @if job.open_dependencies > 0 {
                (job.open_dependencies) " of " (job.depends_on.len()) " not finished yet."
            } @else {
                "Every dependency has finished."
            }
        }
        ul data-field="dependsOn" {
            @for dep in &job.depends_on {
                li {
                    a href=(link(state, &format!("/jobs/{}", urlencode(&dep.job_id)))) { code { (visible(&dep.job_id)) } }
                    span.muted { " (if it does not complete: " (dep.on_failure.as_str()) ")" }
                }
            }
        }
    }
}

/// What the job said: its progress and kept log lines; live while it runs.
/// The durable steps a job recorded, oldest first: name, attempt, when,
/// and what it stored (a sleep: until when).
fn step_list(steps: &[StepRecord]) -> Markup {
    let now = now_ms();
    html! {
        table #steps {
            thead { tr { th { "Step" } th { "Attempt" } th { "When" } th { "Stored" } } }
            tbody {
                @for s in steps {
                    tr data-step=(visible(&s.name)) {
                        td { code { (visible(&s.name)) } }
                        td { (s.attempt) }
                        td { (time(Some(s.at_ms), now)) }
                        td {
                            @match s.output["untilMs"].as_i64() {
                                Some(until) if s.name.starts_with("duraq.sleep.") => {
                                    "sleeps until " (time(Some(until), now))
                                }
                                _ => {
                                    (s.output.to_string().len()) " bytes of JSON"
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The signals a job received, oldest first: name, when, payload size.
fn signal_list(signals: &[SignalRecord]) -> Markup {
    let now = now_ms();
    html! {
        table #signals {
            thead { tr { th { "Signal" } th { "When" } th { "Payload" } } }
            tbody {
                @for s in signals {
                    tr data-signal=(visible(&s.name)) {
                        td { code { (visible(&s.name)) } }
                        td { (time(Some(s.at_ms), now)) }
                        td { (s.payload.to_string().len()) " bytes of JSON" }
                    }
                }
            }
        }
    }
}

fn progress(state: &AppState, job: &Job, said: Option<&JobProgress>) -> Markup {
    let now = now_ms();
    let live = job.status == JobStatus::HandedOff;
    html! {
        section #progress data-live[live] data-status=(job.status.as_str()) {
            @match said {
                None => p.muted data-field="progressMessage" { "The job has not reported progress." },
                Some(told) => {
                    p.progress {
                        @if let Some(f) = told.fraction {
                            progress max="1" value=(f) {}
                            " "
                            strong data-field="progressPercent" { (format!("{:.0}%", f * 100.0)) }
                            " "
                        }
                        span data-field="progressMessage" {
                            (visible(&state.options.scrub(told.message.as_deref().unwrap_or(""))))
                        }
                        span.muted { " (updated " (time(Some(told.updated_at_ms), now)) ")" }
                    }
                    @if !told.logs.is_empty() {
                        p.muted {
                            "The newest " (told.logs.len()) " of " (told.lines_total) " lines, oldest first."
                        }
                        ol.logs data-logs start=(told.logs[0].seq) {
                            @for l in &told.logs {
                                li data-seq=(l.seq) data-attempt=(l.attempt) {
                                    span.muted { (time(Some(l.at_ms), now)) " · attempt " (l.attempt) " " }
                                    code { (visible(&state.options.scrub(&l.line))) }
                                }
                            }
                        }
                    }
                },
            }
        }
    }
}

/// The failed attempts, newest first (the store keeps the newest 20).
fn errors(state: &AppState, job: &Job) -> Markup {
    let now = now_ms();
    html! {
        ol data-errors reversed {
            @for e in job.errors.iter().rev() {
                li data-attempt=(e.attempt) {
                    "Attempt " (e.attempt) ", " (time(Some(e.at_ms), now)) ", worker "
                    (opt(e.worker_id.as_deref().map(|w| visible(w).into_owned())))
                    pre.error { (visible_multiline(&state.options.scrub(&e.error))) }
                }
            }
        }
        @if job.errors.is_empty() {
            p.muted { "No failed attempts." }
        } @else {
            p.muted { "The newest " (duraq_core::driver::transitions::MAX_ERROR_HISTORY) " failed attempts are kept." }
        }
    }
}

fn pretty(args: &serde_json::Value) -> String {
    serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string())
}

fn actions(state: &AppState, job: &Job) -> Markup {
    let path = |what: &str| link(state, &format!("/jobs/{}/{what}", urlencode(&job.id)));
    html! {
        @if !state.options.is_read_only() {
            div.actions {
                @if job.status.is_terminal() {
                    form data-action="retry" method="post" action=(path("retry")) {
                        (csrf_field(state))
                        button type="submit" { "Retry" }
                    }
                } @else {
                    @if BulkAction::RunNow.changes(job, now_ms()) {
                        form data-action="run-now" method="post" action=(link(state, "/jobs/bulk")) {
                            (csrf_field(state))
                            input type="hidden" name="run" value=(job.id);
                            button type="submit" { "Run now" }
                        }
                    }
                    form data-action="cancel" method="post" action=(path("cancel")) {
                        (csrf_field(state))
                        button.danger type="submit" { "Cancel" }
                    }
                }
            }
        }
    }
}

/// The form of an action (a job's retry/cancel, a queue's pause/resume).
#[derive(Debug, Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    csrf: String,
}

impl ActionForm {
    /// The CSRF token the form carried.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /jobs/{id}/retry`.
pub async fn retry(state: AxumState<State>, id: Path<String>, form: Form<ActionForm>) -> Response {
    act(state, id, form, "retry").await
}

/// `POST /jobs/{id}/cancel`.
pub async fn cancel(state: AxumState<State>, id: Path<String>, form: Form<ActionForm>) -> Response {
    act(state, id, form, "cancel").await
}

async fn act(
    AxumState(state): AxumState<State>,
    Path(id): Path<String>,
    Form(form): Form<ActionForm>,
    what: &'static str,
) -> Response {
    if let Some(refused) = check_csrf(&state, &form.csrf) {
        return refused;
    }
    let result = match what {
        "retry" => state.store.retry_job(&id).await,
        _ => state.store.cancel_job(&id).await,
    };
    let back = link(&state, &format!("/jobs/{}", urlencode(&id)));
    match result {
        Ok(_) => Redirect::to(&format!("{back}?done={what}")).into_response(),
        Err(e) if e.code() == ErrorCode::InvalidJobState => {
            Redirect::to(&format!("{back}?error=invalid-job-state")).into_response()
        }
        Err(e) => {
            tracing::warn!(job_id = %id, "dashboard {what} failed: {e}");
            store_error(&state, "job", &e)
        }
    }
}
