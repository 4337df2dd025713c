//! `duraq workflows list`: the workflows, largest id first (newest first for
//! the ids duraq makes), a page at a time (`--before ID` continues where a
//! page ended, as its `next` says), each with its name, its state (`active`,
//! `completed`, `failed`), its steps and their counts per status. One
//! `Inspect::list_workflows` read: its cost is the steps of the workflows listed.
//! `--name N` lists only the workflows named N, through the stores' index of
//! names: one call stays bounded however rare the name.

use anyhow::Result;
use duraq_core::inspect::{utc_time, WorkflowListRequest, WorkflowSummary};
use duraq_core::JobStatus;
use serde_json::{json, Map, Value};

use crate::db::Database;
use crate::error::CliError;
use crate::output::{print_json, table};

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
        let req = WorkflowListRequest {
            before,
            limit,
            name,
        };
        let page = store.list_workflows(&req).await?;
        let next = (page.len() == limit)
            .then(|| page.last().map(|w| w.workflow_id.clone()))
            .flatten();
        anyhow::Ok((page, next))
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
