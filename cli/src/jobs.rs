//! `duraq jobs list|show|retry|cancel|prune`: operator views and actions on single
//! jobs. Tables by default, one JSON object with `--json`: `{"jobs":[…]}`,
//! `{"job":{…}}` (every §2 field) and `{"deleted":N,"batches":M}`.

use anyhow::Result;
use duraq_core::{Error, JobFilter, JobStatus, PruneRequest};
use serde_json::json;

use crate::args::{JobsCommand, PruneArgs};
use crate::db::Database;
use crate::output::{job_detail, jobs_table, print_json, to_json, CliError};
use crate::parse::duration_ms;

pub async fn run(db: &Database, cmd: JobsCommand, json: bool) -> Result<()> {
    match cmd {
        JobsCommand::List {
            status,
            name,
            queue,
            limit,
        } => {
            let status = status
                .map(|s| {
                    s.parse::<JobStatus>().map_err(|_| {
                        CliError::new(
                            "invalid-status",
                            format!(
                                "unknown status {s:?}; expected one of queued, handed_off, \
                                 completed, failed, cancelled, orphaned"
                            ),
                        )
                    })
                })
                .transpose()?;
            let filter = JobFilter {
                status,
                job_name: name,
                queue,
                limit: Some(limit),
            };
            let jobs = db.open_existing(false).await?.list_jobs(&filter).await?;
            if json {
                print_json(&json!({ "jobs": jobs }));
            } else if jobs.is_empty() {
                println!("no jobs");
            } else {
                print!("{}", jobs_table(&jobs));
            }
        }
        JobsCommand::Show { id } => {
            let job = db
                .open_existing(false)
                .await?
                .get_job(&id)
                .await?
                .ok_or_else(|| Error::job_not_found(&id))?;
            show(&job, json);
        }
        JobsCommand::Retry { id } => {
            show(&db.open_existing(false).await?.retry_job(&id).await?, json)
        }
        JobsCommand::Cancel { id } => {
            show(&db.open_existing(false).await?.cancel_job(&id).await?, json)
        }
        JobsCommand::Prune(p) => prune(db, p, json).await?,
    }
    Ok(())
}

fn show(job: &duraq_core::Job, json: bool) {
    if json {
        print_json(&json!({ "job": to_json(job) }));
    } else {
        print!("{}", job_detail(job));
    }
}

async fn prune(db: &Database, p: PruneArgs, json: bool) -> Result<()> {
    let age = |flag: &str, v: &Option<String>| -> Result<Option<u64>, CliError> {
        v.as_deref()
            .map(|d| duration_ms(flag, d).map(|ms| ms as u64))
            .transpose()
    };
    let req = PruneRequest {
        completed_older_than_ms: age("--completed-older-than", &p.completed_older_than)?,
        failed_older_than_ms: age("--failed-older-than", &p.failed_older_than)?,
        cancelled_older_than_ms: age("--cancelled-older-than", &p.cancelled_older_than)?,
        ..PruneRequest::default()
    };
    let report = db.open_existing(false).await?.prune(&req).await?;
    if json {
        print_json(&to_json(&report));
    } else {
        println!(
            "deleted {} jobs in {} batches",
            report.deleted, report.batches
        );
    }
    Ok(())
}
