//! Settling dependents in bounded transactions (`docs/workflows.md`, "Cost"):
//! core's loop ([`duraq_core::driver::rules::DependencyRelease`]) over the edge table,
//! in the transaction that finished their dependency (and in each step of the
//! release backlog, [`crate::backlog`]).
//!
//! [`settle`] runs the loop level by level: the finished jobs of one level
//! have their next edges (after each one's cursor, in dependent-id order, at
//! most its share of [`duraq_core::driver::rules::RELEASE_BATCH`] plus one: a
//! `LATERAL` range of the edge table's primary key each) and dependent rows
//! read, and the dependents locked, in one statement ([`DEPENDENTS`]); core
//! settles each finished job in turn on those rows, kept up to date in memory,
//! so a dependent two finished jobs of a level share sees the first one's
//! count down; the changes are written with one statement; the dependents it
//! cancelled are the next level. A cancelled dependent no job depends on
//! (`has_dependents`) ends its branch without a read. What does not fit the
//! bound is a `duraq_release_backlog` entry, written in the same transaction
//! and continued later through [`crate::backlog`].

use std::collections::{HashMap, HashSet};

use crate::backend::row::Row;
use duraq_core::driver::rules::{
    DependencyRelease, DependentChange, DependentEdge, DependentRow, ReleaseStep,
};
use duraq_core::driver::CountChange;
use duraq_core::{DependencyFailure, JobStatus, Result};

use crate::backend::db::Db;
use crate::error::corrupt;

/// The next edges of each finished job of a level (`$1` ids, `$2` cursors,
/// `''` for none, `$3` read limits) in the primary key's order, with their
/// dependents' rows (NULL for a missing one), each dependent locked (in id
/// order). The dependents' ids are collected into an array first (an
/// InitPlan) and looked up by primary key: joined directly, the planner
/// merge-joined the edges against a walk of the whole primary key of the jobs
/// (`tests/plans.rs`). `n` keeps each range's order for the cursor.
const DEPENDENTS: &str =
    "WITH e AS MATERIALIZED (SELECT s.dep AS dep_id, x.job_id, x.on_failure, x.n \
     FROM unnest($1::text[], $2::text[], $3::int8[]) AS s(dep, after, lim) \
     CROSS JOIN LATERAL (SELECT d.job_id, d.on_failure, row_number() OVER (ORDER BY d.job_id) AS n \
     FROM {s}.duraq_job_dependents AS d WHERE d.dep_id = s.dep AND d.job_id > s.after \
     ORDER BY d.job_id LIMIT s.lim) AS x), \
     j AS (SELECT id, queue, status, open_dependencies, scheduled_at_ms, has_dependents \
     FROM {s}.duraq_jobs WHERE id = ANY(ARRAY(SELECT job_id FROM e)) \
     ORDER BY id COLLATE \"C\" FOR UPDATE) \
     SELECT e.dep_id, e.on_failure, e.job_id, j.queue, j.status, j.open_dependencies, \
     j.scheduled_at_ms, j.has_dependents FROM e LEFT JOIN j ON j.id = e.job_id \
     ORDER BY e.dep_id, e.n";

/// Writes settled dependents: status, open count and due time; the
/// cancellation's time and error only where it cancelled.
const WRITE_SETTLED: &str = "UPDATE {s}.duraq_jobs AS j SET status = v.status, \
     open_dependencies = v.open, scheduled_at_ms = v.due, \
     cancelled_at_ms = COALESCE(v.cancelled_at_ms, j.cancelled_at_ms), \
     cancel_reason = CASE WHEN v.cancelled_at_ms IS NULL THEN j.cancel_reason \
     ELSE 'dependency' END, \
     last_error = COALESCE(v.last_error, j.last_error) \
     FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::text[]) \
     AS v(id, status, open, due, cancelled_at_ms, last_error) WHERE j.id = v.id";

/// What a run of the loop did.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// A dependent was released (work for a worker).
    pub released: bool,
    /// A backlog entry was put (the backlog signal).
    pub backlog: bool,
    /// Edges walked.
    pub walked: usize,
}

/// A dependent as read and settled so far in one level.
struct Dependent {
    row: DependentRow,
    has_dependents: bool,
    /// The cancellation's error, once a finished job cancelled it.
    cancelled: Option<String>,
    changed: bool,
}

/// Settles the dependents of `finished` (jobs just made terminal, with their
/// status) within the bound; counts every move into `change`.
pub(crate) async fn settle(
    db: &Db<'_>,
    now: i64,
    finished: Vec<(String, JobStatus)>,
    change: &mut CountChange,
) -> Result<Settled> {
    let mut release = DependencyRelease::new();
    for (id, status) in finished {
        release.finished(id, status);
    }
    run(db, now, release, change).await
}

/// One step of one backlog entry nobody else holds ([`crate::backlog`]):
/// core's loop resumed from its cursor; `None` when there is none.
pub(crate) async fn continue_step(
    db: &Db<'_>,
    now: i64,
    change: &mut CountChange,
) -> Result<Option<Settled>> {
    let Some((entry, current)) = crate::backlog::take_entry(db).await? else {
        return Ok(None);
    };
    let mut release = DependencyRelease::new();
    release.resume(entry, current);
    run(db, now, release, change).await.map(Some)
}

/// Core's loop over the edge table, from what `release` was given.
async fn run(
    db: &Db<'_>,
    now: i64,
    mut release: DependencyRelease,
    change: &mut CountChange,
) -> Result<Settled> {
    let mut leaves: HashSet<String> = HashSet::new();
    let mut settled = Settled::default();
    loop {
        let level = release.next_level();
        if level.is_empty() {
            break;
        }
        let read: Vec<&ReleaseStep> = level
            .iter()
            .filter(|s| !leaves.contains(&s.done.job_id))
            .collect();
        let ids: Vec<&str> = read.iter().map(|s| s.done.job_id.as_str()).collect();
        let after: Vec<&str> = read
            .iter()
            .map(|s| s.after.as_deref().unwrap_or(""))
            .collect();
        let limits: Vec<i64> = read
            .iter()
            .map(|s| i64::try_from(s.read_limit()).unwrap_or(i64::MAX))
            .collect();
        let rows = if ids.is_empty() {
            Vec::new()
        } else {
            db.query(DEPENDENTS, &[&ids, &after, &limits]).await?
        };
        let (mut edges, mut dependents) = read_level(&rows)?;
        for step in &level {
            let list = edges.remove(&step.done.job_id).unwrap_or_default();
            let current = list
                .iter()
                .filter_map(|e| dependents.get(&e.job_id).map(|d| d.row.clone()))
                .collect();
            for change_of in release.settle(step, &list, current, now) {
                let d = dependents
                    .get_mut(change_of.job_id())
                    .expect("a settled dependent was read");
                let from = d.row.status;
                match change_of {
                    DependentChange::Waiting { open, .. } => d.row.open_dependencies = open,
                    DependentChange::Released { at_ms, .. } => {
                        d.row.status = JobStatus::Queued;
                        d.row.open_dependencies = 0;
                        d.row.scheduled_at_ms = at_ms;
                        settled.released = true;
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
    settled.walked = release.walked();
    settled.backlog = crate::backlog::write(db, release.backlog()).await?;
    Ok(settled)
}

/// One level's edges by finished job (in the order read), and its dependents
/// by id (a missing dependent row has an edge and no entry).
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
        let Some(status) = r.get::<_, Option<String>>(4) else {
            continue;
        };
        if dependents.contains_key(&job_id) {
            continue;
        }
        let row = DependentRow {
            job_id: job_id.clone(),
            queue: r.get(3),
            status: crate::rows::parse_status(&status)?,
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
