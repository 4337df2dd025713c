//! Fresh job rows into `duraq_jobs`, many per statement: one array per
//! column (`UNNEST`), so a batch costs one statement whatever its size. The
//! insert itself reads the dedupe scope registrations ([`crate::dedupe`]).

use std::sync::OnceLock;

use duraq_core::{Job, NewJob, Result};
use tokio_postgres::types::ToSql;

use crate::backend::db::Db;
use crate::columns::statements::{array_params, arrays, bound, fresh, names, BOUND};
use crate::columns::{ArgsText, Array, Source};
use crate::dedupe::KEY_OF_DIGEST;
use crate::schema_def::JOB_PARTITIONS;

/// The columns of fresh rows as arrays, one bound parameter each (see
/// [`insert_jobs_sql`]).
pub(crate) struct NewRows<'a> {
    arrays: Vec<Array<'a>>,
}

/// Inserts [`NewRows`], whose parameters start at `$first`.
pub(crate) fn insert_jobs_sql(first: usize) -> String {
    // A row of a registered dedupe scope gets its key (see `crate::dedupe`). The
    // registered scopes are read once per statement (an InitPlan), not probed
    // per row: with a per-row probe the generic plan looked costlier than a
    // one-row custom plan, so PostgreSQL re-planned every single-job enqueue
    // (measured: a third of the one-by-one enqueue rate).
    format!(
        "INSERT INTO {{s}}.duraq_jobs ({}) \
         SELECT v.*, CASE WHEN (v.job_name, v.queue) = ANY (ARRAY(SELECT (d.job_name, d.queue) \
         FROM {{s}}.duraq_dedupe_scopes AS d)) THEN {KEY_OF_DIGEST} END \
         FROM unnest({}) AS v({})",
        names(fresh()),
        array_params(bound(), first),
        names(bound())
    )
}

impl<'a> NewRows<'a> {
    /// `args[i]` is the args text and digest of `jobs[i]`.
    pub fn new(jobs: &'a [Job], args: &'a [ArgsText]) -> Self {
        let sources: Vec<Source> = (jobs.iter().zip(args))
            .map(|(job, args)| Source::fresh(job, args, None))
            .collect();
        Self {
            arrays: arrays(bound(), &sources),
        }
    }

    /// How many parameters [`NewRows::params`] binds (those of [`insert_jobs_sql`]).
    pub const COUNT: usize = BOUND;

    /// The parameters of [`insert_jobs_sql`], in order.
    pub fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.arrays.iter().map(Array::as_sql).collect()
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
    let args: Vec<ArgsText> = jobs.iter().map(ArgsText::of).collect();
    let new_rows = NewRows::new(rows, &args);
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
