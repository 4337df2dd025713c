//! `duraq workflows append W FILE.json`: adds steps to the existing workflow W
//! (`docs/workflows.md`, "Adding steps later"). The file is
//! `{"idempotencyKey"?, "steps": [...]}` with the steps of `workflows enqueue`,
//! whose `after` may name W's steps as well as the new ones. A malformed file is
//! `invalid-workflow` before the database is opened; the database must exist
//! (`database-not-found` otherwise, nothing created). Then the new steps are
//! checked against W's (`workflow-not-found`, `duplicate-step`,
//! `dependency-not-found`, `workflow-cycle`: nothing written) and inserted in one
//! transaction; prints `{"workflowId", "jobs": {step: jobId}, "replayed"}`.

use anyhow::Result;
use duraq_core::{append_workflow, Workflow, WorkflowAppend};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::Database;
use crate::output::print_json;
use crate::workflows::{invalid, parse_step};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AppendFile {
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
}

/// Runs `workflows append`: `text` is the steps file's content.
pub async fn run(db: &Database, workflow_id: &str, text: &str) -> Result<()> {
    let append = parse_append(workflow_id, text)?;
    let store = db.open_existing(false).await?;
    let outcome = crate::db::closing(&store, async {
        Ok(append_workflow(store.as_ref(), append).await?)
    })
    .await?;
    print_json(&serde_json::to_value(outcome)?);
    Ok(())
}

/// The steps a file adds to workflow `workflow_id`; every error of the file
/// itself before any store call.
pub fn parse_append(workflow_id: &str, text: &str) -> Result<WorkflowAppend> {
    let file: AppendFile = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the steps file is not a list of steps: {e}")))?;
    if file.steps.is_empty() {
        return Err(invalid("the steps file has no steps".to_owned()));
    }
    let mut append = Workflow::append_to(workflow_id);
    if let Some(key) = file.idempotency_key {
        append = append.idempotency_key(key);
    }
    for (n, fields) in file.steps.into_iter().enumerate() {
        let (step, job, after) = parse_step(n, fields)?;
        append = append.step_after(step, job, after);
    }
    Ok(append)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::CliError;

    fn code(text: &str) -> String {
        let err = parse_append("w", text).unwrap_err();
        match err.downcast_ref::<CliError>() {
            Some(e) => e.code.to_owned(),
            None => err
                .downcast_ref::<duraq_core::Error>()
                .map(|e| e.code().as_str().to_owned())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn a_file_becomes_steps_for_the_workflow() {
        let append = parse_append(
            "0193a0b0-0000-8000-8000-00000000000a",
            r#"{"idempotencyKey": "add-report", "steps": [
                {"step": "report", "job": "duraq.echo", "after": ["export"], "queue": "reports"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(append.workflow_id(), "0193a0b0-0000-8000-8000-00000000000a");
    }

    #[test]
    fn each_bad_file_has_its_code() {
        assert_eq!(code("[]"), "invalid-workflow");
        assert_eq!(code(r#"{"steps": []}"#), "invalid-workflow");
        assert_eq!(
            code(r#"{"name": "w", "steps": [{"step": "a", "job": "j"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(code(r#"{"steps": [{"job": "j"}]}"#), "invalid-workflow");
        assert_eq!(
            code(r#"{"steps": [{"step": "a", "job": "j", "after": "b"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            code(r#"{"steps": [{"step": "a", "job": "j", "maxRetries": -1}]}"#),
            "invalid-max-retries"
        );
    }
}
