//! Visible workers (`docs/operating.md`): what a worker registers
//! lives in its `duraq_workers` row beside the heartbeat; a listing is two
//! reads (the registered rows, and the handed-off jobs through the partial
//! `duraq_jobs_running` index); the due-job groups read the first due jobs in
//! claim order through the `duraq_jobs_claim` index, at most `limit` of them. Which of
//! them no worker handles is decided in core ([`duraq_core::driver::unhandled_groups`]).

use std::collections::{BTreeMap, HashMap};

use duraq_core::driver::WorkerInfo;
use duraq_core::inspect::{DueJobGroup, RunningJob, WorkerRecord};
use duraq_core::{Error, Result};
use rusqlite::{params, Connection};

use crate::error::SqlResult;
use crate::tx::Tx;

fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::backend("encoding a worker row", e))
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::backend("decoding a worker row", e))
}

/// Records `info` with `started_at_ms` and a heartbeat at `tx.now`.
pub(crate) fn register(tx: &mut Tx<'_>, info: &WorkerInfo) -> Result<()> {
    let queues = info.queues.as_ref().map(to_json).transpose()?;
    let names = to_json(&info.job_names)?;
    tx.conn
        .prepare_cached(
            "INSERT INTO duraq_workers (worker_id, last_heartbeat_ms, host, pid, queues, \
             job_names, slots, started_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?2) \
             ON CONFLICT (worker_id) DO UPDATE SET last_heartbeat_ms = excluded.last_heartbeat_ms, \
             host = excluded.host, pid = excluded.pid, queues = excluded.queues, \
             job_names = excluded.job_names, slots = excluded.slots, \
             started_at_ms = excluded.started_at_ms",
        )
        .db()?
        .execute(params![
            info.worker_id,
            tx.now,
            info.host,
            info.pid,
            queues,
            names,
            i64::try_from(info.slots).unwrap_or(i64::MAX),
        ])
        .db()?;
    Ok(())
}

/// Deletes the worker's row; `true` if there was one.
pub(crate) fn remove(tx: &mut Tx<'_>, worker_id: &str) -> Result<bool> {
    let deleted = tx
        .conn
        .prepare_cached("DELETE FROM duraq_workers WHERE worker_id = ?1")
        .db()?
        .execute([worker_id])
        .db()?;
    Ok(deleted == 1)
}

type Row = (String, i64, String, i64, Option<String>, String, i64, i64);

/// Every registered worker with its running jobs, as of `now`.
pub(crate) fn list(conn: &Connection, now: i64, stale_after_ms: i64) -> Result<Vec<WorkerRecord>> {
    // Both reads run in the reader's one transaction: one state.
    let tx = conn;
    let rows: Vec<Row> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT worker_id, last_heartbeat_ms, COALESCE(host, ''), COALESCE(pid, 0), \
                 queues, COALESCE(job_names, '[]'), COALESCE(slots, 0), started_at_ms \
                 FROM duraq_workers WHERE started_at_ms IS NOT NULL ORDER BY worker_id",
            )
            .db()?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            })
            .db()?;
        rows.collect::<rusqlite::Result<_>>().db()?
    };
    let mut running: HashMap<String, Vec<RunningJob>> = HashMap::new();
    {
        let mut stmt = tx
            .prepare_cached(
                "SELECT worker_id, id, job_name FROM duraq_jobs INDEXED BY duraq_jobs_running \
                 WHERE status = 'handed_off' AND worker_id IS NOT NULL",
            )
            .db()?;
        let mut rows = stmt.query([]).db()?;
        while let Some(r) = rows.next().db()? {
            running.entry(r.get(0).db()?).or_default().push(RunningJob {
                id: r.get(1).db()?,
                job_name: r.get(2).db()?,
            });
        }
    }
    rows.into_iter()
        .map(|(id, beat, host, pid, queues, names, slots, started)| {
            let info = WorkerInfo {
                worker_id: id.clone(),
                host,
                pid: u32::try_from(pid).unwrap_or(0),
                queues: queues.as_deref().map(from_json).transpose()?,
                job_names: from_json(&names)?,
                slots: u64::try_from(slots).unwrap_or(0),
            };
            let jobs = running.remove(&id).unwrap_or_default();
            Ok(WorkerRecord::new(
                info,
                started,
                beat,
                now,
                stale_after_ms,
                jobs,
            ))
        })
        .collect()
}

/// The first `limit` due queued jobs in claim order (one claim-index range per
/// priority, highest first) grouped by queue and job name.
pub(crate) fn due_job_names(conn: &Connection, now: i64, limit: usize) -> Result<Vec<DueJobGroup>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT queue, job_name, scheduled_at_ms FROM duraq_jobs \
             INDEXED BY duraq_jobs_claim_plain \
             WHERE status = 'queued' AND fairness_key IS NULL AND priority = ?3 \
             AND scheduled_at_ms <= ?1 \
             ORDER BY scheduled_at_ms, created_at_ms, id LIMIT ?2",
        )
        .db()?;
    let mut groups: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    let mut left = limit;
    // Counts the rows of `stmt` run with `params` into `groups`.
    let mut group = |stmt: &mut rusqlite::CachedStatement<'_>, params: &[&dyn rusqlite::ToSql]| {
        let rows = stmt
            .query_map(params, |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?)))
            .db()?;
        for row in rows {
            let (queue, job_name, at) = row.db()?;
            let group = groups.entry((queue, job_name)).or_insert((0, at));
            group.0 += 1;
            group.1 = group.1.min(at);
            left -= 1;
        }
        Ok::<_, duraq_core::Error>(left)
    };
    let mut remaining = limit;
    for priority in crate::claim::queued_priorities(conn)? {
        if remaining == 0 {
            break;
        }
        let n = i64::try_from(remaining).unwrap_or(i64::MAX);
        remaining = group(&mut stmt, params![now, n, priority])?;
    }
    // Then the jobs with a fairness key, by due time.
    let mut keyed = conn
        .prepare_cached(
            "SELECT queue, job_name, scheduled_at_ms FROM duraq_jobs \
             INDEXED BY duraq_jobs_fair_due \
             WHERE status = 'queued' AND fairness_key IS NOT NULL AND scheduled_at_ms <= ?1 \
             ORDER BY scheduled_at_ms LIMIT ?2",
        )
        .db()?;
    let n = i64::try_from(remaining).unwrap_or(i64::MAX);
    group(&mut keyed, params![now, n])?;
    Ok(groups
        .into_iter()
        .map(|((queue, job_name), (due, oldest))| DueJobGroup {
            queue,
            job_name,
            due,
            oldest_scheduled_at_ms: oldest,
        })
        .collect())
}
