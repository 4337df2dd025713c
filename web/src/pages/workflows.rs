//! `GET /workflows`: the workflows, largest id first (newest first for the
//! ids duraq makes), a page at a time (`?before=ID`), only those of one name
//! with `?name=N`, each with its name, its state, its steps and their counts
//! per status, linked to its graph page
//! ([`super::workflow`]). One page is one `Inspect::list_workflows` read, whose
//! cost is the steps of the workflows on it. The overview's workflow counts
//! ([`tally_section`]) walk those pages up to [`TALLY_BUDGET`] workflows.

use axum::extract::{Query, State as AxumState};
use axum::response::Response;
use duraq_core::inspect::{workflow_tally, WorkflowListRequest, WorkflowState, WorkflowTally};
use duraq_core::JobStatus;
use maud::{html, Markup};

use super::store_error;
use super::table::short_id;
use crate::format::{label, urlencode};
use crate::format::{thousands, utc, visible};
use crate::html::{link, page};
use crate::{AppState, State};

/// Workflows per page.
pub const PAGE: usize = 50;

/// The most workflows the overview counts before it says "more".
pub const TALLY_BUDGET: usize = 1_000;

/// The list's query: `?before=ID` continues after the page that ended at ID;
/// `?name=N` keeps the workflows named N.
#[derive(Debug, Default, serde::Deserialize)]
pub struct WorkflowsQuery {
    before: Option<String>,
    name: Option<String>,
}

/// `GET /workflows`.
pub async fn list(
    AxumState(state): AxumState<State>,
    Query(query): Query<WorkflowsQuery>,
) -> Response {
    let name = query.name.filter(|n| !n.is_empty());
    let req = WorkflowListRequest {
        before: query.before.filter(|b| !b.is_empty()),
        limit: PAGE,
        name: name.clone(),
    };
    let workflows = match state.store.list_workflows(&req).await {
        Ok(list) => list,
        Err(e) => return store_error(&state, "workflows", &e),
    };
    let next = (workflows.len() == PAGE)
        .then(|| workflows.last().map(|w| w.workflow_id.clone()))
        .flatten();
    let body = html! {
        h1 { "Workflows" }
        form.filters data-filters method="get" action=(link(&state, "/workflows")) {
            label { "Name " input name="name" value=(name.as_deref().unwrap_or("")) placeholder="nightly"; }
            button type="submit" { "Filter" }
            @if name.is_some() { a href=(link(&state, "/workflows")) { "Clear" } }
        }
        @if workflows.is_empty() { p.muted data-empty { "No workflow here." } }
        div.table { table data-table="workflows" {
            thead { tr {
                th { "Workflow" } th { "Name" } th { "State" } th.num { "Steps" }
                th { "Steps per status" } th { "Created" }
            } }
            tbody {
                @for w in &workflows {
                    tr data-workflow=(w.workflow_id) data-state=(w.state().as_str()) {
                        td.id { a.mono href=(link(&state, &format!("/workflows/{}", urlencode(&w.workflow_id))))
                            title=(visible(&w.workflow_id)) { (short_id(&w.workflow_id)) } }
                        td data-name { (visible(w.name.as_deref().unwrap_or("—"))) }
                        td { span.status.(state_class(w.state())) { (w.state().as_str()) } }
                        td.num { (thousands(w.steps())) }
                        td {
                            @for status in JobStatus::ALL {
                                @let n = w.counts.get(status);
                                @if n > 0 {
                                    span.status.(status.as_str()) data-status=(status.as_str()) { (label(status)) " " (thousands(n)) } " "
                                }
                            }
                        }
                        td { (utc(w.created_at_ms)) }
                    }
                }
            }
        } }
        @if let Some(before) = next {
            @let named = name.as_deref().map_or_else(String::new, |n| format!("&name={}", urlencode(n)));
            p { a data-next href=(link(&state, &format!("/workflows?before={}{named}", urlencode(&before)))) { "Older workflows →" } }
        }
    };
    page(&state, "workflows", "Workflows", body)
}

/// The status colour a workflow state borrows.
fn state_class(state: WorkflowState) -> &'static str {
    match state {
        WorkflowState::Active => "queued",
        WorkflowState::Completed => "completed",
        WorkflowState::Failed => "failed",
    }
}

/// The overview's workflow counts: active, completed and failed workflows,
/// linked to the list; nothing when the store holds no workflow.
pub async fn tally_section(state: &AppState) -> duraq_core::Result<Markup> {
    let tally = workflow_tally(state.store.as_ref(), TALLY_BUDGET).await?;
    Ok(tally_markup(state, &tally))
}

fn tally_markup(state: &AppState, tally: &WorkflowTally) -> Markup {
    let more = if tally.truncated { "+" } else { "" };
    html! {
        @if tally.active + tally.completed + tally.failed > 0 {
            section.counts aria-label="Workflows per state" data-workflow-tally {
                @for (name, n) in [("active", tally.active), ("completed", tally.completed), ("failed", tally.failed)] {
                    a.count href=(link(state, "/workflows")) data-workflow-state=(name) {
                        span.label { (name) " workflows" }
                        span.number { (thousands(i64::try_from(n).unwrap_or(i64::MAX))) (more) }
                    }
                }
            }
        }
    }
}
