//! The release backlog on SQLite (`docs/workflows.md`, "Cost"): a row of
//! `duraq_release_backlog` per finished job whose dependents did not all fit
//! in a bounded transaction ([`crate::release`]): the job, its terminal
//! status and the last dependent settled.
//!
//! - **Written** with the release that left it ([`write`]) and signalled after
//!   commit to this process's workers.
//! - **Continued** by [`crate::release::continue_step`]: the first entry ([`first_entry`]), walked on from its
//!   cursor under the same bound, one logical write each. The single writer
//!   serializes the steps, so no edge is settled twice.
//! - **Dropped** ([`drop_backlog`]) when its job is retried, reopened or
//!   deleted: the dependents it had not reached still count it as open.

use duraq_core::driver::rules::{BacklogEntry, BacklogWrite};
use duraq_core::{JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::tx::Tx;

/// The first backlog entry (in job-id order) with its job's status now
/// (`None`: the job is gone); `None` when the backlog is empty.
pub(crate) fn first_entry(conn: &Connection) -> Result<Option<(BacklogEntry, Option<JobStatus>)>> {
    let entry = conn
        .prepare_cached(
            "SELECT b.job_id, b.status, b.after_job_id, j.status FROM duraq_release_backlog AS b \
             LEFT JOIN duraq_jobs AS j ON j.id = b.job_id ORDER BY b.job_id LIMIT 1",
        )
        .db()?
        .query_row([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .optional()
        .db()?;
    let Some((job_id, status, after, current)) = entry else {
        return Ok(None);
    };
    let entry = BacklogEntry {
        job_id,
        status: status.parse()?,
        after,
    };
    Ok(Some((entry, current.map(|s| s.parse()).transpose()?)))
}

/// Persists the backlog writes core decided, and signals an entry put.
pub(crate) fn write(tx: &mut Tx<'_>, writes: Vec<BacklogWrite>) -> Result<()> {
    for write in writes {
        match write {
            BacklogWrite::Put(entry) => {
                tx.conn
                    .prepare_cached(
                        "INSERT INTO duraq_release_backlog (job_id, status, after_job_id) \
                         VALUES (?1, ?2, ?3) ON CONFLICT (job_id) DO UPDATE SET \
                         status = excluded.status, after_job_id = excluded.after_job_id",
                    )
                    .db()?
                    .execute(params![entry.job_id, entry.status.as_str(), entry.after])
                    .db()?;
                tx.signal_backlog();
            }
            BacklogWrite::Remove(job_id) => drop_backlog(tx.conn, &job_id)?,
        }
    }
    Ok(())
}

/// Deletes the backlog entry of job `id`, if any.
pub(crate) fn drop_backlog(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM duraq_release_backlog WHERE job_id = ?1")
        .db()?
        .execute([id])
        .db()?;
    Ok(())
}
