//! Settling dependents in the transaction that finished their dependency, and
//! giving them back on an operator retry (`docs/workflows.md`): core's loop
//! ([`duraq_core::rules::DependencyRelease`]) and reopen walk
//! ([`duraq_core::rules::reopened_open_count`]) over the edge table.
//!
//! [`settle`] runs the loop level by level: the finished jobs of one level
//! have their edges and dependent rows read, and the dependents locked, in one
//! statement (a range of the edge table's primary key per finished job, then
//! each dependent by its own key: [`DEPENDENTS`]); core settles each finished job in turn on
//! those rows, kept up to date in memory, so a dependent two finished jobs of a
//! level share sees the first one's count down; the changes are written with
//! one statement; the dependents it cancelled are the next level. Its cost is
//! the finished jobs' edges, never the pending jobs. A cancelled dependent no
//! job depends on (`has_dependents`) ends its branch without a read.
//!
//! [`reopen_dependents`] walks down from each retried job one job at a time,
//! as the reference model does, reading the statuses each dependent's own
//! dependencies have now (and those it reopened on the way).

use std::collections::{HashMap, HashSet, VecDeque};

use duraq_core::rules::{
    reopen, reopened_open_count, DependencyRelease, DependentChange, DependentEdge, DependentRow,
    Finished,
};
use duraq_core::{CountChange, DependencyFailure, Job, JobStatus, Result};
use tokio_postgres::Row;

use crate::backend::db::Db;
use crate::error::corrupt;
use crate::rows::{loaded_from_row, save_jobs, Loaded, JOB_COLUMNS};

/// The edges of the finished jobs `$1` with their dependents' rows, each
/// dependent locked (in id order). The dependents' ids are collected into an
/// array first (an InitPlan) and looked up by primary key: joined directly,
/// the planner merge-joined the edges against a walk of the whole primary
/// key of the jobs (`tests/plans.rs`).
const DEPENDENTS: &str = "WITH e AS MATERIALIZED (SELECT dep_id, job_id, on_failure \
     FROM {s}.duraq_job_dependents WHERE dep_id = ANY($1::text[])), \
     j AS (SELECT id, queue, status, open_dependencies, scheduled_at_ms, has_dependents \
     FROM {s}.duraq_jobs WHERE id = ANY(ARRAY(SELECT job_id FROM e)) \
     ORDER BY id COLLATE \"C\" FOR UPDATE) \
     SELECT e.dep_id, e.on_failure, j.id, j.queue, j.status, j.open_dependencies, \
     j.scheduled_at_ms, j.has_dependents FROM e JOIN j ON j.id = e.job_id";

/// Writes settled dependents: status, open count and due time; the
/// cancellation's time and error only where it cancelled.
const WRITE_SETTLED: &str = "UPDATE {s}.duraq_jobs AS j SET status = v.status, \
     open_dependencies = v.open, scheduled_at_ms = v.due, \
     cancelled_at_ms = COALESCE(v.cancelled_at_ms, j.cancelled_at_ms), \
     last_error = COALESCE(v.last_error, j.last_error) \
     FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::text[]) \
     AS v(id, status, open, due, cancelled_at_ms, last_error) WHERE j.id = v.id";

/// A dependent as read and settled so far in one level.
struct Dependent {
    row: DependentRow,
    has_dependents: bool,
    /// The cancellation's error, once a finished job cancelled it.
    cancelled: Option<String>,
    changed: bool,
}

/// Settles the dependents of `finished` (jobs just made terminal, with their
/// status), down the graph; counts every move into `change`. Returns whether a
/// dependent was released (work for a worker).
pub(crate) async fn settle(
    db: &Db<'_>,
    now: i64,
    finished: Vec<(String, JobStatus)>,
    change: &mut CountChange,
) -> Result<bool> {
    let mut release = DependencyRelease::new();
    for (id, status) in finished {
        release.finished(id, status);
    }
    let mut leaves: HashSet<String> = HashSet::new();
    let mut released = false;
    loop {
        let level: Vec<Finished> = std::iter::from_fn(|| release.next())
            .filter(|f| !leaves.contains(&f.job_id))
            .collect();
        if level.is_empty() {
            return Ok(released);
        }
        let ids: Vec<&str> = level.iter().map(|f| f.job_id.as_str()).collect();
        let rows = db.query(DEPENDENTS, &[&ids]).await?;
        let (mut edges, mut dependents) = read_level(&rows)?;
        for done in &level {
            let Some(mut list) = edges.remove(&done.job_id) else {
                continue;
            };
            list.sort_by(|a, b| a.job_id.cmp(&b.job_id));
            let current = list
                .iter()
                .filter_map(|e| dependents.get(&e.job_id).map(|d| d.row.clone()))
                .collect();
            for settled in release.settle(done, &list, current, now) {
                let d = dependents
                    .get_mut(settled.job_id())
                    .expect("a settled dependent was read");
                let from = d.row.status;
                match settled {
                    DependentChange::Waiting { open, .. } => d.row.open_dependencies = open,
                    DependentChange::Released { at_ms, .. } => {
                        d.row.status = JobStatus::Queued;
                        d.row.open_dependencies = 0;
                        d.row.scheduled_at_ms = at_ms;
                        released = true;
                    }
                    DependentChange::Cancelled { error, .. } => {
                        d.row.status = JobStatus::Cancelled;
                        d.cancelled = Some(error);
                        if !d.has_dependents {
                            leaves.insert(d.row.job_id.clone());
                        }
                    }
                }
                d.changed = true;
                change.moved(&d.row.queue, from, d.row.status);
            }
        }
        write_settled(db, now, dependents.values().filter(|d| d.changed)).await?;
    }
}

/// One level's edges by finished job, and its dependents by id.
#[allow(clippy::type_complexity)]
fn read_level(
    rows: &[Row],
) -> Result<(
    HashMap<String, Vec<DependentEdge>>,
    HashMap<String, Dependent>,
)> {
    let mut edges: HashMap<String, Vec<DependentEdge>> = HashMap::new();
    let mut dependents: HashMap<String, Dependent> = HashMap::new();
    for r in rows {
        let policy: String = r.get(1);
        let on_failure = policy
            .parse::<DependencyFailure>()
            .map_err(|_| corrupt(format!("on_failure {policy:?}")))?;
        let job_id: String = r.get(2);
        edges.entry(r.get(0)).or_default().push(DependentEdge {
            job_id: job_id.clone(),
            on_failure,
        });
        if dependents.contains_key(&job_id) {
            continue;
        }
        let status: String = r.get(4);
        let status = status
            .parse::<JobStatus>()
            .map_err(|_| corrupt(format!("status {status:?}")))?;
        let row = DependentRow {
            job_id: job_id.clone(),
            queue: r.get(3),
            status,
            open_dependencies: r.get(5),
            scheduled_at_ms: r.get(6),
        };
        dependents.insert(
            job_id,
            Dependent {
                row,
                has_dependents: r.get(7),
                cancelled: None,
                changed: false,
            },
        );
    }
    Ok((edges, dependents))
}

async fn write_settled(
    db: &Db<'_>,
    now: i64,
    changed: impl Iterator<Item = &Dependent>,
) -> Result<()> {
    let mut ids: Vec<&str> = Vec::new();
    let mut statuses: Vec<&str> = Vec::new();
    let mut open: Vec<i64> = Vec::new();
    let mut due: Vec<i64> = Vec::new();
    let mut cancelled_at: Vec<Option<i64>> = Vec::new();
    let mut errors: Vec<Option<&str>> = Vec::new();
    for d in changed {
        ids.push(&d.row.job_id);
        statuses.push(d.row.status.as_str());
        open.push(d.row.open_dependencies);
        due.push(d.row.scheduled_at_ms);
        cancelled_at.push(d.cancelled.as_ref().map(|_| now));
        errors.push(d.cancelled.as_deref());
    }
    if ids.is_empty() {
        return Ok(());
    }
    db.execute(
        WRITE_SETTLED,
        &[&ids, &statuses, &open, &due, &cancelled_at, &errors],
    )
    .await?;
    Ok(())
}

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
        let status: String = row.get(1);
        let status = status
            .parse::<JobStatus>()
            .map_err(|_| corrupt(format!("status {status:?}")))?;
        out.insert(row.get(0), status);
    }
    Ok(out)
}
