//! `duraq workflows`: named groups of jobs that wait for each other by step
//! name (`docs/workflows.md`). `enqueue FILE.json` reads
//! `{"name", "idempotencyKey"?, "steps": [{"step", "job", "args"?, "after"?:
//! [step…], "onDependencyFailure"?, and any enqueue option}]}`, checks the whole
//! graph before the database is opened (`invalid-workflow`, `duplicate-step`,
//! `dependency-not-found`, `workflow-cycle`: nothing written), inserts every
//! step in one transaction and prints `{"workflowId", "jobs": {step: jobId},
//! "replayed"}`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use duraq_core::{enqueue_workflow, EnqueueOptions, NewJob, Workflow};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::Database;
use crate::output::{print_json, CliError};

#[derive(Debug, Subcommand)]
pub enum WorkflowsCommand {
    /// Insert the workflow FILE describes (JSON), every step or none.
    #[command(after_long_help = crate::examples::WORKFLOWS_ENQUEUE)]
    Enqueue {
        /// The workflow file (`-` reads standard input).
        file: PathBuf,
    },
}

pub async fn run(db: &Database, command: WorkflowsCommand) -> Result<()> {
    match command {
        WorkflowsCommand::Enqueue { file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?
            };
            let workflow = parse_workflow(&text)?;
            let store = db.open().await?;
            let outcome = crate::db::closing(&store, async {
                Ok(enqueue_workflow(store.as_ref(), workflow).await?)
            })
            .await?;
            print_json(&serde_json::to_value(outcome)?);
            Ok(())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WorkflowFile {
    name: String,
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
}

/// The workflow a file describes, checked as a whole: every error before any
/// store call.
pub fn parse_workflow(text: &str) -> Result<Workflow> {
    let file: WorkflowFile = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the workflow file is not a workflow: {e}")))?;
    let mut workflow = Workflow::new(file.name);
    if let Some(key) = file.idempotency_key {
        workflow = workflow.idempotency_key(key);
    }
    for (n, mut fields) in file.steps.into_iter().enumerate() {
        let text_field = |fields: &mut Map<String, Value>, name: &str| match fields.remove(name) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(invalid(format!("step {} needs a string {name:?}", n + 1))),
        };
        let step = text_field(&mut fields, "step")?;
        let job = text_field(&mut fields, "job")?;
        let args = fields.remove("args").unwrap_or(Value::Array(vec![]));
        let after: Vec<String> = match fields.remove("after") {
            None => Vec::new(),
            Some(v) => serde_json::from_value(v).map_err(|_| {
                invalid(format!("step {step:?}: \"after\" is a list of step names"))
            })?,
        };
        let options: EnqueueOptions = serde_json::from_value(Value::Object(fields))
            .map_err(|e| invalid(format!("step {step:?}: {e}")))?;
        let job = NewJob::new(&job, args, options)?;
        workflow = workflow.step_after(step, job, after);
    }
    Ok(workflow)
}

fn invalid(message: String) -> anyhow::Error {
    CliError::new("invalid-workflow", message).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> String {
        let err = parse_workflow(text)
            .and_then(|w| Ok(w.build()?))
            .unwrap_err();
        match err.downcast_ref::<CliError>() {
            Some(e) => e.code.to_owned(),
            None => err
                .downcast_ref::<duraq_core::Error>()
                .map(|e| e.code().as_str().to_owned())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn a_file_becomes_a_checked_workflow() {
        let plan = parse_workflow(
            r#"{"name": "onboard", "steps": [
                {"step": "signup", "job": "duraq.echo", "args": {"user": 7}},
                {"step": "summary", "job": "duraq.echo", "after": ["signup"],
                 "onDependencyFailure": "run", "queue": "reports", "maxRetries": 2}
            ]}"#,
        )
        .unwrap()
        .build()
        .unwrap();
        let summary = &plan.jobs[1];
        assert_eq!(summary.queue().as_str(), "reports");
        assert_eq!(summary.max_retries(), 2);
        assert_eq!(summary.dependencies()[0].job_id, plan.steps["signup"]);
        assert_eq!(summary.dependencies()[0].on_failure.as_str(), "run");
    }

    #[test]
    fn each_bad_file_has_its_code() {
        assert_eq!(code("[]"), "invalid-workflow");
        assert_eq!(
            code(r#"{"name": "w", "steps": [{"job": "j"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": "b"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            code(
                r#"{"name": "w", "steps": [{"step": "a", "job": "j", "onDependencyFailure": "skip"}]}"#
            ),
            "invalid-workflow"
        );
        assert_eq!(
            code(
                r#"{"name": "w", "steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}"#
            ),
            "duplicate-step"
        );
        assert_eq!(
            code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["x"]}]}"#),
            "dependency-not-found"
        );
        assert_eq!(
            code(
                r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["b"]}, {"step": "b", "job": "j", "after": ["a"]}]}"#
            ),
            "workflow-cycle"
        );
        assert_eq!(
            code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "maxRetries": -1}]}"#),
            "invalid-max-retries"
        );
    }
}
