//! `duraq workflows list`: the workflows, largest id first (newest first for
//! the ids duraq makes), a page at a time (`--before ID` continues where a
//! page ended, as its `next` says), each with its state (`active`, `completed`,
//! `failed`), its steps and their counts per status. One
//! `Inspect::list_workflows` read: its cost is the steps of the workflows listed.

use anyhow::Result;
use duraq_core::inspect::{utc_time, WorkflowListRequest, WorkflowSummary};
use duraq_core::JobStatus;
use serde_json::{json, Map, Value};

use crate::db::Database;
use crate::output::{print_json, table, CliError};

/// Prints one page of at most `limit` workflows sorting before `before`.
/// `invalid-limit` for a limit of 0, before the database is opened.
pub async fn run(db: &Database, before: Option<String>, limit: usize, json: bool) -> Result<()> {
    if limit == 0 {
        return Err(CliError::new("invalid-limit", "--limit must be at least 1").into());
    }
    let store = db.open().await?;
    let req = WorkflowListRequest { before, limit };
    let workflows =
        crate::db::closing(&store, async { Ok(store.list_workflows(&req).await?) }).await?;
    let next = (workflows.len() == limit)
        .then(|| workflows.last().map(|w| w.workflow_id.clone()))
        .flatten();
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

/// `{"workflowId","state","steps","counts":{status:n},"createdAtMs"}`.
fn summary_json(w: &WorkflowSummary) -> Value {
    let counts: Map<String, Value> = JobStatus::ALL
        .iter()
        .map(|s| (s.as_str().to_owned(), json!(w.counts.get(*s))))
        .collect();
    json!({
        "workflowId": w.workflow_id,
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
                w.state().as_str().to_owned(),
                w.steps().to_string(),
                per_status.join(", "),
                utc_time(w.created_at_ms),
            ]
        })
        .collect();
    table(
        &["WORKFLOW", "STATE", "STEPS", "PER STATUS", "CREATED"],
        &rows,
    )
}
