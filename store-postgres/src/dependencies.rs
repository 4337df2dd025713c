//! Jobs that wait for other jobs (`docs/workflows.md`), on the enqueue side:
//! how a new job with dependencies starts, its edges, and the edges that go
//! with deleted jobs. Settling dependents when a job finishes, and giving them
//! back on an operator retry, is [`crate::release`].
//!
//! The decisions are core's ([`duraq_core::driver::rules::start_of`],
//! [`duraq_core::driver::rules::apply_start`]); this module reads what they need inside
//! the enqueue's transaction and writes their answer. A dependency's row is
//! locked while its status is read ([`start`]), so a dependency that finishes
//! concurrently either committed first (its status says so) or waits for this
//! enqueue and then finds the new edge. The same statement sets the
//! dependency's `has_dependents`, the flag that lets a completion of a job
//! nobody waits for skip the edge table altogether ([`crate::complete`]); it is
//! written only when it changes, so a fan-in of many dependents on one job
//! rewrites that row once.
//!
//! Edges live in `duraq_job_dependents (dep_id, job_id, on_failure)`, keyed
//! by dependency: the dependents of a finished job are one range of its primary
//! key. A plain job (no dependencies) never comes here: its fast paths
//! ([`crate::enqueue_plain`], [`crate::copy`]) stay as they were.

use std::collections::{HashMap, VecDeque};

use duraq_core::driver::rules::{reopen, reopened_open_count, start_of, DependencyStart};
use duraq_core::driver::CountChange;
use duraq_core::{Job, JobStatus, NewJob, Result};

use crate::backend::db::Db;
use crate::rows::{loaded_from_row, parse_status, save_jobs, Loaded, JOB_COLUMNS};

/// Locks the dependency rows (in id order, as every multi-row lock here),
/// marks them as having dependents, and returns each one's status. The rows
/// to mark are collected into an array first and reached by primary key (a
/// join to `l` may walk the whole table, see [`crate::release`]).
const LOCK_DEPENDENCIES: &str = "WITH l AS (SELECT id, status, has_dependents \
     FROM {s}.duraq_jobs WHERE id = ANY($1::text[]) ORDER BY id COLLATE \"C\" FOR NO KEY UPDATE), \
     m AS (UPDATE {s}.duraq_jobs SET has_dependents = true \
     WHERE id = ANY(ARRAY(SELECT id FROM l WHERE NOT l.has_dependents))) SELECT id, status FROM l";

/// How `job` starts (see the module docs); `dependency-not-found`, with nothing
/// decided, when one of its dependencies is no job. Only for a job with
/// dependencies; the caller's transaction rolls back on an error.
pub(crate) async fn start(db: &Db<'_>, job: &NewJob) -> Result<DependencyStart> {
    let ids: Vec<&str> = job
        .dependencies()
        .iter()
        .map(|d| d.job_id.as_str())
        .collect();
    let statuses = lock_dependencies(db, &ids).await?;
    start_of(job.dependencies(), |id| statuses.get(id).copied())
}

/// Locks the jobs `ids` that exist as dependencies ([`LOCK_DEPENDENCIES`]) and
/// returns each one's status; an id that is no job is absent.
pub(crate) async fn lock_dependencies(
    db: &Db<'_>,
    ids: &[&str],
) -> Result<HashMap<String, JobStatus>> {
    let rows = db.query(LOCK_DEPENDENCIES, &[&ids]).await?;
    let mut statuses: HashMap<String, JobStatus> = HashMap::with_capacity(rows.len());
    for row in &rows {
        statuses.insert(row.get(0), parse_status(row.get(1))?);
    }
    Ok(statuses)
}

/// Writes what [`duraq_core::driver::rules::apply_start`] set on the freshly inserted
/// `row` beyond its status (its edges as `depends_on`, the open count, and a
/// start cancelled by a dependency) and inserts one edge per dependency, in
/// one statement. A job cancelled at its start keeps its edges too: an operator
/// retry of the dependency that cancelled it gives it back.
pub(crate) async fn write_edges(db: &Db<'_>, row: &Job) -> Result<()> {
    let depends_on = serde_json::to_string(&row.depends_on).expect("plain data encodes");
    let deps: Vec<&str> = row.depends_on.iter().map(|d| d.job_id.as_str()).collect();
    let policies: Vec<&str> = row
        .depends_on
        .iter()
        .map(|d| d.on_failure.as_str())
        .collect();
    db.execute(
        "WITH u AS (UPDATE {s}.duraq_jobs SET depends_on = $2::text::jsonb, \
         open_dependencies = $3, cancelled_at_ms = $4, last_error = $5, cancel_reason = $8 \
         WHERE id = $1) \
         INSERT INTO {s}.duraq_job_dependents (dep_id, job_id, on_failure) \
         SELECT v.dep, $1, v.policy FROM unnest($6::text[], $7::text[]) AS v(dep, policy)",
        &[
            &row.id,
            &depends_on,
            &row.open_dependencies,
            &row.cancelled_at_ms,
            &row.last_error,
            &deps,
            &policies,
            &row.cancel_reason.map(|c| c.as_str()),
        ],
    )
    .await?;
    Ok(())
}

/// CTEs spliced into every delete of jobs, after a CTE `gone` returning the
/// deleted rows' `id` and `depends_on`: their edges go with them, both those
/// naming them as the dependency (a range of the primary key each) and their
/// own, found through `depends_on` as (dependency, job) pairs, each looked up
/// by the whole key. (Joined to the jsonb elements directly, the pairs looked
/// like hundreds of rows to the planner, which read the whole edge table.) An
/// edge between two jobs deleted together is reached twice; PostgreSQL
/// deletes it once. Their release backlog entries go too.
pub(crate) const DELETE_EDGES_WITH_JOBS: &str =
    "gone_edges AS (DELETE FROM {s}.duraq_job_dependents AS e USING gone WHERE e.dep_id = gone.id), \
     gone_pairs AS (SELECT array_agg(d.edge ->> 'jobId') AS deps, array_agg(gone.id) AS jobs \
     FROM gone, jsonb_array_elements(gone.depends_on) AS d(edge)), \
     gone_own_edges AS (DELETE FROM {s}.duraq_job_dependents AS e \
     USING gone_pairs AS p, unnest(p.deps, p.jobs) AS v(dep, job) \
     WHERE e.dep_id = v.dep AND e.job_id = v.job), \
     gone_backlog AS (DELETE FROM {s}.duraq_release_backlog AS b USING gone WHERE b.job_id = gone.id)";

/// After an operator retry of `retried`: gives back to `pending` (or `queued`)
/// the dependents a dependency cancelled that nothing else still cancels, and
/// theirs in turn; counts every move into `change`. Returns whether one came
/// back `queued`.
pub(crate) async fn reopen_dependents(
    db: &Db<'_>,
    now: i64,
    retried: Vec<String>,
    change: &mut CountChange,
) -> Result<bool> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = ANY(ARRAY(SELECT job_id \
         FROM {{s}}.duraq_job_dependents WHERE dep_id = $1)) ORDER BY id COLLATE \"C\" FOR UPDATE"
    );
    // No longer terminal: what they had not settled waits for them.
    db.execute(crate::backlog::DROP_ENTRIES, &[&retried])
        .await?;
    let mut walk: VecDeque<String> = retried.into();
    let mut queued = false;
    while let Some(done) = walk.pop_front() {
        let rows = db.query(&sql, &[&done]).await?;
        let mut loaded: Vec<Loaded> = rows.iter().map(loaded_from_row).collect::<Result<_>>()?;
        if loaded.is_empty() {
            continue;
        }
        let mut statuses = dependency_statuses(db, loaded.iter().map(|l| &l.job)).await?;
        let mut reopened: Vec<usize> = Vec::new();
        for (i, l) in loaded.iter_mut().enumerate() {
            let Some(open) = reopened_open_count(&l.job, |id| statuses.get(id).copied()) else {
                continue;
            };
            let from = l.job.status;
            reopen(&mut l.job, open, now);
            change.moved(&l.job.queue, from, l.job.status);
            // A later dependent of `done` may depend on this one too.
            statuses.insert(l.job.id.clone(), l.job.status);
            queued |= l.job.status == JobStatus::Queued;
            if l.has_dependents {
                walk.push_back(l.job.id.clone());
            }
            reopened.push(i);
        }
        let saved: Vec<(&Job, Option<&str>)> =
            reopened.iter().map(|i| (&loaded[*i].job, None)).collect();
        save_jobs(db, &saved).await?;
        // A reopened job with dependents may have had a backlog entry.
        let parents: Vec<&str> = reopened
            .iter()
            .filter(|i| loaded[**i].has_dependents)
            .map(|i| loaded[*i].job.id.as_str())
            .collect();
        if !parents.is_empty() {
            db.execute(crate::backlog::DROP_ENTRIES, &[&parents])
                .await?;
        }
    }
    Ok(queued)
}

/// The current statuses of the dependencies of `jobs` (a pruned one is absent).
async fn dependency_statuses<'a>(
    db: &Db<'_>,
    jobs: impl Iterator<Item = &'a Job>,
) -> Result<HashMap<String, JobStatus>> {
    let mut ids: Vec<&str> = jobs
        .flat_map(|j| j.depends_on.iter().map(|d| d.job_id.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let rows = db
        .query(
            "SELECT id, status FROM {s}.duraq_jobs WHERE id = ANY($1::text[])",
            &[&ids],
        )
        .await?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in &rows {
        out.insert(row.get(0), parse_status(row.get(1))?);
    }
    Ok(out)
}
