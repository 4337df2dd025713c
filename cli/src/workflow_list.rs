//! `duraq workflows list`: the workflows, largest id first (newest first for
//! the ids duraq makes), a page at a time (`--before ID` continues where a
//! page ended, as its `next` says), each with its name, its state (`active`,
//! `completed`, `failed`), its steps and their counts per status. One
//! `Inspect::list_workflows` read: its cost is the steps of the workflows listed.
//!
//! `--name N` keeps the workflows named N: the pages are read on until
//! `--limit` of them are found or [`NAME_SCAN`] workflows were read, and
//! `next` says where to continue either way, so one call stays bounded
//! however rare the name.

use anyhow::Result;
use duraq_core::inspect::{utc_time, WorkflowListRequest, WorkflowSummary};
use duraq_core::JobStatus;
use serde_json::{json, Map, Value};

use crate::db::Database;
use crate::error::CliError;
use crate::output::{print_json, table};

/// The most workflows one `--name` call reads.
pub const NAME_SCAN: usize = 10_000;

/// Prints one page of at most `limit` workflows (named `name`) sorting before
/// `before`. `invalid-limit` for a limit of 0, before the database is opened.
pub async fn run(
    db: &Database,
    name: Option<String>,
    before: Option<String>,
    limit: usize,
    json: bool,
) -> Result<()> {
    if limit == 0 {
        return Err(CliError::new("invalid-limit", "--limit must be at least 1").into());
    }
    let store = db.open().await?;
    let (workflows, next) = crate::db::closing(&store, async {
        let Some(name) = name else {
            let req = WorkflowListRequest { before, limit };
            let page = store.list_workflows(&req).await?;
            let next = (page.len() == limit)
                .then(|| page.last().map(|w| w.workflow_id.clone()))
                .flatten();
            return Ok((page, next));
        };
        named(store.as_ref(), &name, before, limit).await
    })
    .await?;
    if json {
        let list: Vec<Value> = workflows.iter().map(summary_json).collect();
        print_json(&json!({"workflows": list, "next": next}));
    } else {
        print!("{}", list_table(&workflows));
        if let Some(next) = next {
            println!("more: duraq workflows list --before {next}");
        }
    }
    Ok(())
}

/// Up to `limit` workflows named `name` before `before`, reading at most
/// [`NAME_SCAN`], and where to continue (`None`: no workflow is left).
async fn named(
    store: &dyn duraq_core::Inspect,
    name: &str,
    mut before: Option<String>,
    limit: usize,
) -> Result<(Vec<WorkflowSummary>, Option<String>)> {
    const PAGE: usize = 500;
    let mut found = Vec::new();
    let mut read = 0;
    while read < NAME_SCAN {
        let req = WorkflowListRequest {
            before: before.clone(),
            limit: PAGE,
        };
        let page = store.list_workflows(&req).await?;
        let full = page.len() == PAGE;
        for w in page {
            read += 1;
            before = Some(w.workflow_id.clone());
            if w.name.as_deref() == Some(name) {
                found.push(w);
                if found.len() == limit {
                    return Ok((found, before));
                }
            }
        }
        if !full {
            return Ok((found, None));
        }
    }
    Ok((found, before))
}

/// `{"workflowId","name","state","steps","counts":{status:n},"createdAtMs"}`.
fn summary_json(w: &WorkflowSummary) -> Value {
    let counts: Map<String, Value> = JobStatus::ALL
        .iter()
        .map(|s| (s.as_str().to_owned(), json!(w.counts.get(*s))))
        .collect();
    json!({
        "workflowId": w.workflow_id,
        "name": w.name,
        "state": w.state().as_str(),
        "steps": w.steps(),
        "counts": counts,
        "createdAtMs": w.created_at_ms,
    })
}

fn list_table(workflows: &[WorkflowSummary]) -> String {
    let rows: Vec<Vec<String>> = workflows
        .iter()
        .map(|w| {
            let per_status: Vec<String> = JobStatus::ALL
                .iter()
                .filter(|s| w.counts.get(**s) > 0)
                .map(|s| format!("{} {}", s.label(), w.counts.get(*s)))
                .collect();
            vec![
                w.workflow_id.clone(),
                w.name.clone().unwrap_or_else(|| "-".to_owned()),
                w.state().as_str().to_owned(),
                w.steps().to_string(),
                per_status.join(", "),
                utc_time(w.created_at_ms),
            ]
        })
        .collect();
    table(
        &[
            "WORKFLOW",
            "NAME",
            "STATE",
            "STEPS",
            "PER STATUS",
            "CREATED",
        ],
        &rows,
    )
}
