//! `duraq workflows`: named groups of jobs that wait for each other by step
//! name (`docs/workflows.md`). `list` pages through the workflows
//! ([`crate::workflow_list`]); `show W` lists a workflow's name and steps with
//! their status, what each waits for and its output's size, and the counts
//! per status (`--watch`: again at each change, until every step has
//! finished); `cancel W` cancels every step not finished; `retry W` retries
//! every failed, orphaned or operator-cancelled step, which gives back what
//! their failure cancelled. W is a workflow id or its unique start, as `jobs
//! show` takes a job's (`ambiguous-id`, `workflow-not-found`).
//! `enqueue FILE.json` reads a workflow file ([`crate::workflow_file`]),
//! checks it whole before the database is opened (`invalid-workflow-file`,
//! `invalid-workflow`, `duplicate-step`, `dependency-not-found`,
//! `workflow-cycle`: nothing written), inserts every step in one transaction
//! and prints `{"workflowId", "jobs": {step: jobId}, "replayed"}`. `append W
//! FILE.json` adds steps to W, whose database must exist.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use duraq_core::driver::rules::was_cancelled_by_dependency;
use duraq_core::driver::workflow_steps;
use duraq_core::inspect::{resolve_workflow, BulkAction};
use duraq_core::{append_workflow, enqueue_workflow, Job, JobStatus};
use serde_json::{json, Value};

use crate::db::Database;
use crate::output::{print_json, table};
use crate::workflow_file::{parse_steps, parse_workflow, read_file};

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
        /// Only the workflows of this name (as the file's `"name"` gave it).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
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
        /// The workflow id, as `workflows enqueue` printed it, or its unique start.
        workflow_id: String,
        /// Print the steps again whenever one changes, and exit once every
        /// step has finished (completed, failed, cancelled or orphaned).
        #[arg(long)]
        watch: bool,
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
        WorkflowsCommand::List {
            name,
            before,
            limit,
        } => crate::workflow_list::run(db, name, before, limit, json).await,
        WorkflowsCommand::Show { workflow_id, watch } => {
            let store = db.open_existing(false).await?;
            crate::db::closing(&store, async {
                let id = resolve_workflow(store.as_ref(), &workflow_id).await?;
                let read = || async { Ok(workflow_steps(store.as_ref(), &id).await?) };
                let to_json = |jobs: &Vec<Job>| show_json(&id, jobs);
                let to_text = |jobs: &Vec<Job>| show_table(&id, jobs);
                if watch {
                    let done = |jobs: &Vec<Job>| jobs.iter().all(|j| j.status.is_terminal());
                    crate::watch::until_done(read, to_json, to_text, done, json).await
                } else {
                    let jobs = read().await?;
                    if json {
                        print_json(&to_json(&jobs));
                    } else {
                        print!("{}", to_text(&jobs));
                    }
                    Ok(())
                }
            })
            .await
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
            let steps = parse_steps(&read_file(&file)?)?;
            // The database must exist: `database-not-found`, nothing created.
            let store = db.open_existing(false).await?;
            let outcome = crate::db::closing(&store, async {
                let id = resolve_workflow(store.as_ref(), &workflow_id).await?;
                Ok(append_workflow(store.as_ref(), steps.append_to(&id)).await?)
            })
            .await?;
            print_json(&serde_json::to_value(outcome)?);
            Ok(())
        }
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
    let store = db.open_existing(false).await?;
    let (workflow_id, changed, skipped) = crate::db::closing(&store, async {
        let workflow_id = resolve_workflow(store.as_ref(), workflow_id).await?;
        let jobs = workflow_steps(store.as_ref(), &workflow_id).await?;
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
        Ok((workflow_id, changed, skipped))
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

/// The workflow's name, as its steps carry it (`None`: stored before names were).
fn name_of(jobs: &[Job]) -> Option<&str> {
    jobs.iter().find_map(|j| j.workflow_name.as_deref())
}

/// `show --json`: the name, the counts per status and each step.
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
    json!({
        "workflowId": workflow_id,
        "name": name_of(jobs),
        "counts": counts,
        "total": jobs.len(),
        "steps": steps,
    })
}

/// The people's table of `show`, under a line with the workflow's name and id.
fn show_table(workflow_id: &str, jobs: &[Job]) -> String {
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
    let title = format!(
        "workflow {} ({workflow_id})\n",
        crate::display::terminal_safe(name_of(jobs).unwrap_or("-"))
    );
    title + &table(&["STEP", "STATUS", "JOB", "WAITS FOR", "OUTPUT"], &rows)
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
