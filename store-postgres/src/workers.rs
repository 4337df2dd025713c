//! Visible workers (`docs/operating.md`): what a worker registers
//! lives in its `duraq_workers` row (schema version 6) beside the heartbeat. A
//! listing is one statement (so one snapshot): the registered rows joined to
//! the handed-off jobs grouped by worker, read through the partial
//! `duraq_jobs_running` index. The due-job groups read at most `limit` of the
//! first due jobs in claim order through `duraq_jobs_claim_plain` (then those with a fairness key by due time). Which of them no worker handles is
//! decided in core ([`duraq_core::driver::unhandled_groups`]).

use duraq_core::driver::WorkerInfo;
use duraq_core::inspect::{DueJobGroup, RunningJob, WorkerRecord};
use duraq_core::Result;

use crate::backend::db::Db;
use crate::claim::QUEUED_PRIORITIES;
use crate::error::corrupt;

fn to_json(value: &[String]) -> String {
    serde_json::Value::from(value).to_string()
}

/// Records `info` with `started_at_ms` and a heartbeat at `now`.
pub(crate) async fn register(db: &Db<'_>, info: &WorkerInfo, now: i64) -> Result<()> {
    let queues = info.queues.as_deref().map(to_json);
    let names = to_json(&info.job_names);
    let pid = i64::from(info.pid);
    let slots = i64::try_from(info.slots).unwrap_or(i64::MAX);
    db.execute(
        "INSERT INTO {s}.duraq_workers (worker_id, last_heartbeat_ms, host, pid, queues, \
         job_names, slots, started_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $2) \
         ON CONFLICT (worker_id) DO UPDATE SET last_heartbeat_ms = $2, host = $3, pid = $4, \
         queues = $5, job_names = $6, slots = $7, started_at_ms = $2",
        &[
            &info.worker_id,
            &now,
            &info.host,
            &pid,
            &queues,
            &names,
            &slots,
        ],
    )
    .await?;
    Ok(())
}

/// Deletes the worker's row; `true` if there was one.
pub(crate) async fn remove(db: &Db<'_>, worker_id: &str) -> Result<bool> {
    let rows = db
        .query(
            "DELETE FROM {s}.duraq_workers WHERE worker_id = $1 RETURNING 1",
            &[&worker_id],
        )
        .await?;
    Ok(!rows.is_empty())
}

/// Every registered worker with its running jobs, as of `now`.
pub(crate) async fn list(db: &Db<'_>, now: i64, stale_after_ms: i64) -> Result<Vec<WorkerRecord>> {
    let rows = db
        .query(
            "SELECT w.worker_id, w.last_heartbeat_ms, COALESCE(w.host, ''), COALESCE(w.pid, 0), \
             w.queues, COALESCE(w.job_names, '[]'), COALESCE(w.slots, 0), w.started_at_ms, \
             COALESCE(r.ids, '{}'), COALESCE(r.names, '{}') \
             FROM {s}.duraq_workers AS w LEFT JOIN \
             (SELECT worker_id, array_agg(id) AS ids, array_agg(job_name) AS names \
              FROM {s}.duraq_jobs WHERE status = 'handed_off' AND worker_id IS NOT NULL \
              GROUP BY worker_id) AS r ON r.worker_id = w.worker_id \
             WHERE w.started_at_ms IS NOT NULL ORDER BY w.worker_id COLLATE \"C\"",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let queues: Option<String> = r.get(4);
            let names: String = r.get(5);
            let info = WorkerInfo {
                worker_id: r.get(0),
                host: r.get(2),
                pid: u32::try_from(r.get::<_, i64>(3)).unwrap_or(0),
                queues: queues
                    .map(|q| serde_json::from_str(&q))
                    .transpose()
                    .map_err(|e| corrupt(format!("worker queues: {e}")))?,
                job_names: serde_json::from_str(&names)
                    .map_err(|e| corrupt(format!("worker job names: {e}")))?,
                slots: u64::try_from(r.get::<_, i64>(6)).unwrap_or(0),
            };
            let ids: Vec<String> = r.get(8);
            let job_names: Vec<String> = r.get(9);
            let running = ids
                .into_iter()
                .zip(job_names)
                .map(|(id, job_name)| RunningJob { id, job_name })
                .collect();
            Ok(WorkerRecord::new(
                info,
                r.get(7),
                r.get(1),
                now,
                stale_after_ms,
                running,
            ))
        })
        .collect()
}

/// The first `limit` due queued jobs in claim order (one claim-index range per
/// priority, highest first) grouped by queue and job name.
pub(crate) async fn due_job_names(db: &Db<'_>, now: i64, limit: usize) -> Result<Vec<DueJobGroup>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = db
        .query(
            &format!(
                "WITH RECURSIVE {QUEUED_PRIORITIES} SELECT queue, job_name, count(*), min(scheduled_at_ms) FROM \
                 ((SELECT d.* FROM levels, LATERAL (SELECT queue, job_name, scheduled_at_ms \
                  FROM {{s}}.duraq_jobs WHERE status = 'queued' AND fairness_key IS NULL \
                  AND priority = levels.p \
                  AND scheduled_at_ms <= $1 ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" \
                  LIMIT $2) AS d WHERE levels.p IS NOT NULL LIMIT $2) \
                  UNION ALL (SELECT queue, job_name, scheduled_at_ms FROM {{s}}.duraq_jobs \
                  WHERE status = 'queued' AND fairness_key IS NOT NULL AND scheduled_at_ms <= $1 \
                  ORDER BY scheduled_at_ms LIMIT $2) LIMIT $2) AS due \
                 GROUP BY queue, job_name ORDER BY queue COLLATE \"C\", job_name COLLATE \"C\""
            ),
            &[&now, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| DueJobGroup {
            queue: r.get(0),
            job_name: r.get(1),
            due: u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
            oldest_scheduled_at_ms: r.get(3),
        })
        .collect())
}
