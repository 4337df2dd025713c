//! `duraq workers`: the registered worker processes from one `list_workers`,
//! each alive or stale by `--stale-after` (the worker's default), with its
//! running jobs (a count in the table, ids and names with `--jobs` and in
//! JSON). Opens an existing database only.

use anyhow::Result;
use clap::Args;
use duraq_core::inspect::WorkerRecord;

use crate::db::Database;
use crate::display::{relative, when};
use crate::output::{print_json, table};
use crate::parse::duration_ms;

/// `duraq workers`.
#[derive(Debug, Args)]
pub struct WorkersArgs {
    /// Also list each running job (worker, job id, name) below the table
    /// (`--json` always includes them).
    #[arg(long)]
    pub jobs: bool,
    /// A worker whose last heartbeat is older than this is stale (use the
    /// timeout your workers run with).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub stale_after: String,
}

pub async fn run(db: &Database, a: &WorkersArgs, json: bool) -> Result<()> {
    let stale_after = duration_ms("--stale-after", &a.stale_after)?;
    let store = db.open_existing(false).await?;
    let workers = store.list_workers(stale_after).await?;
    if json {
        print_json(&workers_json(&workers, stale_after));
    } else {
        print!("{}", render(&workers, a.jobs, crate::parse::now_ms()));
    }
    Ok(())
}

/// `{"workers":[{"workerId","host","pid","queues","jobNames","slots",
/// "startedAtMs","lastHeartbeatMs","state","runningCount","running":[{"id","jobName"}]}],
/// "staleAfterMs"}`; `queues` is null for a worker that serves every queue.
pub fn workers_json(workers: &[WorkerRecord], stale_after_ms: i64) -> serde_json::Value {
    let workers: Vec<serde_json::Value> = workers
        .iter()
        .map(|w| {
            serde_json::json!({
                "workerId": w.info.worker_id,
                "host": w.info.host,
                "pid": w.info.pid,
                "queues": w.info.queues,
                "jobNames": w.info.job_names,
                "slots": w.info.slots,
                "startedAtMs": w.started_at_ms,
                "lastHeartbeatMs": w.last_heartbeat_ms,
                "state": w.state.as_str(),
                "runningCount": w.running.len(),
                "running": w.running.iter().map(|r| serde_json::json!({"id": r.id, "jobName": r.job_name})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({"workers": workers, "staleAfterMs": stale_after_ms})
}

/// The table (and with `jobs`, the running jobs below it); every cell escaped.
pub(crate) fn render(workers: &[WorkerRecord], jobs: bool, now_ms: i64) -> String {
    if workers.is_empty() {
        return "no workers registered\n".to_owned();
    }
    let header = [
        "WORKER",
        "STATE",
        "HOST",
        "PID",
        "QUEUES",
        "JOBS",
        "SLOTS",
        "RUNNING",
        "STARTED",
        "HEARTBEAT",
    ];
    // `table` makes every cell terminal-safe (ids, hosts, names are stored text).
    let rows: Vec<Vec<String>> = workers
        .iter()
        .map(|w| {
            vec![
                w.info.worker_id.clone(),
                w.state.as_str().to_owned(),
                w.info.host.clone(),
                w.info.pid.to_string(),
                w.info
                    .queues
                    .as_ref()
                    .map_or_else(|| "*".to_owned(), |q| q.join(",")),
                w.info.job_names.join(","),
                w.info.slots.to_string(),
                w.running.len().to_string(),
                when(w.started_at_ms, now_ms),
                relative(w.last_heartbeat_ms, now_ms),
            ]
        })
        .collect();
    let mut out = table(&header, &rows);
    let running: Vec<Vec<String>> = workers
        .iter()
        .flat_map(|w| {
            w.running
                .iter()
                .map(|r| vec![w.info.worker_id.clone(), r.id.clone(), r.job_name.clone()])
        })
        .collect();
    if jobs && !running.is_empty() {
        out.push('\n');
        out.push_str(&table(&["WORKER", "JOB ID", "NAME"], &running));
    }
    out
}

#[cfg(test)]
mod tests {
    use duraq_core::driver::WorkerInfo;
    use duraq_core::inspect::RunningJob;

    use super::*;

    fn record(id: &str, queues: Option<Vec<String>>, beat: i64) -> WorkerRecord {
        WorkerRecord::new(
            WorkerInfo {
                worker_id: id.into(),
                host: "host\u{1b}[2J".into(),
                pid: 42,
                queues,
                job_names: vec!["duraq.noop".into(), "send".into()],
                slots: 10,
            },
            0,
            beat,
            100_000,
            60_000,
            vec![RunningJob {
                id: "j1".into(),
                job_name: "send\u{202e}".into(),
            }],
        )
    }

    #[test]
    fn table_has_a_row_per_worker_and_jobs_on_request() {
        let workers = [
            record("w1", None, 99_000),
            record("w2", Some(vec!["mail".into()]), 1_000),
        ];
        let out = render(&workers, false, 100_000);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("WORKER") && lines[0].ends_with("HEARTBEAT"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("w1") && lines[1].contains(" alive "),
            "{out}"
        );
        assert!(
            lines[1].contains(" * ") && lines[1].contains("duraq.noop,send"),
            "{out}"
        );
        assert!(
            lines[2].contains(" stale ") && lines[2].contains(" mail "),
            "{out}"
        );
        assert_eq!(lines.len(), 3, "no job lines without --jobs: {out}");
        assert!(!out.contains('\u{1b}'), "escaped: {out:?}");
        let detailed = render(&workers, true, 100_000);
        assert!(detailed.contains("JOB ID"), "{detailed}");
        assert!(detailed
            .lines()
            .any(|l| l.starts_with("w2") && l.contains("j1")));
        assert!(!detailed.contains('\u{202e}'), "escaped: {detailed:?}");
        assert_eq!(render(&[], true, 0), "no workers registered\n");
    }

    #[test]
    fn json_lists_running_jobs_and_null_queues_for_every_queue() {
        let v = workers_json(&[record("w1", None, 99_000)], 60_000);
        let w = &v["workers"][0];
        assert!(w["queues"].is_null());
        assert_eq!(w["state"], "alive");
        assert_eq!(w["runningCount"], 1);
        assert_eq!(w["running"][0]["id"], "j1");
        assert_eq!(v["staleAfterMs"], 60_000);
    }
}
