//! Job rows between PostgreSQL and [`duraq_core::Job`].
//!
//! Stores never edit a job column by column: they load the row, apply a pure
//! transition from `duraq_core::driver::transitions`, and write the mutable columns back
//! here, many rows per statement (`UNNEST` of one array per column). The
//! columns, how each is read and which are written back are described once in
//! [`crate::columns`].

use crate::backend::row::Row;
use duraq_core::{Job, JobStatus, Result};

use crate::backend::db::Db;
use crate::columns::{col, statements, Source};
pub(crate) use crate::columns::{job_from_row, parse_status, JOB_COLUMNS};

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

pub(crate) fn loaded_from_row(row: &Row) -> Result<Loaded> {
    let job = job_from_row(row)?;
    let reservation = match job.status {
        JobStatus::HandedOff => row.get(col::reservation_key),
        _ => None,
    };
    Ok(Loaded {
        job,
        reservation,
        has_dependents: row.get(col::has_dependents),
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
    let sources: Vec<Source> = (rows.iter())
        .map(|(job, reservation)| Source::saved(job, *reservation))
        .collect();
    let arrays = statements::save_arrays(&sources);
    let params: Vec<_> = arrays.iter().map(|a| a.as_sql()).collect();
    db.execute(statements::save_sql(), &params).await?;
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
