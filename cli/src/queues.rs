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
mod tests {
    use duraq_core::inspect::{QueueCounts, QueueSnapshot};

    use super::*;

    fn snap() -> QueueSnapshot {
        let queue = |name: &str, counts, oldest| {
            QueueCounts::new(name.into(), counts, oldest, 100_000).unwrap()
        };
        QueueSnapshot::new(
            [1_200, 3, 40_000, 0, 0, 0, 0],
            7,
            100_000,
            vec![
                queue("mail", [1_200, 3, 0, 0, 0, 0, 0], Some(97_000)),
                queue("video\u{1b}[2J", [0, 0, 40_000, 0, 0, 0, 0], None),
            ],
        )
        .with_paused(["mail".to_owned(), "quiet".to_owned()])
    }

    #[test]
    fn table_has_a_row_per_queue_with_latency() {
        let out = render(&snap());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("QUEUE"), "{out}");
        assert!(lines[0].ends_with("PAUSED"), "{out}");
        assert!(
            lines[1].starts_with("mail") && lines[1].contains(" 3 s ") && lines[1].ends_with("yes"),
            "{out}"
        );
        assert!(lines[1].contains("1,200"), "{out}");
        assert!(
            lines[2].starts_with("quiet") && lines[2].ends_with("yes"),
            "a paused queue without jobs is listed: {out}"
        );
        assert!(
            lines[3].ends_with("-") && lines[3].contains("40,000"),
            "{out}"
        );
        assert!(!out.contains('\u{1b}'), "queue names are escaped: {out:?}");
        assert_eq!(lines[4], "revision 7");
    }

    #[test]
    fn json_is_camel_case_with_null_latency() {
        let v = snapshot_json(&snap(), &[]);
        assert_eq!(v["revision"], 7);
        assert_eq!(v["queues"][0]["counts"]["handedOff"], 3);
        assert_eq!(v["queues"][0]["total"], 1_203);
        assert_eq!(v["queues"][0]["latencyMs"], 3_000);
        assert!(v["queues"][2]["latencyMs"].is_null());
        assert_eq!(v["queues"][0]["paused"], true);
        assert_eq!(v["queues"][1]["counts"]["queued"], 0);
        assert_eq!(v["queues"][2]["paused"], false);
    }

    #[test]
    fn unhandled_jobs_are_warned_about_escaped_and_listed_in_json() {
        let group = DueJobGroup {
            queue: "mail".into(),
            job_name: "snd\u{1b}[2J".into(),
            due: 1_200,
            oldest_scheduled_at_ms: 5,
        };
        let text = warnings(std::slice::from_ref(&group));
        assert!(text.starts_with("warning: 1,200 due jobs named"), "{text}");
        assert!(text.contains("\"mail\""), "{text}");
        assert!(!text.contains('\u{1b}'), "escaped: {text:?}");
        assert_eq!(warnings(&[]), "");
        let v = snapshot_json(&snap(), &[group]);
        assert_eq!(v["unhandled"][0]["jobName"], "snd\u{1b}[2J");
        assert_eq!(v["unhandled"][0]["due"], 1_200);
        assert_eq!(v["unhandled"][0]["oldestScheduledAtMs"], 5);
        assert_eq!(
            snapshot_json(&snap(), &[])["unhandled"],
            serde_json::json!([])
        );
    }

    #[test]
    fn pause_answers_say_state_and_change() {
        assert_eq!(
            pause_json("mail", true, false, true),
            serde_json::json!({"queue": "mail", "paused": true, "changed": false, "known": true})
        );
    }

    #[test]
    fn latencies_read_in_their_largest_unit() {
        assert_eq!(latency(0), "0 s");
        assert_eq!(latency(59_999), "59 s");
        assert_eq!(latency(180_000), "3 min");
        assert_eq!(latency(5 * 3_600_000), "5 h");
        assert_eq!(latency(3 * 86_400_000), "3 d");
    }
}
