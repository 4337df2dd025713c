//! `GET /workflows/{id}`: one workflow (`docs/workflows.md`) as a graph and a
//! table. The graph is drawn here, on the server, as inline SVG (no script,
//! no external asset): each step a box coloured by its status and linked to
//! its job, in columns by depth (a step stands one column right of the
//! deepest step it waits for), with an edge from each dependency to its
//! dependent. A workflow larger than [`MAX_DRAWN`] steps gets the table alone.
//! The steps are read with `duraq_core::driver::workflow_steps` (pages of the indexed
//! search by `workflowId`).

use std::collections::HashMap;

use axum::extract::{Path, State as AxumState};
use axum::response::Response;
use duraq_core::driver::workflow_steps;
use duraq_core::{Job, JobStatus};
use maud::{html, Markup};

use super::store_error;
use super::table::id_cell;
use crate::format::{label, urlencode};
use crate::format::{thousands, visible};
use crate::html::{link, page};
use crate::{AppState, State};

/// The most steps drawn as a graph.
pub const MAX_DRAWN: usize = 200;

const BOX_W: i64 = 168;
const BOX_H: i64 = 40;
const COL: i64 = 216;
const ROW: i64 = 60;
const PAD: i64 = 12;

/// `GET /workflows/{id}`.
pub async fn detail(AxumState(state): AxumState<State>, Path(id): Path<String>) -> Response {
    let jobs = match workflow_steps(state.store.as_ref(), &id).await {
        Ok(jobs) => jobs,
        Err(e) => return store_error(&state, "workflow", &e),
    };
    let body = html! {
        h1 { "Workflow " code { (visible(&id)) } }
        div.counts data-workflow-counts {
            @for status in JobStatus::ALL {
                @let n = jobs.iter().filter(|j| j.status == status).count();
                @if n > 0 {
                    div.count data-status=(status.as_str()) {
                        span.label { (label(status)) } " "
                        span.number { (thousands(i64::try_from(n).unwrap_or(i64::MAX))) }
                    }
                }
            }
        }
        @if jobs.len() <= MAX_DRAWN {
            (graph(&state, &jobs))
        } @else {
            p.muted data-graph-omitted { "The graph is drawn for workflows of at most "
                (MAX_DRAWN) " steps; this one has " (jobs.len()) "." }
        }
        h2 { "Steps" }
        (steps_table(&state, &jobs))
    };
    page(
        &state,
        "workflow",
        &format!("Workflow {}", visible(&id)),
        body,
    )
}

/// Each step's column: 0 for a step that waits for no step of the workflow,
/// else one more than the deepest step it waits for.
fn depths(jobs: &[Job]) -> Vec<usize> {
    let index: HashMap<&str, usize> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.id.as_str(), i))
        .collect();
    let mut depth = vec![0usize; jobs.len()];
    // The steps form a DAG; relaxing every edge as many times as there are
    // steps reaches the longest paths.
    for _ in 0..jobs.len() {
        let mut changed = false;
        for (i, job) in jobs.iter().enumerate() {
            for dep in &job.depends_on {
                if let Some(&d) = index.get(dep.job_id.as_str()) {
                    if depth[i] < depth[d] + 1 {
                        depth[i] = depth[d] + 1;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The graph as inline SVG.
fn graph(state: &AppState, jobs: &[Job]) -> Markup {
    let depth = depths(jobs);
    let mut rows_in_col: HashMap<usize, i64> = HashMap::new();
    let place: Vec<(i64, i64)> = depth
        .iter()
        .map(|&col| {
            let row = rows_in_col.entry(col).or_insert(0);
            let at = (PAD + col as i64 * COL, PAD + *row * ROW);
            *row += 1;
            at
        })
        .collect();
    let cols = depth.iter().max().map_or(1, |d| *d as i64 + 1);
    let rows = rows_in_col.values().max().copied().unwrap_or(1);
    let (width, height) = (
        2 * PAD + (cols - 1) * COL + BOX_W,
        2 * PAD + (rows - 1) * ROW + BOX_H,
    );
    let index: HashMap<&str, usize> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.id.as_str(), i))
        .collect();
    html! {
        svg.workflow-graph data-graph xmlns="http://www.w3.org/2000/svg" role="img"
            aria-label="The workflow's steps and what each waits for"
            width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) {
            @for (i, job) in jobs.iter().enumerate() {
                @for dep in &job.depends_on {
                    @if let Some(&d) = index.get(dep.job_id.as_str()) {
                        @let (x1, y1) = (place[d].0 + BOX_W, place[d].1 + BOX_H / 2);
                        @let (x2, y2) = (place[i].0, place[i].1 + BOX_H / 2);
                        path.edge data-edge=(format!("{}>{}", step_name(&jobs[d]), step_name(job)))
                            d=(format!("M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}", x1 + 24, x2 - 24)) {}
                    }
                }
            }
            @for (i, job) in jobs.iter().enumerate() {
                a href=(link(state, &format!("/jobs/{}", urlencode(&job.id)))) {
                    g.node.(job.status.as_str()) data-step=(step_name(job)) data-status=(job.status.as_str()) {
                        title { (visible(step_name(job))) " (" (label(job.status)) ")" }
                        rect x=(place[i].0) y=(place[i].1) width=(BOX_W) height=(BOX_H) rx="6" {}
                        text x=(place[i].0 + 10) y=(place[i].1 + 17) { (visible(&short(step_name(job)))) }
                        text.sub x=(place[i].0 + 10) y=(place[i].1 + 32) { (label(job.status)) }
                    }
                }
            }
        }
    }
}

fn step_name(job: &Job) -> &str {
    job.step.as_deref().unwrap_or(&job.id)
}

/// At most 22 characters, so the name fits its box (the whole is in `title`).
fn short(name: &str) -> String {
    if name.chars().count() <= 22 {
        return name.to_owned();
    }
    let cut: String = name.chars().take(21).collect();
    format!("{cut}…")
}

fn steps_table(state: &AppState, jobs: &[Job]) -> Markup {
    let step_of: HashMap<&str, &str> = jobs.iter().map(|j| (j.id.as_str(), step_name(j))).collect();
    html! {
        div.table { table data-table="steps" data-steps {
            thead { tr { th { "Step" } th { "Status" } th { "Job" } th { "Waits for" } th.num { "Output" } } }
            tbody {
                @for job in jobs {
                    tr data-step=(step_name(job)) {
                        td { (visible(step_name(job))) }
                        td { span.status.(job.status.as_str()) { (label(job.status)) } }
                        (id_cell(state, &job.id))
                        td {
                            @let waits: Vec<&str> = job.depends_on.iter()
                                .map(|d| step_of.get(d.job_id.as_str()).copied().unwrap_or(d.job_id.as_str()))
                                .collect();
                            @if waits.is_empty() { span.muted { "—" } } @else { (visible(&waits.join(", "))) }
                        }
                        td.num { @match &job.output {
                            Some(o) => { (thousands(i64::try_from(o.to_string().len()).unwrap_or(i64::MAX))) " B" },
                            None => span.muted { "—" },
                        } }
                    }
                }
            }
        } }
    }
}
