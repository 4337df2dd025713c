//! Counts and revision (`docs/counts.md`) kept in `duraq_counts`: one row per status, one
//! `revision` row, and one `work` row (the cross-process work epoch, see
//! [`bump_work_epoch`]). A snapshot reads those nine rows, so it costs the same at
//! ten rows or ten million. SQLite has a single writer anyway, so sharding the
//! rows would add reads without removing any wait; the bookkeeping is a handful of
//! primary-key updates inside the writer's group-commit transaction.
//!
//! Counts per queue (schema version 4) live in `duraq_queue_counts`, one row per
//! queue with a column per status, upserted by the same [`apply_change`] that
//! updates the global rows, so they share its revision. Rows that fall to all
//! zeros (a queue whose jobs were all pruned) are kept: deleting them would cost
//! every prune a check, and a snapshot leaves them out anyway.
//! [`queue_snapshot`] reads the nine global rows, the queue rows, and per queue
//! with queued jobs the first entry of the `(queue, scheduled_at_ms)` index of
//! queued jobs (its latency), all in the reader's one transaction.
//!
//! The same upsert adds the change's outcome totals (schema version 9,
//! `docs/history.md`) to six more columns of the queue row: no extra row and no
//! extra statement per commit.

use duraq_core::driver::{CountChange, STATUS_COUNT};
use duraq_core::inspect::{CountDelta, CountSnapshot, QueueCounts, QueueSnapshot};
use duraq_core::{Error, JobStatus, Result};
use rusqlite::Connection;

use crate::error::SqlResult;

/// Adds `change` to the counts and bumps the revision once; returns the delta to
/// publish after commit. The caller only calls this for a non-zero change.
pub(crate) fn apply_change(conn: &Connection, change: &CountChange) -> Result<CountDelta> {
    for (status, delta) in JobStatus::ALL.iter().zip(change.per_status()) {
        if delta != 0 {
            add_to(conn, status.as_str(), delta)?;
        }
    }
    let mut upsert = conn
        .prepare_cached(
            "INSERT INTO duraq_queue_counts \
             (queue, queued, handed_off, completed, failed, cancelled, orphaned, pending, \
             enqueued_total, completed_total, failed_total, retried_total, cancelled_total, \
             orphaned_total) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
             ON CONFLICT (queue) DO UPDATE SET \
             queued = queued + excluded.queued, handed_off = handed_off + excluded.handed_off, \
             completed = completed + excluded.completed, failed = failed + excluded.failed, \
             cancelled = cancelled + excluded.cancelled, orphaned = orphaned + excluded.orphaned, \
             pending = pending + excluded.pending, \
             enqueued_total = enqueued_total + excluded.enqueued_total, \
             completed_total = completed_total + excluded.completed_total, \
             failed_total = failed_total + excluded.failed_total, \
             retried_total = retried_total + excluded.retried_total, \
             cancelled_total = cancelled_total + excluded.cancelled_total, \
             orphaned_total = orphaned_total + excluded.orphaned_total",
        )
        .db()?;
    for (queue, d, totals) in change.per_queue_with_totals() {
        let t = totals.as_array();
        upsert
            .execute(rusqlite::params![
                queue, d[0], d[1], d[2], d[3], d[4], d[5], d[6], t[0], t[1], t[2], t[3], t[4], t[5]
            ])
            .db()?;
    }
    add_to(conn, "revision", 1)?;
    Ok(change.to_delta(counter(conn, "revision")?))
}

/// Adds `delta` to the row `name` of `duraq_counts`. Reading a bumped row back is
/// a separate `SELECT` ([`counter`]), not `UPDATE … RETURNING`: SQLite collects
/// returned rows in a temporary table it creates on every execution, which
/// showed in the profile of every commit.
fn add_to(conn: &Connection, name: &str, delta: i64) -> Result<()> {
    conn.prepare_cached("UPDATE duraq_counts SET value = value + ?2 WHERE name = ?1")
        .db()?
        .execute(rusqlite::params![name, delta])
        .db()?;
    Ok(())
}

/// The row `name` of `duraq_counts`.
fn counter(conn: &Connection, name: &str) -> Result<i64> {
    conn.prepare_cached("SELECT value FROM duraq_counts WHERE name = ?1")
        .db()?
        .query_row([name], |r| r.get(0))
        .db()
}

/// The counter rows (one per status, and the revision) as one consistent snapshot.
pub(crate) fn snapshot(conn: &Connection) -> Result<CountSnapshot> {
    let mut stmt = conn
        .prepare_cached("SELECT name, value FROM duraq_counts")
        .db()?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .db()?;
    let mut per_status = [0i64; STATUS_COUNT];
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

/// The global snapshot, every queue's counters and latency as of `now`. Must run
/// inside one read transaction (the reader's), so that all of it is one state.
pub(crate) fn queue_snapshot(conn: &Connection, now: i64) -> Result<QueueSnapshot> {
    let global = snapshot(conn)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT c.queue, c.queued, c.handed_off, c.completed, c.failed, c.cancelled, \
             c.orphaned, c.pending, CASE WHEN c.queued > 0 THEN (SELECT j.scheduled_at_ms FROM duraq_jobs AS j \
             INDEXED BY duraq_jobs_queue_due WHERE j.status = 'queued' AND j.queue = c.queue \
             ORDER BY j.scheduled_at_ms LIMIT 1) END FROM duraq_queue_counts AS c",
        )
        .db()?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                [
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ],
                r.get::<_, Option<i64>>(8)?,
            ))
        })
        .db()?;
    let mut queues = Vec::new();
    for row in rows {
        let (queue, per_status, oldest) = row.db()?;
        queues.extend(QueueCounts::new(queue, per_status, oldest, now));
    }
    Ok(QueueSnapshot::new(
        global.counts.as_array(),
        global.revision,
        now,
        queues,
    ))
}

/// Bumps the `work` epoch: other processes see it through
/// [`crate::backend::writer`]'s `data_version` poll and wake their workers. Claims and
/// heartbeats never bump it, so idle workers in several processes do not wake
/// each other in a loop.
pub(crate) fn bump_work_epoch(conn: &Connection) -> Result<i64> {
    add_to(conn, "work", 1)?;
    work_epoch(conn)
}

/// The current `work` epoch.
pub(crate) fn work_epoch(conn: &Connection) -> Result<i64> {
    counter(conn, "work")
}
