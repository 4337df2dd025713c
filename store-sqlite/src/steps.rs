//! Durable steps (`docs/durable.md`): a row per job and step name in
//! `duraq_job_steps`, a table of its own so that the jobs table and its hot
//! updates stay as they are. A write is fenced by the lease like a report;
//! the rows go when their job is deleted ([`delete_for`], called by every
//! delete in the same transaction).

use duraq_core::driver::StepWrite;
use duraq_core::inspect::StepRecord;
use duraq_core::Result;
use rusqlite::{params, Connection};

use crate::error::SqlResult;
use crate::tx::Tx;

/// Records one step under its lease; `None` (nothing written) when the lease
/// is stale, else the record stored under the name (the first write's).
pub(crate) fn record(tx: &mut Tx<'_>, write: &StepWrite) -> Result<Option<StepRecord>> {
    record_on(tx.conn, write, tx.now)
}

/// [`record`] on a connection already inside a transaction (the store's, or
/// the application's when a step's writes commit with its record).
pub(crate) fn record_on(
    conn: &Connection,
    write: &StepWrite,
    now: i64,
) -> Result<Option<StepRecord>> {
    let lease = &write.lease;
    if !crate::progress::lease_holds(conn, lease)? {
        return Ok(None);
    }
    let output = serde_json::to_string(&write.output).expect("JSON values serialize");
    conn.prepare_cached(
        "INSERT INTO duraq_job_steps (job_id, name, output, at_ms, attempt) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job_id, name) DO NOTHING",
    )
    .db()?
    .execute(params![
        lease.job_id,
        write.name,
        output,
        now,
        write.attempt
    ])
    .db()?;
    let stored = read(conn, &lease.job_id, Some(&write.name))?;
    Ok(stored.into_iter().next())
}

/// A job's records, by time then name; only `name`'s when given.
fn read(conn: &Connection, job_id: &str, name: Option<&str>) -> Result<Vec<StepRecord>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT name, output, at_ms, attempt FROM duraq_job_steps \
             WHERE job_id = ?1 AND (?2 IS NULL OR name = ?2) ORDER BY at_ms, name",
        )
        .db()?;
    let rows = stmt
        .query_map(params![job_id, name], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
                r.get(3)?,
            ))
        })
        .db()?
        .collect::<rusqlite::Result<Vec<_>>>()
        .db()?;
    rows.into_iter()
        .map(|(name, output, at_ms, attempt)| {
            let output = serde_json::from_str(&output).map_err(|e| {
                duraq_core::Error::backend(format!("step {name:?} holds no JSON"), e)
            })?;
            Ok(StepRecord {
                name,
                output,
                at_ms,
                attempt,
            })
        })
        .collect()
}

/// A job's records (see [`duraq_core::Inspect::job_steps`]).
pub(crate) fn get(conn: &Connection, job_id: &str) -> Result<Vec<StepRecord>> {
    read(conn, job_id, None)
}

/// Deletes the records of `ids` (jobs being deleted), one statement whatever
/// their number: a primary-key range probe per job.
pub(crate) fn delete_for(conn: &Connection, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(ids).expect("strings serialize");
    conn.prepare_cached(
        "DELETE FROM duraq_job_steps WHERE job_id IN (SELECT value FROM json_each(?1))",
    )
    .db()?
    .execute([&json])
    .db()?;
    Ok(())
}
