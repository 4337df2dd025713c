//! `duraq schedule replace|cancel|wake|get`: stable schedule keys.
//! Keys and job options are validated before the store is opened. The actions
//! print the store's answer as one JSON object (`{"jobId","previousJobId",
//! "previousStatus","previousStopped"}`, `{"jobId","outcome"}`); `get` prints a table of the key's
//! jobs with readable times, or `{"currentJob","latestTerminalJob"}` with `--json`.
//!
//! Outcomes: cancelling or waking a key with no owner is an answer
//! (`"outcome":"not_found"`, exit 0: the key's state is what was asked for or
//! there is nothing to do); only bad input and store failures exit 1.

use anyhow::Result;
use duraq_core::inspect::ScheduledJobs;
use duraq_core::{NewJob, RunningOwner, ScheduleKey};

use crate::args::ScheduleCommand;
use crate::db::{closing, Database};
use crate::output::{print_json, status_time, table, to_json};
use crate::parse::{flag_error, job_options};

pub async fn run(db: &Database, cmd: ScheduleCommand, json: bool) -> Result<()> {
    let running = |stop: bool| {
        if stop {
            RunningOwner::Stop
        } else {
            RunningOwner::KeepRunning
        }
    };
    let value = match cmd {
        ScheduleCommand::Replace {
            key,
            name,
            stop_running,
            job,
        } => {
            let key = ScheduleKey::new(key)?;
            let (args, opts) = job_options(&job)?;
            crate::builtin::checked_args(&name, &args)?;
            let job = NewJob::new(&name, args, opts).map_err(flag_error)?;
            let store = db.open().await?;
            let running = running(stop_running);
            to_json(
                &closing(&store, async {
                    Ok(store.replace_scheduled(&key, job, running).await?)
                })
                .await?,
            )
        }
        ScheduleCommand::Cancel { key, stop_running } => {
            let key = ScheduleKey::new(key)?;
            let store = db.open_existing(false).await?;
            let running = running(stop_running);
            to_json(
                &closing(&store, async {
                    Ok(store.cancel_scheduled(&key, running).await?)
                })
                .await?,
            )
        }
        ScheduleCommand::Wake { key } => {
            let key = ScheduleKey::new(key)?;
            let store = db.open_existing(false).await?;
            to_json(&closing(&store, async { Ok(store.wake_scheduled(&key).await?) }).await?)
        }
        ScheduleCommand::Get {
            key,
            include_latest_terminal,
        } => {
            let key = ScheduleKey::new(key)?;
            let store = db.open_existing(false).await?;
            let jobs = closing(&store, async {
                Ok(store.get_scheduled(&key, include_latest_terminal).await?)
            })
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
            j.status.label().to_owned(),
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
