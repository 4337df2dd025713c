//! Job dependencies (`docs/workflows.md`) on SQLite: the loops of
//! [`duraq_core::driver::rules`] over `duraq_job_dependents`, one row per edge keyed by
//! (dependency, dependent), inside the transaction of the mutation that asks.
//!
//! - **Start.** A new job with dependencies reads each dependency's status
//!   (a primary-key lookup each; the single writer needs no lock), asks
//!   [`start_of`], and is inserted in the status it answers with one edge row
//!   per dependency ([`start`], [`write_edges`]). A job of the same batch
//!   inserted earlier is already visible, so a batch may depend on itself.
//! - **Release.** A job that became terminal settles its dependents, within
//!   the bound, and continues through the release backlog: [`crate::release`],
//!   [`crate::backlog`].
//! - **Reopen.** An operator retry gives back what the job's failure
//!   cancelled, down the graph ([`reopen_dependents`]).
//! - **Delete.** A deleted job takes its edges and its backlog entry along,
//!   as a dependency (a range of the primary key) and as a dependent (one key per entry of its `depends_on`,
//!   so no second index is kept on the insert path) ([`delete_edges`]).

use std::collections::{HashMap, VecDeque};

use duraq_core::driver::rules::{
    reopen, reopened_open_count, start_of, DependencyStart, DependentEdge,
};
use duraq_core::{Dependency, Job, JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::ownership::{persist_transition, Reservation};
use crate::rows::load_job;
use crate::tx::Tx;

/// The status of job `id`, if it exists.
fn status_of(conn: &Connection, id: &str) -> Result<Option<JobStatus>> {
    let status: Option<String> = conn
        .prepare_cached("SELECT status FROM duraq_jobs WHERE id = ?1")
        .db()?
        .query_row([id], |r| r.get(0))
        .optional()
        .db()?;
    status.map(|s| s.parse()).transpose()
}

/// The current status of each of `deps` that exists.
fn statuses(conn: &Connection, deps: &[Dependency]) -> Result<HashMap<String, JobStatus>> {
    let mut found = HashMap::with_capacity(deps.len());
    for dep in deps {
        if let Some(status) = status_of(conn, &dep.job_id)? {
            found.insert(dep.job_id.clone(), status);
        }
    }
    Ok(found)
}

/// How a new job depending on `deps` starts (`dependency-not-found` when one
/// of them is no job); read before anything of the job is written.
pub(crate) fn start(conn: &Connection, deps: &[Dependency]) -> Result<DependencyStart> {
    let found = statuses(conn, deps)?;
    start_of(deps, |id| found.get(id).copied())
}

/// One edge row per dependency of the just inserted `job`.
pub(crate) fn write_edges(conn: &Connection, job: &Job) -> Result<()> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO duraq_job_dependents (dep_id, job_id, on_failure) VALUES (?1, ?2, ?3)",
        )
        .db()?;
    for dep in &job.depends_on {
        insert
            .execute(params![dep.job_id, job.id, dep.on_failure.as_str()])
            .db()?;
    }
    Ok(())
}

/// Every edge from `dep_id` to the jobs that depend on it (the reopen walk,
/// an operator's action, is not bounded).
fn edges_of(conn: &Connection, dep_id: &str) -> Result<Vec<DependentEdge>> {
    let mut stmt = conn
        .prepare_cached("SELECT job_id, on_failure FROM duraq_job_dependents WHERE dep_id = ?1")
        .db()?;
    let rows = stmt
        .query_map([dep_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .db()?;
    let mut edges = Vec::new();
    for row in rows {
        let (job_id, on_failure) = row.db()?;
        edges.push(DependentEdge {
            job_id,
            on_failure: on_failure.parse()?,
        });
    }
    Ok(edges)
}

/// After an operator retry of job `id`: gives back to `pending` (or `queued`)
/// the dependents it cancelled, and theirs down the graph, that none of their
/// dependencies still cancels.
pub(crate) fn reopen_dependents(tx: &mut Tx<'_>, id: &str) -> Result<()> {
    crate::backlog::drop_backlog(tx.conn, id)?;
    let mut walk = VecDeque::from([id.to_owned()]);
    while let Some(done) = walk.pop_front() {
        for edge in edges_of(tx.conn, &done)? {
            let Some(mut row) = load_job(tx.conn, &edge.job_id)? else {
                continue;
            };
            let found = statuses(tx.conn, &row.depends_on)?;
            let Some(open) = reopened_open_count(&row, |dep| found.get(dep).copied()) else {
                continue;
            };
            let from = row.status;
            reopen(&mut row, open, tx.now);
            persist_transition(tx, from, &row, Reservation::Known(None))?;
            // No longer terminal: what it had not settled waits for it.
            crate::backlog::drop_backlog(tx.conn, &row.id)?;
            walk.push_back(edge.job_id);
        }
    }
    Ok(())
}

/// Whether any job depends on `id` (an ephemeral job with dependents is kept:
/// they read its output).
pub(crate) fn has_dependents(conn: &Connection, id: &str) -> Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM duraq_job_dependents WHERE dep_id = ?1)")
        .db()?
        .query_row([id], |r| r.get(0))
        .db()
}

/// Deletes the edges of a job being deleted: as a dependency, and as a
/// dependent of each job in its `depends_on` (`None`: the job has none); and
/// its release backlog entry.
pub(crate) fn delete_edges(conn: &Connection, id: &str, depends_on: Option<&str>) -> Result<()> {
    crate::backlog::drop_backlog(conn, id)?;
    conn.prepare_cached("DELETE FROM duraq_job_dependents WHERE dep_id = ?1")
        .db()?
        .execute([id])
        .db()?;
    if let Some(depends_on) = depends_on {
        conn.prepare_cached(
            "DELETE FROM duraq_job_dependents WHERE job_id = ?1 \
             AND dep_id IN (SELECT json_extract(value, '$.jobId') FROM json_each(?2))",
        )
        .db()?
        .execute(params![id, depends_on])
        .db()?;
    }
    Ok(())
}
