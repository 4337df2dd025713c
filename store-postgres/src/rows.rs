//! Job rows between PostgreSQL and [`duraq_core::Job`].
//!
//! Stores never edit a job column by column: they load the row, apply a pure
//! transition from `duraq_core::transitions`, and write the mutable columns back
//! here, many rows per statement (`UNNEST` of one array per column). `args` is
//! stored as JSON text rather than `jsonb`, because `jsonb` rewrites numbers and
//! refuses `\u0000`, and a job must come back exactly as it was enqueued. The
//! error history (`errors`, version 5) is JSON text for the same reasons: a
//! handler's message may hold `\u0000`, which `jsonb` refuses, and nothing
//! queries inside it; rows from before version 5 read the default `[]`. A
//! handler's `output` (version 9) is JSON text too, for the same reasons; the
//! dependency edges a job names (`depends_on`) are `jsonb` (ids and policies,
//! nothing a rewrite could change), read back as text.

use duraq_core::{Job, JobStatus, Result};
use tokio_postgres::Row;

use crate::backend::db::Db;
use crate::error::corrupt;

/// Every column of `duraq_jobs` that maps to [`Job`], in [`job_from_row`] order,
/// with the internal `reservation_key` before `trace_parent` (version 8), then
/// the dependency columns (version 9), the internal `has_dependents`, and the
/// workflow columns (version 9).
pub(crate) const JOB_COLUMNS: &str = "id, job_name, args, queue, status, attempts, max_retries, \
    scheduled_at_ms, created_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, cancelled_at_ms, \
    orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, schedule_order, concurrency_key, \
    max_concurrency, idempotency_key, timeout_ms, errors, priority, rate_key, rate_max, rate_period_ms, \
    reservation_key, trace_parent, depends_on::text, open_dependencies, output, has_dependents, \
    workflow_id, step";

/// A job as loaded for a transition, with the reservation it holds (if any).
/// `reservation_key` counts only while a row is `handed_off`: a completion
/// leaves it on the row (one statement, no read of the row before the update;
/// see `complete.rs`), so a row in any other status holds none.
pub(crate) struct Loaded {
    pub job: Job,
    pub reservation: Option<String>,
    /// Some job depends on this one (an edge names it): when it becomes
    /// terminal its dependents are settled ([`crate::tx::Tx::finished`]).
    pub has_dependents: bool,
}

pub(crate) fn job_from_row(row: &Row) -> Result<Job> {
    let args: String = row.get(2);
    let status: String = row.get(4);
    let errors: String = row.get(23);
    let depends_on: Option<String> = row.get(30);
    let output: Option<String> = row.get(32);
    Ok(Job {
        id: row.get(0),
        job_name: row.get(1),
        args: serde_json::from_str(&args).map_err(|e| corrupt(format!("args: {e}")))?,
        queue: row.get(3),
        status: parse_status(status)?,
        attempts: row.get(5),
        max_retries: row.get(6),
        scheduled_at_ms: row.get(7),
        created_at_ms: row.get(8),
        handed_off_at_ms: row.get(9),
        completed_at_ms: row.get(10),
        failed_at_ms: row.get(11),
        cancelled_at_ms: row.get(12),
        orphaned_at_ms: row.get(13),
        last_error: row.get(14),
        errors: serde_json::from_str(&errors).map_err(|e| corrupt(format!("errors: {e}")))?,
        worker_id: row.get(15),
        handoff_id: row.get(16),
        schedule_key: row.get(17),
        schedule_order: row.get(18),
        concurrency_key: row.get(19),
        max_concurrency: row.get(20),
        idempotency_key: row.get(21),
        timeout_ms: row.get(22),
        priority: row.get(24),
        rate_key: row.get(25),
        rate_max: row.get(26),
        rate_period_ms: row.get(27),
        trace_parent: row.get(29),
        depends_on: match depends_on {
            Some(text) => {
                serde_json::from_str(&text).map_err(|e| corrupt(format!("depends_on: {e}")))?
            }
            None => Vec::new(),
        },
        open_dependencies: row.get(31),
        output: output
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| corrupt(format!("output: {e}")))?,
        workflow_id: row.get(34),
        step: row.get(35),
    })
}

pub(crate) fn loaded_from_row(row: &Row) -> Result<Loaded> {
    let job = job_from_row(row)?;
    let reservation = match job.status {
        JobStatus::HandedOff => row.get(28),
        _ => None,
    };
    Ok(Loaded {
        job,
        reservation,
        has_dependents: row.get(33),
    })
}

pub(crate) fn jobs_from_rows(rows: &[Row]) -> Result<Vec<Job>> {
    rows.iter().map(job_from_row).collect()
}

/// Loads one job and locks its row until the transaction ends.
pub(crate) async fn lock_job(db: &Db<'_>, id: &str) -> Result<Option<Loaded>> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = $1 FOR UPDATE");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(loaded_from_row)
        .transpose()
}

/// Writes back the mutable columns of `rows` (job, reservation key it now holds).
pub(crate) async fn save_jobs(db: &Db<'_>, rows: &[(&Job, Option<&str>)]) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let col = |f: fn(&Job) -> Option<String>| rows.iter().map(|(j, _)| f(j)).collect::<Vec<_>>();
    let num = |f: fn(&Job) -> Option<i64>| rows.iter().map(|(j, _)| f(j)).collect::<Vec<_>>();
    let ids = col(|j| Some(j.id.clone()));
    let statuses = col(|j| Some(j.status.as_str().to_owned()));
    let attempts = num(|j| Some(j.attempts));
    let scheduled = num(|j| Some(j.scheduled_at_ms));
    let handed = num(|j| j.handed_off_at_ms);
    let completed = num(|j| j.completed_at_ms);
    let failed = num(|j| j.failed_at_ms);
    let cancelled = num(|j| j.cancelled_at_ms);
    let orphaned = num(|j| j.orphaned_at_ms);
    // A handler's message may contain NUL, which a text column refuses; failing
    // the report over it would strand the job, so NUL becomes U+FFFD.
    let errors = col(|j| j.last_error.as_ref().map(|e| e.replace('\0', "\u{fffd}")));
    let workers = col(|j| j.worker_id.clone());
    let handoffs = col(|j| j.handoff_id.clone());
    let keys = col(|j| j.schedule_key.clone());
    let orders = num(|j| j.schedule_order);
    // JSON text: a NUL in a message is written as the escape `\u0000`, which a
    // text column takes as it is.
    let histories = col(|j| Some(serde_json::to_string(&j.errors).expect("plain data encodes")));
    let reservations: Vec<Option<&str>> = rows.iter().map(|(_, r)| *r).collect();
    let open = num(|j| Some(j.open_dependencies));
    let outputs = col(|j| j.output.as_ref().map(|o| o.to_string()));
    db.execute(
        "UPDATE {s}.duraq_jobs AS j SET status = v.status, attempts = v.attempts, \
         scheduled_at_ms = v.scheduled_at_ms, handed_off_at_ms = v.handed_off_at_ms, \
         completed_at_ms = v.completed_at_ms, failed_at_ms = v.failed_at_ms, \
         cancelled_at_ms = v.cancelled_at_ms, orphaned_at_ms = v.orphaned_at_ms, last_error = v.last_error, \
         worker_id = v.worker_id, handoff_id = v.handoff_id, schedule_key = v.schedule_key, \
         schedule_order = v.schedule_order, reservation_key = v.reservation_key, errors = v.errors, \
         open_dependencies = v.open_dependencies, output = v.output \
         FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], \
         $8::int8[], $9::int8[], $10::text[], $11::text[], $12::text[], $13::text[], $14::int8[], $15::text[], \
         $16::text[], $17::int8[], $18::text[]) \
         AS v(id, status, attempts, scheduled_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, \
         cancelled_at_ms, orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, schedule_order, \
         reservation_key, errors, open_dependencies, output) WHERE j.id = v.id",
        &[
            &ids, &statuses, &attempts, &scheduled, &handed, &completed, &failed, &cancelled, &orphaned,
            &errors, &workers, &handoffs, &keys, &orders, &reservations, &histories, &open, &outputs,
        ],
    )
    .await?;
    Ok(())
}

/// The job `id`, if it exists.
pub(crate) async fn load_job(db: &Db<'_>, id: &str) -> Result<Option<Job>> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = $1");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(job_from_row)
        .transpose()
}

/// A stored status, or a corrupt-data error naming it.
pub(crate) fn parse_status(status: String) -> Result<JobStatus> {
    status
        .parse::<JobStatus>()
        .map_err(|_| corrupt(format!("status {status:?}")))
}
