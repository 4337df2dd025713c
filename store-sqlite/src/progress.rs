//! Progress and log lines of running jobs (`docs/jobs.md`, "Progress and
//! logs"): a row per job that said anything (`duraq_job_progress`) and its
//! newest lines (`duraq_job_logs`, keyed by job and `seq`), in tables of
//! their own so that the jobs table and its hot updates stay as they are.
//! A write is fenced by the lease like a report, and applies
//! [`duraq_core::driver::progress_write`]; the rows go when their job is deleted
//! ([`delete_for`], called by every delete in the same transaction).

use duraq_core::driver::{progress_write, Lease, ProgressBatch, ProgressRow};
use duraq_core::inspect::{JobProgress, LogLine};
use duraq_core::{JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::tx::Tx;

/// Persists one fenced batch; `false` (nothing written) when the lease is stale.
pub(crate) fn record(tx: &mut Tx<'_>, batch: &ProgressBatch) -> Result<bool> {
    let lease = batch.lease();
    if !lease_holds(tx.conn, lease)? {
        return Ok(false);
    }
    let row = load_row(tx.conn, &lease.job_id)?;
    let write = progress_write(row.as_ref(), batch, tx.now);
    tx.conn
        .prepare_cached(
            "INSERT INTO duraq_job_progress (job_id, fraction, message, updated_at_ms, lines_total) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job_id) DO UPDATE SET \
             fraction = excluded.fraction, message = excluded.message, \
             updated_at_ms = excluded.updated_at_ms, lines_total = excluded.lines_total",
        )
        .db()?
        .execute(params![
            lease.job_id,
            write.row.fraction,
            write.row.message,
            write.row.updated_at_ms,
            write.row.lines_total
        ])
        .db()?;
    if !write.lines.is_empty() {
        let mut insert = tx
            .conn
            .prepare_cached(
                "INSERT INTO duraq_job_logs (job_id, seq, at_ms, attempt, line) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .db()?;
        for line in &write.lines {
            insert
                .execute(params![
                    lease.job_id,
                    line.seq,
                    line.at_ms,
                    line.attempt,
                    line.line
                ])
                .db()?;
        }
        tx.conn
            .prepare_cached("DELETE FROM duraq_job_logs WHERE job_id = ?1 AND seq < ?2")
            .db()?
            .execute(params![lease.job_id, write.keep_from_seq])
            .db()?;
    }
    Ok(true)
}

/// Whether `lease` is current on its job's row (a missing job: no), the
/// fence of every write beside a job (progress, a durable step).
pub(crate) fn lease_holds(conn: &Connection, lease: &Lease) -> Result<bool> {
    let current: Option<(String, Option<String>)> = conn
        .prepare_cached("SELECT status, handoff_id FROM duraq_jobs WHERE id = ?1")
        .db()?
        .query_row([&lease.job_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()?;
    let Some((status, handoff_id)) = current else {
        return Ok(false);
    };
    let status: JobStatus = status.parse()?;
    Ok(lease.is_current(status, handoff_id.as_deref()))
}

fn load_row(conn: &Connection, job_id: &str) -> Result<Option<ProgressRow>> {
    conn.prepare_cached(
        "SELECT fraction, message, updated_at_ms, lines_total FROM duraq_job_progress \
         WHERE job_id = ?1",
    )
    .db()?
    .query_row([job_id], |r| {
        Ok(ProgressRow {
            fraction: r.get(0)?,
            message: r.get(1)?,
            updated_at_ms: r.get(2)?,
            lines_total: r.get(3)?,
        })
    })
    .optional()
    .db()
}

/// A job's progress and kept lines (oldest first), in one read transaction.
pub(crate) fn get(conn: &Connection, job_id: &str) -> Result<Option<JobProgress>> {
    let Some(row) = load_row(conn, job_id)? else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, at_ms, attempt, line FROM duraq_job_logs WHERE job_id = ?1 ORDER BY seq",
        )
        .db()?;
    let logs = stmt
        .query_map([job_id], |r| {
            Ok(LogLine {
                seq: r.get(0)?,
                at_ms: r.get(1)?,
                attempt: r.get(2)?,
                line: r.get(3)?,
            })
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    Ok(Some(JobProgress {
        fraction: row.fraction,
        message: row.message,
        updated_at_ms: row.updated_at_ms,
        lines_total: row.lines_total,
        logs,
    }))
}

/// Deletes the progress and lines of `ids` (jobs being deleted), two
/// statements whatever their number; the lines are looked up only for jobs
/// that had a progress row, so jobs that never said anything cost one
/// primary-key probe each.
pub(crate) fn delete_for(conn: &Connection, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(ids).expect("strings serialize");
    let had: Vec<String> = conn
        .prepare_cached(
            "DELETE FROM duraq_job_progress WHERE job_id IN (SELECT value FROM json_each(?1)) \
             RETURNING job_id",
        )
        .db()?
        .query_map([&json], |r| r.get(0))
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    if had.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(&had).expect("strings serialize");
    conn.prepare_cached(
        "DELETE FROM duraq_job_logs WHERE job_id IN (SELECT value FROM json_each(?1))",
    )
    .db()?
    .execute([&json])
    .db()?;
    Ok(())
}
