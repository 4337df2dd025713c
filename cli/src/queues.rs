//! `duraq queues`: counts per queue and status with each queue's latency (the age
//! of its oldest due queued job) and whether it is paused, from one
//! `queue_snapshot`; `duraq queues pause|resume <QUEUE>`.
//! None of them creates a database (`open_existing`); pause and resume write
//! one row and always print JSON, like other actions. The listing also warns
//! about due jobs that no alive worker handles (`Inspect::unhandled_jobs`: a
//! typo'd job name, or a queue nobody serves), judging workers by
//! `--stale-after` like `duraq workers`.

use anyhow::Result;
use clap::Subcommand;
use duraq_core::inspect::{DueJobGroup, QueueCounts, QueueSnapshot, WorkerState};

use crate::db::Database;
use crate::display::{count, terminal_safe, thousands};
use crate::output::{print_json, table};
use crate::parse::{duration_ms, queue_name};

/// `duraq queues pause|resume <QUEUE>`: both print
/// `{"queue":…,"paused":true|false,"changed":true|false}`.
#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Pause a queue: no worker claims its jobs from its next poll on; running
    /// jobs finish and report; enqueueing into it still works.
    #[command(after_long_help = crate::examples::QUEUES_PAUSE)]
    Pause {
        /// The queue's name (`default` holds the jobs enqueued without
        /// --queue); an empty name is `invalid-queue`.
        queue: String,
    },
    /// Resume a paused queue: its due jobs are claimable again and idle workers
    /// are woken.
    #[command(after_long_help = crate::examples::QUEUES_RESUME)]
    Resume {
        /// The queue's name (`default` holds the jobs enqueued without
        /// --queue); an empty name is `invalid-queue`.
        queue: String,
    },
}

pub async fn run(
    db: &Database,
    action: Option<QueuesCommand>,
    stale_after: &str,
    json: bool,
) -> Result<()> {
    match action {
        None => list(db, duration_ms("--stale-after", stale_after)?, json).await,
        Some(QueuesCommand::Pause { queue }) => {
            set_paused(db, &queue, true, duration_ms("--stale-after", stale_after)?).await
        }
        Some(QueuesCommand::Resume { queue }) => {
            set_paused(
                db,
                &queue,
                false,
                duration_ms("--stale-after", stale_after)?,
            )
            .await
        }
    }
}

/// Pauses or resumes `queue` (validated first: `invalid-queue` opens nothing;
/// an empty name too, which must never mean the `default` queue here).
///
/// Pausing a queue before its first job is allowed (pause, then deploy), so a
/// typo'd name cannot be refused; instead the answer says whether the queue is
/// `known` (it holds or held jobs, is paused, or an alive worker names it in
/// `--queues`) and a pause of an unknown one prints a warning naming it.
async fn set_paused(db: &Database, queue: &str, pause: bool, stale_after_ms: i64) -> Result<()> {
    let queue = queue_name("<QUEUE>", queue)?;
    let store = db.open_existing(false).await?;
    let (changed, known) = crate::db::closing(&store, async {
        let known = store
            .queue_snapshot()
            .await?
            .queues
            .iter()
            .any(|q| q.queue == queue.as_str())
            || store
                .list_workers(stale_after_ms)
                .await?
                .iter()
                .filter(|w| w.state == WorkerState::Alive)
                .any(|w| w.info.queues.iter().flatten().any(|q| q == queue.as_str()));
        let changed = if pause {
            store.pause_queue(&queue).await?
        } else {
            store.resume_queue(&queue).await?
        };
        Ok((changed, known))
    })
    .await?;
    if pause && !known {
        eprintln!("{}", unknown_queue_warning(queue.as_str()));
    }
    print_json(&pause_json(queue.as_str(), pause, changed, known));
    Ok(())
}

/// The warning a pause of a queue nobody has used prints on stderr.
pub fn unknown_queue_warning(queue: &str) -> String {
    format!(
        "warning: no job, paused state or alive worker names queue \"{}\" yet; it is \
         paused now, but check the name (`duraq queues` lists the known ones)",
        terminal_safe(queue)
    )
}

/// `{"queue","paused","changed","known"}`: the queue's state now, whether this
/// call changed it, and whether the queue was known before it.
pub fn pause_json(queue: &str, paused: bool, changed: bool, known: bool) -> serde_json::Value {
    serde_json::json!({"queue": queue, "paused": paused, "changed": changed, "known": known})
}

async fn list(db: &Database, stale_after_ms: i64, json: bool) -> Result<()> {
    let store = db.open_existing(false).await?;
    let (snap, unhandled) = crate::db::closing(&store, async {
        Ok((
            store.queue_snapshot().await?,
            store.unhandled_jobs(stale_after_ms).await?,
        ))
    })
    .await?;
    if json {
        print_json(&snapshot_json(&snap, &unhandled));
    } else {
        print!("{}{}", render(&snap), warnings(&unhandled));
    }
    Ok(())
}

/// `{"queues":[{"queue","counts":{…},"total","latencyMs","paused"}],"revision",
/// "unhandled":[{"queue","jobName","due","oldestScheduledAtMs"}]}`, queues by
/// name; `latencyMs` is null when no queued job of the queue is due;
/// `unhandled` lists due jobs no alive worker handles, by queue and name.
pub fn snapshot_json(snap: &QueueSnapshot, unhandled: &[DueJobGroup]) -> serde_json::Value {
    let queues: Vec<serde_json::Value> = snap.queues.iter().map(queue_json).collect();
    let unhandled: Vec<serde_json::Value> = unhandled
        .iter()
        .map(|g| {
            serde_json::json!({
                "queue": g.queue,
                "jobName": g.job_name,
                "due": g.due,
                "oldestScheduledAtMs": g.oldest_scheduled_at_ms,
            })
        })
        .collect();
    serde_json::json!({"queues": queues, "revision": snap.revision, "unhandled": unhandled})
}

/// One `warning:` line per (queue, job name) that no alive worker handles.
pub(crate) fn warnings(unhandled: &[DueJobGroup]) -> String {
    unhandled
        .iter()
        .map(|g| {
            format!(
                "warning: {} named \"{}\" in queue \"{}\": no alive worker handles them \
                 (see `duraq workers`)\n",
                count(i64::try_from(g.due).unwrap_or(i64::MAX), "due job"),
                terminal_safe(&g.job_name),
                terminal_safe(&g.queue),
            )
        })
        .collect()
}

fn queue_json(q: &QueueCounts) -> serde_json::Value {
    let c = &q.counts;
    serde_json::json!({
        "queue": q.queue,
        "counts": crate::counts::status_counts_json(c),
        "total": c.all,
        "latencyMs": q.latency_ms,
        "paused": q.paused,
    })
}

fn render(snap: &QueueSnapshot) -> String {
    if snap.queues.is_empty() {
        return format!("no jobs (revision {})\n", snap.revision);
    }
    let header = [
        "QUEUE",
        "QUEUED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "ORPHANED",
        "PENDING",
        "LATENCY",
        "PAUSED",
    ];
    let rows: Vec<Vec<String>> = snap
        .queues
        .iter()
        .map(|q| {
            let c = &q.counts;
            // `table` makes every cell terminal-safe, the queue name included.
            let mut row = vec![q.queue.clone()];
            row.extend(
                [
                    c.queued,
                    c.handed_off,
                    c.completed,
                    c.failed,
                    c.cancelled,
                    c.orphaned,
                    c.pending,
                ]
                .map(thousands),
            );
            row.push(q.latency_ms.map_or_else(|| "-".to_owned(), latency));
            row.push(if q.paused { "yes" } else { "-" }.to_owned());
            row
        })
        .collect();
    format!("{}revision {}\n", table(&header, &rows), snap.revision)
}

/// A latency in its largest whole unit: `0 s`, `42 s`, `3 min`, `5 h`, `2 d`.
fn latency(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 48 * 3600 => format!("{} h", s / 3600),
        s => format!("{} d", thousands(s / 86_400)),
    }
}

#[cfg(test)]
mod tests;
