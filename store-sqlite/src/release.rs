//! Settling the dependents of a job that became terminal, in bounded
//! transactions (`docs/workflows.md`, "Cost"): core's loop
//! ([`duraq_core::driver::rules::DependencyRelease`]) over `duraq_job_dependents`.
//!
//! [`release`], called by [`crate::ownership::persist_transition`] for every
//! job that became terminal, walks at most
//! [`duraq_core::driver::rules::RELEASE_BATCH`] edges in the finishing transaction. A
//! step's edges are one range of the edge table's primary key (`dep_id = ?
//! AND job_id > ?`, in id order, `LIMIT`), so a plain job pays one empty index
//! probe, and a finished job at most the bound of its own edges. What does not
//! fit is a release backlog entry, written in the same transaction and
//! continued later ([`crate::backlog`]).

use duraq_core::driver::rules::{
    DependencyRelease, DependentChange, DependentEdge, DependentRow, ReleaseStep,
};
use duraq_core::{JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::tx::Tx;

/// Settles the dependents of `job_id`, now in the terminal `status`, within
/// the bound (see the module doc).
pub(crate) fn release(tx: &mut Tx<'_>, job_id: &str, status: JobStatus) -> Result<()> {
    let mut release = DependencyRelease::new();
    release.finished(job_id, status);
    run(tx, release)?;
    Ok(())
}

/// One step of the first backlog entry ([`crate::backlog`]), walked on from
/// its cursor under the same bound: `None` when the backlog is empty, else
/// the edges walked.
pub(crate) fn continue_step(tx: &mut Tx<'_>) -> Result<Option<usize>> {
    let Some((entry, current)) = crate::backlog::first_entry(tx.conn)? else {
        return Ok(None);
    };
    let mut release = DependencyRelease::new();
    release.resume(entry, current);
    run(tx, release).map(Some)
}

/// Core's loop over the edge table; returns the edges walked.
fn run(tx: &mut Tx<'_>, mut release: DependencyRelease) -> Result<usize> {
    loop {
        let level = release.next_level();
        if level.is_empty() {
            break;
        }
        for step in level {
            let edges = edges_of(tx.conn, &step)?;
            let rows = dependent_rows(tx.conn, &edges)?;
            for change in release.settle(&step, &edges, rows, tx.now) {
                write_change(tx, &change)?;
            }
        }
    }
    crate::backlog::write(tx, release.backlog())?;
    Ok(release.walked())
}

/// The edges of `step`'s finished job after its cursor, in id order, at most
/// [`ReleaseStep::read_limit`].
fn edges_of(conn: &Connection, step: &ReleaseStep) -> Result<Vec<DependentEdge>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT job_id, on_failure FROM duraq_job_dependents \
             WHERE dep_id = ?1 AND job_id > ?2 ORDER BY job_id LIMIT ?3",
        )
        .db()?;
    let after = step.after.as_deref().unwrap_or("");
    let limit = i64::try_from(step.read_limit()).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![step.done.job_id, after, limit], |r| {
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

/// What release reads of the dependents `edges` name (a missing row is skipped).
fn dependent_rows(conn: &Connection, edges: &[DependentEdge]) -> Result<Vec<DependentRow>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT queue, status, open_dependencies, scheduled_at_ms FROM duraq_jobs WHERE id = ?1",
        )
        .db()?;
    let mut rows = Vec::with_capacity(edges.len());
    for edge in edges {
        let row = stmt
            .query_row([&edge.job_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .optional()
            .db()?;
        if let Some((queue, status, open_dependencies, scheduled_at_ms)) = row {
            rows.push(DependentRow {
                job_id: edge.job_id.clone(),
                queue,
                status: status.parse()?,
                open_dependencies,
                scheduled_at_ms,
            });
        }
    }
    Ok(rows)
}

/// Writes one [`DependentChange`]: the columns
/// [`duraq_core::driver::rules::apply_dependent_change`] sets, and the count of its move
/// out of `pending`.
fn write_change(tx: &mut Tx<'_>, change: &DependentChange) -> Result<()> {
    match change {
        DependentChange::Waiting { job_id, open } => {
            tx.conn
                .prepare_cached("UPDATE duraq_jobs SET open_dependencies = ?2 WHERE id = ?1")
                .db()?
                .execute(params![job_id, open])
                .db()?;
        }
        DependentChange::Released {
            job_id,
            queue,
            at_ms,
        } => {
            tx.conn
                .prepare_cached(
                    "UPDATE duraq_jobs SET status = 'queued', open_dependencies = 0, \
                     scheduled_at_ms = ?2 WHERE id = ?1",
                )
                .db()?
                .execute(params![job_id, at_ms])
                .db()?;
            tx.moved(queue, JobStatus::Pending, JobStatus::Queued);
            tx.signal_work();
        }
        DependentChange::Cancelled {
            job_id,
            queue,
            error,
        } => {
            tx.conn
                .prepare_cached(
                    "UPDATE duraq_jobs SET status = 'cancelled', cancelled_at_ms = ?2, \
                     cancel_reason = 'dependency', last_error = ?3 WHERE id = ?1",
                )
                .db()?
                .execute(params![job_id, tx.now, error])
                .db()?;
            tx.moved(queue, JobStatus::Pending, JobStatus::Cancelled);
        }
    }
    Ok(())
}
