//! `duraq counts [--watch]`: the count snapshot (see `docs/counts.md`). `--watch` prints a new
//! snapshot whenever the revision moves. It polls the snapshot (constant cost by
//! contract) instead of subscribing to deltas, because SQLite publishes deltas
//! only inside the writing process and the writers here are other processes.

use std::time::Duration;

use anyhow::Result;
use clap::Args;
use duraq_core::inspect::CountSnapshot;
use duraq_core::JobStatus;

use crate::db::Database;
use crate::output::{print_json, table};
use crate::signals::Signals;

#[derive(Debug, Args)]
pub struct CountsArgs {
    /// Print a new snapshot whenever the revision moves, until interrupted.
    #[arg(long)]
    pub watch: bool,
}

pub async fn run(db: &Database, watch: bool, json: bool) -> Result<()> {
    // Listen before the first line, so a signal right after it is not missed.
    let mut signals = if watch { Some(Signals::new()?) } else { None };
    let store = db.open_existing(watch).await?;
    crate::db::closing(&store, async {
        let mut last = store.count_snapshot().await?;
        emit(&last, json);
        let Some(signals) = signals.as_mut() else {
            return Ok(());
        };
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = signals.next() => return Ok(()),
                _ = tick.tick() => {
                    let snap = store.count_snapshot().await?;
                    if snap.revision != last.revision {
                        emit(&snap, json);
                        last = snap;
                    }
                }
            }
        }
    })
    .await
}

/// The snapshot in the CLI's JSON style (camelCase keys, so `handedOff`; the
/// total once, as `total`): `{"counts":{…},"total":…,"revision":…}`.
pub fn snapshot_json(snap: &CountSnapshot) -> serde_json::Value {
    serde_json::json!({
        "counts": status_counts_json(&snap.counts),
        "total": snap.total,
        "revision": snap.revision,
    })
}

/// One count per status, camelCase (`handedOff`), as `counts` and `queues` print them.
pub fn status_counts_json(c: &duraq_core::inspect::StatusCounts) -> serde_json::Value {
    serde_json::json!({
        "queued": c.queued,
        "handedOff": c.handed_off,
        "completed": c.completed,
        "failed": c.failed,
        "cancelled": c.cancelled,
        "orphaned": c.orphaned,
        "pending": c.pending,
    })
}

fn emit(snap: &CountSnapshot, json: bool) {
    if json {
        print_json(&snapshot_json(snap));
        return;
    }
    // People read `running`; the JSON keeps `handedOff`.
    let mut header: Vec<&str> = JobStatus::ALL.iter().map(|s| s.label()).collect();
    header.extend(["total", "revision"]);
    let mut row: Vec<String> = snap
        .counts
        .as_array()
        .iter()
        .map(ToString::to_string)
        .collect();
    row.extend([snap.total.to_string(), snap.revision.to_string()]);
    print!("{}", table(&header, &[row]));
}
