//! `duraq schedule replace|cancel|wake|get`: stable schedule keys.
//! Keys and job options are validated before the store is opened. The actions
//! print the store's answer as one JSON object (`{"jobId","previousJobId",
//! "previousStatus"}`, `{"jobId","outcome"}`); `get` prints a table of the key's
//! jobs with readable times, or `{"currentJob","latestTerminalJob"}` with `--json`.
//!
//! Outcomes: cancelling or waking a key with no owner is an answer
//! (`"outcome":"not_found"`, exit 0: the key's state is what was asked for or
//! there is nothing to do); only bad input and store failures exit 1.

use anyhow::Result;
use duraq_core::{NewJob, ScheduleKey, ScheduledJobs};

use crate::args::ScheduleCommand;
use crate::db::Database;
use crate::output::{print_json, status_time, table, to_json};
use crate::parse::{flag_error, job_options};

pub async fn run(db: &Database, cmd: ScheduleCommand, json: bool) -> Result<()> {
    let value = match cmd {
        ScheduleCommand::Replace { key, name, job } => {
            let key = ScheduleKey::new(key)?;
            let (args, opts) = job_options(&job)?;
            let job = NewJob::new(&name, args, opts).map_err(flag_error)?;
            to_json(&db.open().await?.replace_scheduled(&key, job).await?)
        }
        ScheduleCommand::Cancel { key } => {
            let key = ScheduleKey::new(key)?;
            to_json(
                &db.open_existing(false)
                    .await?
                    .cancel_scheduled(&key)
                    .await?,
            )
        }
        ScheduleCommand::Wake { key } => {
            let key = ScheduleKey::new(key)?;
            to_json(&db.open_existing(false).await?.wake_scheduled(&key).await?)
        }
        ScheduleCommand::Get {
            key,
            include_latest_terminal,
        } => {
            let key = ScheduleKey::new(key)?;
            let jobs = db
                .open_existing(false)
                .await?
                .get_scheduled(&key, include_latest_terminal)
                .await?;
            if !json {
                print!("{}", scheduled_table(&jobs, include_latest_terminal));
                return Ok(());
            }
            to_json(&jobs)
        }
    };
    print_json(&value);
    Ok(())
}

/// The key's owner (and newest terminal job) as a table.
fn scheduled_table(jobs: &ScheduledJobs, with_terminal: bool) -> String {
    let now = crate::parse::now_ms();
    let mut rows = Vec::new();
    let mut row = |role: &str, job: &Option<duraq_core::Job>| match job {
        Some(j) => rows.push(vec![
            role.to_string(),
            j.id.clone(),
            j.job_name.clone(),
            j.status.to_string(),
            j.schedule_order
                .map_or_else(|| "-".into(), |o| o.to_string()),
            status_time(j, now),
        ]),
        None => rows.push(vec![
            role.to_string(),
            "-".into(),
            "".into(),
            "".into(),
            "".into(),
            "".into(),
        ]),
    };
    row("current", &jobs.current_job);
    if with_terminal {
        row("latest terminal", &jobs.latest_terminal_job);
    }
    table(&["ROLE", "ID", "NAME", "STATUS", "ORDER", "WHEN"], &rows)
}
