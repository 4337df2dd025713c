//! The files `duraq workflows enqueue` and `append` read: a workflow
//! `{"name", "idempotencyKey"?, "steps": [...]}` and a steps file
//! `{"idempotencyKey"?, "steps": [...]}`, each step `{"step", "job", "args"?,
//! "after"?: [step…], "onDependencyFailure"?, and any enqueue option}`. Every
//! error of a file itself is `invalid-workflow` (or an enqueue option's own
//! code), found before the database is opened.

use std::path::Path;

use anyhow::{Context, Result};
use duraq_core::{EnqueueOptions, NewJob, Workflow, WorkflowAppend};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::output::CliError;

/// The text of a workflow or steps file (`-`: standard input).
pub fn read_file(file: &Path) -> Result<String> {
    if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading standard input")
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
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
    for (n, fields) in file.steps.into_iter().enumerate() {
        let (step, job, after) = parse_step(n, fields)?;
        workflow = workflow.step_after(step, job, after);
    }
    Ok(workflow)
}

/// Step `n` (from 0) of a file: `{"step", "job", "args"?, "after"?: [step…],
/// "onDependencyFailure"?, and any enqueue option}` → its name, its job and
/// the steps it waits for.
pub(crate) fn parse_step(
    n: usize,
    mut fields: Map<String, Value>,
) -> Result<(String, NewJob, Vec<String>)> {
    let text_field = |fields: &mut Map<String, Value>, name: &str| match fields.remove(name) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(invalid(format!("step {} needs a string {name:?}", n + 1))),
    };
    let step = text_field(&mut fields, "step")?;
    let job = text_field(&mut fields, "job")?;
    let args = fields.remove("args").unwrap_or(Value::Array(vec![]));
    let after: Vec<String> = match fields.remove("after") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v)
            .map_err(|_| invalid(format!("step {step:?}: \"after\" is a list of step names")))?,
    };
    let options: EnqueueOptions = serde_json::from_value(Value::Object(fields))
        .map_err(|e| invalid(format!("step {step:?}: {e}")))?;
    let job = NewJob::new(&job, args, options)?;
    Ok((step, job, after))
}

pub(crate) fn invalid(message: String) -> anyhow::Error {
    CliError::new("invalid-workflow", message).into()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AppendFile {
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
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

    /// The stable code of a refused file.
    fn code_of(result: Result<()>) -> String {
        let err = result.unwrap_err();
        match err.downcast_ref::<CliError>() {
            Some(e) => e.code.to_owned(),
            None => err
                .downcast_ref::<duraq_core::Error>()
                .map(|e| e.code().as_str().to_owned())
                .unwrap_or_default(),
        }
    }

    fn code(text: &str) -> String {
        code_of(parse_workflow(text).and_then(|w| Ok(w.build()?)).map(drop))
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

    fn append_code(text: &str) -> String {
        code_of(parse_append("w", text).map(drop))
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
    fn each_bad_steps_file_has_its_code() {
        assert_eq!(append_code("[]"), "invalid-workflow");
        assert_eq!(append_code(r#"{"steps": []}"#), "invalid-workflow");
        assert_eq!(
            append_code(r#"{"name": "w", "steps": [{"step": "a", "job": "j"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            append_code(r#"{"steps": [{"job": "j"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            append_code(r#"{"steps": [{"step": "a", "job": "j", "after": "b"}]}"#),
            "invalid-workflow"
        );
        assert_eq!(
            append_code(r#"{"steps": [{"step": "a", "job": "j", "maxRetries": -1}]}"#),
            "invalid-max-retries"
        );
    }
}
