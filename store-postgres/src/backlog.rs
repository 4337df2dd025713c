//! The release backlog on PostgreSQL (`docs/workflows.md`, "Cost"): a row of
//! `duraq_release_backlog` per finished job whose dependents did not all fit
//! in a bounded transaction ([`crate::release`]), keyed by job.
//!
//! [`take_entry`] takes one entry (for [`crate::release::continue_step`]) `FOR UPDATE SKIP LOCKED`, so several
//! workers share a wide fan-out and none settles an edge twice: an entry is
//! walked by one transaction at a time, and its cursor moves (or the entry
//! goes) in that transaction; core's loop runs from the cursor
//! ([`duraq_core::driver::rules::DependencyRelease::resume`]). It does not lock the
//! entry's job: an operator retry of it locks the job, then deletes the entry
//! ([`DROP_ENTRIES`]), and so waits for a step under way instead of
//! deadlocking with it. A delete takes the entry along
//! ([`crate::dependencies::DELETE_EDGES_WITH_JOBS`]).

use duraq_core::driver::rules::{BacklogEntry, BacklogWrite};
use duraq_core::{JobStatus, Result};

use crate::backend::db::Db;
use crate::rows::parse_status;

/// Takes one backlog entry nobody else holds, with its job's status now.
const TAKE_ENTRY: &str = "SELECT b.job_id, b.status, b.after_job_id, j.status \
     FROM {s}.duraq_release_backlog AS b LEFT JOIN {s}.duraq_jobs AS j ON j.id = b.job_id \
     ORDER BY b.job_id LIMIT 1 FOR UPDATE OF b SKIP LOCKED";

/// Puts the entries of `$1` (statuses `$2`, cursors `$3`), replacing any.
const PUT_ENTRIES: &str = "INSERT INTO {s}.duraq_release_backlog (job_id, status, after_job_id) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) \
     ON CONFLICT (job_id) DO UPDATE SET status = excluded.status, \
     after_job_id = excluded.after_job_id";

/// Deletes the entries of the jobs `$1` (walked to their end, retried,
/// reopened).
pub(crate) const DROP_ENTRIES: &str =
    "DELETE FROM {s}.duraq_release_backlog WHERE job_id = ANY($1::text[])";

/// Takes one backlog entry nobody else holds (`FOR UPDATE SKIP LOCKED`, held
/// until the transaction ends), with its job's status now (`None`: the job is
/// gone); `None` when there is none.
pub(crate) async fn take_entry(db: &Db<'_>) -> Result<Option<(BacklogEntry, Option<JobStatus>)>> {
    let Some(row) = db.query_opt(TAKE_ENTRY, &[]).await? else {
        return Ok(None);
    };
    let entry = BacklogEntry {
        job_id: row.get(0),
        status: parse_status(row.get(1))?,
        after: row.get(2),
    };
    let current = row
        .get::<_, Option<&str>>(3)
        .map(parse_status)
        .transpose()?;
    Ok(Some((entry, current)))
}

/// Persists core's backlog writes (a statement for the puts, one for the
/// removals); returns whether an entry was put.
pub(crate) async fn write(db: &Db<'_>, writes: Vec<BacklogWrite>) -> Result<bool> {
    let mut put: (Vec<String>, Vec<&str>, Vec<Option<String>>) = Default::default();
    let mut removed: Vec<String> = Vec::new();
    for write in writes {
        match write {
            BacklogWrite::Put(e) => {
                put.0.push(e.job_id);
                put.1.push(e.status.as_str());
                put.2.push(e.after);
            }
            BacklogWrite::Remove(job_id) => removed.push(job_id),
        }
    }
    if !removed.is_empty() {
        db.execute(DROP_ENTRIES, &[&removed]).await?;
    }
    if put.0.is_empty() {
        return Ok(false);
    }
    db.execute(PUT_ENTRIES, &[&put.0, &put.1, &put.2]).await?;
    Ok(true)
}
