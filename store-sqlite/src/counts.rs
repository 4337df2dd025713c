//! Counts and revision (`docs/counts.md`) kept in `duraq_counts`: one row per status, one
//! `revision` row, and one `work` row (the cross-process work epoch, see
//! [`bump_work_epoch`]). A snapshot reads those seven rows, so it costs the same at
//! ten rows or ten million. SQLite has a single writer anyway, so sharding the
//! rows would add reads without removing any wait; the bookkeeping is a handful of
//! primary-key updates inside the writer's group-commit transaction.

use duraq_core::{CountChange, CountDelta, CountSnapshot, Error, JobStatus, Result};
use rusqlite::Connection;

use crate::error_map::SqlResult;

/// Adds `change` to the counts and bumps the revision once; returns the delta to
/// publish after commit. The caller only calls this for a non-zero change.
pub(crate) fn apply_change(conn: &Connection, change: &CountChange) -> Result<CountDelta> {
    let mut stmt = conn
        .prepare_cached("UPDATE duraq_counts SET value = value + ?2 WHERE name = ?1")
        .db()?;
    for (status, delta) in JobStatus::ALL.iter().zip(change.per_status()) {
        if delta != 0 {
            stmt.execute(rusqlite::params![status.as_str(), delta])
                .db()?;
        }
    }
    let revision: i64 = conn
        .prepare_cached(
            "UPDATE duraq_counts SET value = value + 1 WHERE name = 'revision' RETURNING value",
        )
        .db()?
        .query_row([], |r| r.get(0))
        .db()?;
    Ok(change.to_delta(revision))
}

/// The seven counter rows as one consistent snapshot.
pub(crate) fn snapshot(conn: &Connection) -> Result<CountSnapshot> {
    let mut stmt = conn
        .prepare_cached("SELECT name, value FROM duraq_counts")
        .db()?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .db()?;
    let mut per_status = [0i64; 6];
    let mut revision = None;
    for row in rows {
        let (name, value) = row.db()?;
        if name == "revision" {
            revision = Some(value);
        } else if let Some(status) = JobStatus::ALL.iter().find(|s| s.as_str() == name) {
            per_status[status.index()] = value;
        }
    }
    let revision = revision.ok_or_else(|| Error::schema("duraq_counts has no revision row"))?;
    Ok(CountSnapshot::new(per_status, revision))
}

/// Bumps the `work` epoch: other processes see it through
/// [`crate::writer`]'s `data_version` poll and wake their workers. Claims and
/// heartbeats never bump it, so idle workers in several processes do not wake
/// each other in a loop.
pub(crate) fn bump_work_epoch(conn: &Connection) -> Result<i64> {
    conn.prepare_cached(
        "UPDATE duraq_counts SET value = value + 1 WHERE name = 'work' RETURNING value",
    )
    .db()?
    .query_row([], |r| r.get(0))
    .db()
}

/// The current `work` epoch.
pub(crate) fn work_epoch(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("SELECT value FROM duraq_counts WHERE name = 'work'")
        .db()?
        .query_row([], |r| r.get(0))
        .db()
}
