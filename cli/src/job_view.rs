//! How a job looks to people: one line per job in `jobs list`
//! ([`jobs_table`]), every field of one job with its error history in `jobs
//! show` ([`job_detail`]), and the moment that matters for its status
//! ([`status_time`]). Times are relative to a given `now_ms`, statuses read as
//! people say them (`running`, not `handed_off`), and every cell goes through
//! [`crate::output::table`], so no stored value can steer the terminal.

use duraq_core::{Job, JobStatus};

use crate::display::{relative, utc, when};
use crate::output::table;

/// A one-line-per-job table for `jobs list`; times are relative to `now_ms`.
/// Statuses read as people say them (`running`, not `handed_off`).
pub fn jobs_table(jobs: &[Job], now_ms: i64) -> String {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                j.id.clone(),
                j.job_name.clone(),
                j.queue.clone(),
                j.status.label().to_owned(),
                format!("{}/{}", j.attempts, j.max_retries.saturating_add(1)),
                status_time(j, now_ms),
                error_cell(j.last_error.as_deref()),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "NAME",
            "QUEUE",
            "STATUS",
            "ATTEMPTS",
            "WHEN",
            "LAST ERROR",
        ],
        &rows,
    )
}

/// A job's last error in a table cell: its first line, at most 60 characters
/// (an ellipsis says when it was cut).
pub fn error_cell(error: Option<&str>) -> String {
    let Some(error) = error else {
        return "-".to_owned();
    };
    let first = error.lines().next().unwrap_or("");
    let more_lines = first.len() < error.trim_end().len();
    if first.chars().count() > 60 || more_lines {
        let cut: String = first.chars().take(59).collect();
        format!("{cut}…")
    } else {
        first.to_owned()
    }
}

/// A job's dependencies in a cell: `id (policy)`, comma-separated, or `-`.
fn dependencies_cell(j: &Job) -> String {
    if j.depends_on.is_empty() {
        return "-".to_owned();
    }
    let edges: Vec<String> = j
        .depends_on
        .iter()
        .map(|d| format!("{} ({})", d.job_id, d.on_failure.as_str()))
        .collect();
    edges.join(", ")
}

/// A job's output in a cell: its compact JSON, cut at 120 characters with its
/// size in bytes when longer (`--json` prints it whole).
fn output_cell(output: Option<&serde_json::Value>) -> String {
    let Some(output) = output else {
        return "-".to_owned();
    };
    let text = output.to_string();
    if text.chars().count() <= 120 {
        return text;
    }
    let cut: String = text.chars().take(119).collect();
    format!("{cut}… ({} bytes)", text.len())
}

/// The moment that matters for a job's status, in words: when a queued job is
/// due (or retries), when a running one started, when a finished one ended.
pub fn status_time(j: &Job, now_ms: i64) -> String {
    let (label, at) = match j.status {
        JobStatus::Queued if j.attempts > 0 && j.scheduled_at_ms > now_ms => {
            ("retries", j.scheduled_at_ms)
        }
        JobStatus::Queued => ("due", j.scheduled_at_ms),
        JobStatus::HandedOff => ("started", j.handed_off_at_ms.unwrap_or(j.scheduled_at_ms)),
        status => (
            status.label(),
            j.terminal_at_ms().unwrap_or(j.created_at_ms),
        ),
    };
    format!("{label} {} ({})", relative(at, now_ms), utc(at))
}

/// Every field of one job, one `field  value` line each; times in UTC with how
/// far they are from `now_ms`. When the job has failed attempts, its error
/// history follows as a second table, newest first: one line per attempt with
/// its number, how long ago it failed, its worker and its error.
pub fn job_detail(j: &Job, now_ms: i64) -> String {
    let at = |ms: i64| when(ms, now_ms);
    let opt_at = |ms: Option<i64>| ms.map_or_else(|| "-".to_string(), at);
    let rows: Vec<Vec<String>> = [
        ("id", j.id.clone()),
        ("jobName", j.job_name.clone()),
        ("args", j.args.to_string()),
        ("queue", j.queue.clone()),
        ("status", j.status.label().to_owned()),
        ("attempts", j.attempts.to_string()),
        ("maxRetries", j.max_retries.to_string()),
        ("scheduledAt", at(j.scheduled_at_ms)),
        ("createdAt", at(j.created_at_ms)),
        ("handedOffAt", opt_at(j.handed_off_at_ms)),
        ("completedAt", opt_at(j.completed_at_ms)),
        ("failedAt", opt_at(j.failed_at_ms)),
        ("cancelledAt", opt_at(j.cancelled_at_ms)),
        ("orphanedAt", opt_at(j.orphaned_at_ms)),
        ("lastError", opt(&j.last_error)),
        ("errors", j.errors.len().to_string()),
        ("workerId", opt(&j.worker_id)),
        ("handoffId", opt(&j.handoff_id)),
        ("scheduleKey", opt(&j.schedule_key)),
        ("scheduleOrder", opt(&j.schedule_order)),
        ("concurrencyKey", opt(&j.concurrency_key)),
        ("maxConcurrency", opt(&j.max_concurrency)),
        ("idempotencyKey", opt(&j.idempotency_key)),
        ("timeoutMs", opt(&j.timeout_ms)),
        ("priority", j.priority.to_string()),
        (
            "rateLimit",
            j.rate_limit().map_or_else(
                || "-".to_string(),
                |r| format!("{} per {}ms ({})", r.max, r.period_ms, r.key),
            ),
        ),
        ("workflowId", opt(&j.workflow_id)),
        ("step", opt(&j.step)),
        ("dependsOn", dependencies_cell(j)),
        ("openDependencies", j.open_dependencies.to_string()),
        ("output", output_cell(j.output.as_ref())),
    ]
    .into_iter()
    .chain(flow_control_rows(j, now_ms))
    .map(|(k, v)| vec![k.to_string(), v])
    .collect();
    let mut out = table(&["FIELD", "VALUE"], &rows);
    if !j.errors.is_empty() {
        let history: Vec<Vec<String>> = j
            .errors
            .iter()
            .rev()
            .map(|e| {
                vec![
                    e.attempt.to_string(),
                    relative(e.at_ms, now_ms),
                    opt(&e.worker_id),
                    e.error.clone(),
                ]
            })
            .collect();
        out.push_str("\nError history (newest first):\n");
        out.push_str(&table(&["ATTEMPT", "WHEN", "WORKER", "ERROR"], &history));
    }
    out
}

/// The flow-control fields, each only when it says something (as the
/// JSON leaves them out): cost, ephemeral, expiry, sequence, fairness key,
/// why a job was cancelled.
fn flow_control_rows(j: &Job, now_ms: i64) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if j.cost != 1 {
        rows.push(("cost", j.cost.to_string()));
    }
    if !j.keep_completed {
        rows.push((
            "keepCompleted",
            "false (deleted when it completes)".to_owned(),
        ));
    }
    if let Some(at) = j.expires_at_ms {
        rows.push(("expiresAt", when(at, now_ms)));
    }
    if let Some(key) = &j.sequence_key {
        let policy = if j.sequence_continues {
            "continue"
        } else {
            "hold"
        };
        rows.push(("sequenceKey", format!("{key} (on failure: {policy})")));
    }
    if let Some(key) = &j.fairness_key {
        rows.push(("fairnessKey", key.clone()));
    }
    if let (Some(name), true) = (&j.awaiting_signal, j.is_awaiting_signal()) {
        let until = when(j.scheduled_at_ms, now_ms);
        rows.push(("awaitingSignal", format!("{name} (times out {until})")));
    }
    if let Some(parent) = &j.parent_id {
        rows.push(("parentId", parent.clone()));
    }
    if let Some(reason) = &j.cancel_reason {
        rows.push(("cancelReason", reason.as_str().to_owned()));
    }
    rows
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn job_detail_lists_the_error_history_newest_first() {
        let new = duraq_core::NewJob::new("j", json!([]), Default::default()).unwrap();
        let mut job = duraq_core::driver::transitions::new_job_row(&new, 0);
        assert!(!job_detail(&job, 0).contains("Error history"));
        job.errors = vec![
            duraq_core::AttemptError {
                attempt: 1,
                at_ms: 1_000,
                error: "first\nline".into(),
                worker_id: Some("w-1".into()),
            },
            duraq_core::AttemptError {
                attempt: 2,
                at_ms: 50_000,
                error: "second".into(),
                worker_id: None,
            },
        ];
        let shown = job_detail(&job, 60_000);
        let history = shown
            .split("Error history (newest first):\n")
            .nth(1)
            .unwrap();
        let lines: Vec<&str> = history.lines().collect();
        assert_eq!(lines[0], "ATTEMPT  WHEN      WORKER  ERROR");
        assert_eq!(lines[1], "2        10 s ago  -       second");
        assert_eq!(lines[2], "1        59 s ago  w-1     first\\u{a}line");
        assert!(shown.contains("errors            2\n"), "{shown}");
    }

    #[test]
    fn tables_say_running_for_handed_off() {
        let new = duraq_core::NewJob::new("j", json!([]), Default::default()).unwrap();
        let mut job = duraq_core::driver::transitions::new_job_row(&new, 0);
        job.status = JobStatus::HandedOff;
        job.handed_off_at_ms = Some(0);
        for shown in [jobs_table(&[job.clone()], 0), job_detail(&job, 0)] {
            assert!(shown.contains("running"), "{shown}");
            assert!(!shown.contains("handed_off"), "{shown}");
        }
    }
}
