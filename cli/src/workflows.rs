//! `duraq workflows`: named groups of jobs that wait for each other by step
//! name (`docs/workflows.md`). `list` pages through the workflows
//! ([`crate::workflow_list`]); `show W` lists a workflow's steps with their
//! status, what each waits for and its output's size, and the counts per
//! status; `cancel W` cancels every step not finished; `retry W` retries every
//! failed, orphaned or operator-cancelled step, which gives back what their
//! failure cancelled. `enqueue FILE.json` reads
//! `{"name", "idempotencyKey"?, "steps": [{"step", "job", "args"?, "after"?:
//! [step…], "onDependencyFailure"?, and any enqueue option}]}`, checks the whole
//! graph before the database is opened (`invalid-workflow`, `duplicate-step`,
//! `dependency-not-found`, `workflow-cycle`: nothing written), inserts every
//! step in one transaction and prints `{"workflowId", "jobs": {step: jobId},
//! "replayed"}`. `append W FILE.json` adds steps to W (`workflows_append.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;
use duraq_core::rules::was_cancelled_by_dependency;
use duraq_core::{
    enqueue_workflow, workflow_steps, BulkAction, EnqueueOptions, Job, JobStatus, NewJob, Workflow,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::db::Database;
use crate::output::{print_json, table, CliError};

#[derive(Debug, Subcommand)]
pub enum WorkflowsCommand {
    /// Insert the workflow FILE describes (JSON), every step or none.
    #[command(after_long_help = crate::examples::WORKFLOWS_ENQUEUE)]
    Enqueue {
        /// The workflow file (`-` reads standard input).
        file: PathBuf,
    },
    /// The workflows, newest first: state, steps, steps per status.
    #[command(after_long_help = crate::examples::WORKFLOWS_LIST)]
    List {
        /// Continue after the page that ended at this workflow id (its `next`).
        #[arg(long, value_name = "ID")]
        before: Option<String>,
        /// At most this many workflows.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// The steps of workflow W: status, job id, what each waits for, output size.
    #[command(after_long_help = crate::examples::WORKFLOWS_SHOW)]
    Show {
        /// The workflow id, as `workflows enqueue` printed it.
        workflow_id: String,
    },
    /// Cancel every step of workflow W that has not finished.
    #[command(after_long_help = crate::examples::WORKFLOWS_CANCEL)]
    Cancel {
        /// The workflow id.
        workflow_id: String,
    },
    /// Retry every failed, orphaned or operator-cancelled step of workflow W;
    /// the steps their failure cancelled wait for them again.
    #[command(after_long_help = crate::examples::WORKFLOWS_RETRY)]
    Retry {
        /// The workflow id.
        workflow_id: String,
    },
    /// Add the steps FILE describes (JSON) to workflow W, every one or none;
    /// they may wait for W's steps by name.
    #[command(after_long_help = crate::examples::WORKFLOWS_APPEND)]
    Append {
        /// The workflow id.
        workflow_id: String,
        /// The steps file (`-` reads standard input).
        file: PathBuf,
    },
}

pub async fn run(db: &Database, command: WorkflowsCommand, json: bool) -> Result<()> {
    match command {
        WorkflowsCommand::List { before, limit } => {
            crate::workflow_list::run(db, before, limit, json).await
        }
        WorkflowsCommand::Show { workflow_id } => {
            let store = db.open().await?;
            let jobs: Vec<Job> = crate::db::closing(&store, async {
                Ok(workflow_steps(store.as_ref(), &workflow_id).await?)
            })
            .await?;
            if json {
                print_json(&show_json(&workflow_id, &jobs));
            } else {
                print!("{}", show_table(&jobs));
            }
            Ok(())
        }
        WorkflowsCommand::Cancel { workflow_id } => {
            act(db, &workflow_id, BulkAction::Cancel, |j| {
                !j.status.is_terminal()
            })
            .await
        }
        WorkflowsCommand::Retry { workflow_id } => {
            act(db, &workflow_id, BulkAction::Retry, |j| {
                matches!(j.status, JobStatus::Failed | JobStatus::Orphaned)
                    || (j.status == JobStatus::Cancelled && !was_cancelled_by_dependency(j))
            })
            .await
        }
        WorkflowsCommand::Enqueue { file } => {
            let workflow = parse_workflow(&read_file(&file)?)?;
            let store = db.open().await?;
            let outcome = crate::db::closing(&store, async {
                Ok(enqueue_workflow(store.as_ref(), workflow).await?)
            })
            .await?;
            print_json(&serde_json::to_value(outcome)?);
            Ok(())
        }
        WorkflowsCommand::Append { workflow_id, file } => {
            crate::workflows_append::run(db, &workflow_id, &read_file(&file)?).await
        }
    }
}

/// The text of a workflow or steps file (`-`: standard input).
fn read_file(file: &Path) -> Result<String> {
    if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading standard input")
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
    }
}

/// Applies `action` to the steps `chosen` picks, in batches; prints
/// `{"workflowId","action","changed","skipped"}`.
async fn act(
    db: &Database,
    workflow_id: &str,
    action: BulkAction,
    chosen: impl Fn(&Job) -> bool,
) -> Result<()> {
    let store = db.open().await?;
    let (changed, skipped) = crate::db::closing(&store, async {
        let jobs = workflow_steps(store.as_ref(), workflow_id).await?;
        let ids: Vec<String> = jobs
            .iter()
            .filter(|j| chosen(j))
            .map(|j| j.id.clone())
            .collect();
        let (mut changed, mut skipped) = (0, 0);
        for batch in ids.chunks(1_000) {
            let done = store.act_on_jobs(action, batch).await?;
            (changed, skipped) = (changed + done.changed, skipped + done.skipped);
        }
        Ok((changed, skipped))
    })
    .await?;
    print_json(&json!({
        "workflowId": workflow_id,
        "action": action.as_str(),
        "changed": changed,
        "skipped": skipped,
    }));
    Ok(())
}

/// `show --json`: the counts per status and each step.
fn show_json(workflow_id: &str, jobs: &[Job]) -> Value {
    let mut counts: BTreeMap<&str, i64> = JobStatus::ALL.iter().map(|s| (s.as_str(), 0)).collect();
    for job in jobs {
        *counts.entry(job.status.as_str()).or_default() += 1;
    }
    let step_of = step_names(jobs);
    let steps: Vec<Value> = jobs
        .iter()
        .map(|j| {
            json!({
                "step": j.step,
                "jobId": j.id,
                "jobName": j.job_name,
                "status": j.status.as_str(),
                "dependsOn": waits_for(j, &step_of),
                "openDependencies": j.open_dependencies,
                "outputBytes": j.output.as_ref().map(|o| o.to_string().len()),
            })
        })
        .collect();
    json!({"workflowId": workflow_id, "counts": counts, "total": jobs.len(), "steps": steps})
}

/// The people's table of `show`.
fn show_table(jobs: &[Job]) -> String {
    let step_of = step_names(jobs);
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                j.step.clone().unwrap_or_default(),
                j.status.label().to_owned(),
                j.id.clone(),
                match waits_for(j, &step_of).join(", ") {
                    w if w.is_empty() => "-".to_owned(),
                    w => w,
                },
                j.output
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |o| format!("{} B", o.to_string().len())),
            ]
        })
        .collect();
    table(&["STEP", "STATUS", "JOB", "WAITS FOR", "OUTPUT"], &rows)
}

fn step_names(jobs: &[Job]) -> HashMap<&str, &str> {
    jobs.iter()
        .filter_map(|j| Some((j.id.as_str(), j.step.as_deref()?)))
        .collect()
}

/// What `job` waits for: step names within the workflow, job ids outside it.
fn waits_for(job: &Job, step_of: &HashMap<&str, &str>) -> Vec<String> {
    job.depends_on
        .iter()
        .map(|d| {
            step_of
                .get(d.job_id.as_str())
                .map_or_else(|| d.job_id.clone(), |s| (*s).to_owned())
        })
        .collect()
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
