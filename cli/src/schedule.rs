//! `duraq schedule replace|cancel|wake|get`: the stable schedule keys of SPEC §5.
//! Keys and job options are validated before the store is opened; each command
//! prints the store's result object as-is (`{"jobId","previousJobId",
//! "previousStatus"}`, `{"jobId","outcome"}`, `{"currentJob","latestTerminalJob"}`).

use anyhow::Result;
use duraq_core::{NewJob, ScheduleKey};

use crate::args::ScheduleCommand;
use crate::db::Database;
use crate::output::{print_json, to_json};
use crate::parse::job_options;

pub async fn run(db: &Database, cmd: ScheduleCommand) -> Result<()> {
    let value = match cmd {
        ScheduleCommand::Replace { key, name, job } => {
            let key = ScheduleKey::new(key)?;
            let (args, opts) = job_options(&job)?;
            let job = NewJob::new(&name, args, opts)?;
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
            to_json(
                &db.open_existing(false)
                    .await?
                    .get_scheduled(&key, include_latest_terminal)
                    .await?,
            )
        }
    };
    print_json(&value);
    Ok(())
}
