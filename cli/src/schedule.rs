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
use clap::Subcommand;
use duraq_core::inspect::ScheduledJobs;
use duraq_core::{NewJob, RunningOwner, ScheduleKey};

use crate::db::{closing, Database};
use crate::job_view::status_time;
use crate::options::{job_options, JobArgs};
use crate::output::{print_json, table, to_json};
use crate::parse::flag_error;

// Parsed once per process: boxing the job flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Insert a new owner for KEY, cancelling a queued previous owner.
    #[command(after_long_help = crate::examples::SCHEDULE_REPLACE)]
    Replace {
        /// The schedule key, e.g. `event:42:reminder`.
        key: String,
        /// The new job's name: which handler runs it.
        name: String,
        /// Also cancel a running previous owner and tell its worker to stop it
        /// (without this flag it runs on; only the key moves).
        #[arg(long)]
        stop_running: bool,
        #[command(flatten)]
        job: JobArgs,
    },
    /// Cancel the queued owner of KEY (or release a running one).
    #[command(after_long_help = crate::examples::SCHEDULE_CANCEL)]
    Cancel {
        /// The schedule key.
        key: String,
        /// Also cancel a running owner and tell its worker to stop it (without
        /// this flag it runs on; only the key is released).
        #[arg(long)]
        stop_running: bool,
    },
    /// Make the future owner of KEY due now.
    #[command(after_long_help = crate::examples::SCHEDULE_WAKE)]
    Wake {
        /// The schedule key.
        key: String,
    },
    /// Show the current owner (and optionally the newest terminal job) of KEY.
    #[command(after_long_help = crate::examples::SCHEDULE_GET)]
    Get {
        /// The schedule key.
        key: String,
        /// Also show the newest completed, failed, cancelled or orphaned job of KEY.
        #[arg(long)]
        include_latest_terminal: bool,
    },
}

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
