//! Fresh job rows into `duraq_jobs`, many per statement: one array per
//! column (`UNNEST`), so a batch costs one statement whatever its size. The
//! insert itself reads the dedupe scope registrations ([`crate::dedupe`]).

use std::sync::OnceLock;

use duraq_core::{Job, NewJob, Result};
use tokio_postgres::types::ToSql;

use crate::backend::db::Db;
use crate::dedupe::KEY_OF_DIGEST;
use crate::schema_def::JOB_PARTITIONS;

/// The columns of fresh rows as arrays, one bound parameter each (see
/// [`insert_jobs_sql`]).
pub(crate) struct NewRows {
    texts: [Vec<Option<String>>; 11],
    numbers: [Vec<Option<i64>>; 10],
}

/// Inserts [`NewRows`], whose parameters start at `$first`.
pub(crate) fn insert_jobs_sql(first: usize) -> String {
    const TYPES: [&str; NewRows::COUNT] = [
        "text", "text", "text", "text", "text", "text", "int8", "int8", "int8", "int8", "text",
        "int8", "text", "int8", "text", "int8", "int8", "text", "int8", "int8", "text",
    ];
    let arrays: Vec<String> = TYPES
        .iter()
        .enumerate()
        .map(|(i, t)| format!("${}::{t}[]", first + i))
        .collect();
    // A row of a registered dedupe scope gets its key (see `crate::dedupe`). The
    // registered scopes are read once per statement (an InitPlan), not probed
    // per row: with a per-row probe the generic plan looked costlier than a
    // one-row custom plan, so PostgreSQL re-planned every single-job enqueue
    // (measured: a third of the one-by-one enqueue rate).
    format!(
        "INSERT INTO {{s}}.duraq_jobs (id, job_name, args, args_digest, queue, status, attempts, \
         max_retries, scheduled_at_ms, created_at_ms, schedule_key, schedule_order, concurrency_key, \
         max_concurrency, idempotency_key, timeout_ms, priority, rate_key, rate_max, rate_period_ms, \
         trace_parent, dedupe_key) \
         SELECT v.*, CASE WHEN (v.job_name, v.queue) = ANY (ARRAY(SELECT (d.job_name, d.queue) \
         FROM {{s}}.duraq_dedupe_scopes AS d)) THEN {KEY_OF_DIGEST} END \
         FROM unnest({}) AS v(id, job_name, args, args_digest, queue, status, attempts, max_retries, \
         scheduled_at_ms, created_at_ms, schedule_key, schedule_order, concurrency_key, \
         max_concurrency, idempotency_key, timeout_ms, priority, rate_key, rate_max, rate_period_ms, \
         trace_parent)",
        arrays.join(", ")
    )
}

impl NewRows {
    /// `digests[i]` is the args digest of `jobs[i]`.
    pub fn new(jobs: &[Job], digests: &[String]) -> Self {
        let col = |f: fn(&Job) -> Option<String>| jobs.iter().map(f).collect::<Vec<_>>();
        let num = |f: fn(&Job) -> Option<i64>| jobs.iter().map(f).collect::<Vec<_>>();
        Self {
            texts: [
                col(|j| Some(j.id.clone())),
                col(|j| Some(j.job_name.clone())),
                col(|j| Some(j.args.to_string())),
                digests.iter().cloned().map(Some).collect(),
                col(|j| Some(j.queue.clone())),
                col(|j| Some(j.status.as_str().to_owned())),
                col(|j| j.schedule_key.clone()),
                col(|j| j.concurrency_key.clone()),
                col(|j| j.idempotency_key.clone()),
                col(|j| j.rate_key.clone()),
                col(|j| j.trace_parent.clone()),
            ],
            numbers: [
                num(|j| Some(j.attempts)),
                num(|j| Some(j.max_retries)),
                num(|j| Some(j.scheduled_at_ms)),
                num(|j| Some(j.created_at_ms)),
                num(|j| j.schedule_order),
                num(|j| j.max_concurrency),
                num(|j| j.timeout_ms),
                num(|j| Some(j.priority)),
                num(|j| j.rate_max),
                num(|j| j.rate_period_ms),
            ],
        }
    }

    /// How many parameters [`NewRows::params`] binds (those of [`insert_jobs_sql`]).
    pub const COUNT: usize = 21;

    /// The parameters of [`insert_jobs_sql`], in order.
    pub fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let [id, name, args, digest, queue, status, key, ckey, ikey, rkey, trace] = &self.texts;
        let [attempts, retries, scheduled, created, order, cmax, timeout, priority, rmax, rperiod] =
            &self.numbers;
        vec![
            id, name, args, digest, queue, status, attempts, retries, scheduled, created, key,
            order, ckey, cmax, ikey, timeout, priority, rkey, rmax, rperiod, trace,
        ]
    }
}

/// A `WITH` item refusing ids a finished job holds: fresh rows go to the live
/// partition, whose primary key cannot see the finished one's (`schema_def`,
/// version 11). It inserts each finished row whose id is in the `text[]`
/// parameter `$param` again, so a taken id fails the statement with the same
/// unique violation (`idempotency-conflict`) as one a live job holds, and a
/// free one costs a probe of the finished partition's primary key. Only ids
/// callers chose need it ([`chosen_ids`]): a statement without any leaves the
/// item out. It names the partitioned table, not the partition, so that it
/// locks the table before the partition, in the order `LOCK TABLE` does
/// (naming the partition first deadlocked with the dedupe registration's
/// lock).
pub(crate) fn taken_ids_guard_sql(param: usize) -> String {
    let [_, done] = &JOB_PARTITIONS;
    let finished: Vec<String> = done.statuses.iter().map(|s| format!("'{s}'")).collect();
    format!(
        "taken AS (INSERT INTO {{s}}.duraq_jobs SELECT * FROM {{s}}.duraq_jobs \
         WHERE status IN ({}) AND id = ANY(${param}::text[]))",
        finished.join(", ")
    )
}

/// The ids of `jobs` that [`taken_ids_guard_sql`] must check: those chosen
/// with [`NewJob::with_id`]. A generated id is a fresh UUIDv7, held by no
/// stored job. Leaving the guard out of statements that need none matters
/// more than the probes it saves: once finished jobs are analyzed, the
/// guard's cost over an array of unknown length made PostgreSQL plan a
/// single-job enqueue afresh on every call (a custom plan looked far
/// cheaper than the generic one), and planning took longer than running.
pub(crate) fn chosen_ids(jobs: &[NewJob]) -> Vec<&str> {
    (jobs.iter())
        .filter(|j| j.id_is_chosen())
        .map(NewJob::id)
        .collect()
}

/// Inserts the fresh `rows` made from `jobs` (`rows[i]` from `jobs[i]`).
pub(crate) async fn insert_jobs(db: &Db<'_>, jobs: &[NewJob], rows: &[Job]) -> Result<()> {
    let digests: Vec<String> = jobs.iter().map(NewJob::args_digest).collect();
    let new_rows = NewRows::new(rows, &digests);
    let chosen = chosen_ids(jobs);
    let mut params = new_rows.params();
    let guarded = !chosen.is_empty();
    if guarded {
        params.push(&chosen);
    }
    // Built once per form, not per call: the text is the same every time.
    static SQL: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    let sql = SQL[usize::from(guarded)].get_or_init(|| {
        let insert = insert_jobs_sql(1);
        if guarded {
            format!("WITH {} {insert}", taken_ids_guard_sql(1 + NewRows::COUNT))
        } else {
            insert
        }
    });
    db.execute(sql, &params).await?;
    Ok(())
}
