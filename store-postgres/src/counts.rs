//! Count bookkeeping on sharded counter rows (`docs/counts.md`).
//!
//! `duraq_count_shards` holds [`SHARDS`] rows, each with a revision and one
//! counter per status. A committing mutation adds its net change to *one* shard
//! (chosen per call) and bumps that shard's revision by one, so concurrent writers
//! rarely wait on the same row, while the snapshot is a sum over a fixed number of
//! rows: the same cost at ten thousand and ten million jobs, and exact, because a
//! single statement sees every committed mutation or none of it. The global
//! revision is the sum of the shard revisions, so it grows by exactly one per
//! committed count-changing call and not at all for rolled-back ones.
//!
//! Announcing is *not* done here for the store's own transactions: a NOTIFY
//! inside a transaction makes its commit take PostgreSQL's database-wide notify
//! lock, so every notifying commit in the cluster (and its WAL flush) would wait
//! for the previous one. The statement returns an [`Entry`] (shard, the shard's
//! new revision, the delta and the global revision as seen) and the store hands it
//! to its notifier after commit ([`crate::backend::notify`]). Only a caller's own
//! transaction ([`crate::PostgresStore::enqueue_in`]) notifies inside it, since
//! the store cannot see that commit. A delta's global revision is the shard sum
//! as the statement saw it: exact for one writer at a time; with concurrent
//! writers on other shards it can be off by their in-flight commits. The
//! per-shard revision is exact, which is what lets listeners find lost
//! announcements ([`crate::backend::count_mirror`]). Snapshots themselves are always exact.

use std::sync::{LazyLock, OnceLock};

use duraq_core::driver::{CountChange, STATUS_COUNT};
use duraq_core::inspect::{CountDelta, CountSnapshot, QueueCounts, QueueSnapshot, StatusCounts};
use duraq_core::Result;
use tokio_postgres::types::ToSql;

use crate::backend::db::Db;

/// Number of counter shards created by the schema.
pub const SHARDS: i32 = 16;

/// The shard update, after a CTE `s` naming the shard: CTEs `u` (the shard row)
/// and `t` (its revision and the global one).
macro_rules! shard_update {
    () => {
        "u AS (UPDATE {s}.duraq_count_shards SET revision = revision + 1, \
         queued = queued + $2, handed_off = handed_off + $3, completed = completed + $4, \
         failed = failed + $5, cancelled = cancelled + $6, orphaned = orphaned + $7, \
         pending = pending + $8 WHERE shard = (SELECT shard FROM s) RETURNING shard, revision), \
         t AS (SELECT u.shard, u.revision, (u.revision + COALESCE((SELECT sum(c.revision) \
         FROM {s}.duraq_count_shards AS c WHERE c.shard <> u.shard), 0))::int8 AS total FROM u) "
    };
}

/// The CTE `q`, after `u`: adds each queue's deltas and outcome totals (arrays
/// `$first`..`$first + 13`, see [`QueueDeltas`]) to that queue's row of the
/// shard `u` updated, creating it when missing. It reads `u`, so the shard row
/// is locked before any queue row: every writer takes the rows of one shard in
/// the same order (shard, then queues by name), and the shard row serializes
/// them, so they cannot deadlock. The totals (schema version 7,
/// `docs/history.md`) ride in the same upsert: no new row, no new statement.
fn queue_cte(first: usize) -> String {
    let arrays: Vec<String> = (0..QueueDeltas::ARRAYS)
        .map(|i| {
            let ty = if i == 0 { "text" } else { "int8" };
            format!("${}::{ty}[]", first + i)
        })
        .collect();
    format!(
        "q AS (INSERT INTO {{s}}.duraq_queue_count_shards AS c (queue, shard, queued, handed_off, \
         completed, failed, cancelled, orphaned, pending, enqueued_total, completed_total, \
         failed_total, retried_total, cancelled_total, orphaned_total) SELECT v.queue, u.shard, \
         v.d0, v.d1, v.d2, v.d3, v.d4, v.d5, v.d6, v.t0, v.t1, v.t2, v.t3, v.t4, v.t5 \
         FROM u, unnest({}) AS v (queue, d0, d1, d2, d3, d4, d5, d6, t0, t1, t2, t3, t4, t5) \
         ORDER BY v.queue COLLATE \"C\" \
         ON CONFLICT (queue, shard) DO UPDATE SET queued = c.queued + excluded.queued, \
         handed_off = c.handed_off + excluded.handed_off, completed = c.completed + excluded.completed, \
         failed = c.failed + excluded.failed, cancelled = c.cancelled + excluded.cancelled, \
         orphaned = c.orphaned + excluded.orphaned, pending = c.pending + excluded.pending, \
         enqueued_total = c.enqueued_total + excluded.enqueued_total, \
         completed_total = c.completed_total + excluded.completed_total, \
         failed_total = c.failed_total + excluded.failed_total, \
         retried_total = c.retried_total + excluded.retried_total, \
         cancelled_total = c.cancelled_total + excluded.cancelled_total, \
         orphaned_total = c.orphaned_total + excluded.orphaned_total) ",
        arrays.join(", ")
    )
}

/// The CTE `s` of a store transaction: shard `$1` (modulo `$9` shards).
///
/// Not "any shard row nobody holds" (`FOR UPDATE SKIP LOCKED`): tried, and under
/// concurrent writers that statement turned CPU-bound at hundreds of
/// milliseconds each; round-robin from a per-process offset collides rarely.
pub(crate) const SHARD_CTE: &str = "s AS (SELECT $1::int4 % $9::int4 AS shard)";

/// The CTEs that record a change (after [`SHARD_CTE`], with `$2`..`$8` the
/// per-status deltas (in [`duraq_core::JobStatus::ALL`] order) and the queue arrays from `$queue_first`), then the select
/// of (shard, shard revision, global revision as seen).
pub(crate) fn update_sql(queue_first: usize) -> String {
    format!(
        "{}, {}SELECT t.shard, t.revision, t.total FROM t",
        shard_update!().trim_end(),
        queue_cte(queue_first)
    )
}

/// [`update_sql`] that also NOTIFYs the entry under origin `$11` with work flag
/// `$12` (queue arrays from `$13`).
fn update_notify_sql() -> String {
    format!(
        "{}, {}SELECT t.shard, t.revision, t.total, pg_notify($10, json_build_object('o', $11::text, \
         'w', $12::bool, 'e', json_build_array(json_build_array(t.shard, t.revision, t.total, \
         $2, $3, $4, $5, $6, $7, $8)))::text)::text FROM t",
        shard_update!().trim_end(),
        queue_cte(13)
    )
}

/// A change's per-queue deltas and outcome totals as the fourteen arrays
/// [`queue_cte`] unnests.
pub(crate) struct QueueDeltas {
    queues: Vec<String>,
    deltas: [Vec<i64>; 13],
}

impl QueueDeltas {
    /// The number of arrays (queue names, seven deltas, six totals).
    pub(crate) const ARRAYS: usize = 14;

    pub(crate) fn new(change: &CountChange) -> Self {
        let mut out = Self {
            queues: Vec::new(),
            deltas: Default::default(),
        };
        for (queue, d, totals) in change.per_queue_with_totals() {
            out.queues.push(queue.to_owned());
            let values = d.into_iter().chain(totals.as_array());
            for (column, value) in out.deltas.iter_mut().zip(values) {
                column.push(value);
            }
        }
        out
    }

    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut out: Vec<&(dyn ToSql + Sync)> = vec![&self.queues];
        out.extend(self.deltas.iter().map(|d| d as &(dyn ToSql + Sync)));
        out
    }
}

/// One committed count change: `shard` moved to `shard_revision`, the
/// per-status `deltas`, and the global `revision` the statement saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub shard: i32,
    pub shard_revision: i64,
    pub revision: i64,
    pub deltas: [i64; STATUS_COUNT],
}

impl Entry {
    /// The wire form inside a NOTIFY payload: `[shard, shard_rev, rev, d0..d6]`.
    pub fn to_json(self) -> serde_json::Value {
        let mut out = vec![i64::from(self.shard), self.shard_revision, self.revision];
        out.extend(self.deltas);
        serde_json::json!(out)
    }

    /// Parses [`Entry::to_json`]'s form; `None` for anything else. An entry
    /// of six deltas (a process from before the `pending` status, schema
    /// version 9, during a rolling upgrade) reads as no change of `pending`.
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let mut numbers: Vec<i64> = value
            .as_array()?
            .iter()
            .map(serde_json::Value::as_i64)
            .collect::<Option<_>>()?;
        if numbers.len() == 3 + STATUS_COUNT - 1 {
            numbers.push(0);
        }
        let [shard, shard_revision, revision, d @ ..] =
            <[i64; 3 + STATUS_COUNT]>::try_from(numbers).ok()?;
        Some(Self {
            shard: i32::try_from(shard).ok()?,
            shard_revision,
            revision,
            deltas: d,
        })
    }

    pub fn delta(&self) -> CountDelta {
        CountDelta {
            deltas: StatusCounts::from_array(self.deltas),
            revision: self.revision,
        }
    }
}

/// What a committed transaction must announce, here and to other processes.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub entry: Option<Entry>,
    pub work: bool,
    /// A row went back to `queued` ([`CountChange::requeued`]): this
    /// process's lane hints are dropped.
    pub requeued: bool,
    /// A release backlog entry was put (this process's workers are told).
    pub backlog: bool,
}

/// The statement that records a store transaction's change (see [`record`]).
pub(crate) static STORE_SQL: LazyLock<String> =
    LazyLock::new(|| format!("WITH {SHARD_CTE}, {}", update_sql(10)));

/// Adds `change` to a shard row and bumps its revision (nothing for a zero
/// change). A store transaction records once, just before commit, on `shard`. With
/// `notify_origin` (an application's transaction, which may enqueue several
/// times) it always uses "this session's shard" (backend pid modulo
/// [`SHARDS`]), so two such transactions cannot deadlock on shard rows taken in
/// opposite orders, and NOTIFYs the entry (and work flag) inside the transaction.
pub(crate) async fn record(
    db: &Db<'_>,
    shard: i32,
    change: &CountChange,
    work: bool,
    notify_origin: Option<&str>,
) -> Result<Effects> {
    if change.is_zero() {
        if let (true, Some(origin)) = (work, notify_origin) {
            let body = serde_json::json!({"o": origin, "w": true, "e": []}).to_string();
            db.execute(
                "SELECT pg_notify($1, $2)::text",
                &[&db.names.channel, &body],
            )
            .await?;
        }
        return Ok(Effects {
            entry: None,
            work,
            backlog: false,
            requeued: false,
        });
    }
    static NOTIFY_SQL: OnceLock<String> = OnceLock::new();
    let d = change.per_status();
    let queues = QueueDeltas::new(change);
    let row = match notify_origin {
        None => {
            let sql = STORE_SQL.as_str();
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![
                &shard, &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &d[6], &SHARDS,
            ];
            params.extend(queues.params());
            db.query_one(sql, &params).await?
        }
        Some(origin) => {
            let sql = NOTIFY_SQL.get_or_init(|| {
                format!(
                    "WITH s AS (SELECT CASE WHEN $1::int4 >= 0 THEN $1::int4 \
                     ELSE pg_backend_pid() % $9::int4 END AS shard), {}",
                    update_notify_sql()
                )
            });
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![
                &shard,
                &d[0],
                &d[1],
                &d[2],
                &d[3],
                &d[4],
                &d[5],
                &d[6],
                &SHARDS,
                &db.names.channel,
                &origin,
                &work,
            ];
            params.extend(queues.params());
            db.query_one(sql, &params).await?
        }
    };
    Ok(Effects {
        entry: Some(Entry {
            shard: row.get(0),
            shard_revision: row.get(1),
            revision: row.get(2),
            deltas: d,
        }),
        work,
        backlog: false,
        requeued: change.requeued(),
    })
}

/// Every shard row: (shard, revision, per-status counts), in shard order.
pub(crate) async fn shard_rows(db: &Db<'_>) -> Result<Vec<(i32, i64, [i64; STATUS_COUNT])>> {
    let rows = db
        .query(
            "SELECT shard, revision, queued, handed_off, completed, failed, cancelled, orphaned, \
             pending FROM {s}.duraq_count_shards ORDER BY shard",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), per_status(r, 2)))
        .collect())
}

/// The [`STATUS_COUNT`] counters of `row` from column `first` on, in
/// [`duraq_core::JobStatus::ALL`] order.
fn per_status(row: &crate::backend::row::Row, first: usize) -> [i64; STATUS_COUNT] {
    std::array::from_fn(|i| row.get(first + i))
}

/// The exact counts and revision, summed over the shards in one statement.
pub(crate) async fn snapshot(db: &Db<'_>) -> Result<CountSnapshot> {
    let row = db
        .query_one(
            "SELECT COALESCE(sum(queued), 0)::int8, COALESCE(sum(handed_off), 0)::int8, \
             COALESCE(sum(completed), 0)::int8, COALESCE(sum(failed), 0)::int8, \
             COALESCE(sum(cancelled), 0)::int8, COALESCE(sum(orphaned), 0)::int8, \
             COALESCE(sum(pending), 0)::int8, COALESCE(sum(revision), 0)::int8 \
             FROM {s}.duraq_count_shards",
            &[],
        )
        .await?;
    Ok(CountSnapshot::new(per_status(&row, 0), row.get(7)))
}

/// The global snapshot, every queue's summed shard rows, and per queue with
/// queued jobs the first entry of the `(queue, scheduled_at_ms)` index of queued
/// jobs: one statement, so one MVCC snapshot, whose cost depends on the number of
/// queues and shards, not of jobs.
pub(crate) async fn queue_snapshot(db: &Db<'_>, now: i64) -> Result<QueueSnapshot> {
    let rows = db
        .query(
            "SELECT NULL::text, COALESCE(sum(queued), 0)::int8, COALESCE(sum(handed_off), 0)::int8, \
             COALESCE(sum(completed), 0)::int8, COALESCE(sum(failed), 0)::int8, \
             COALESCE(sum(cancelled), 0)::int8, COALESCE(sum(orphaned), 0)::int8, \
             COALESCE(sum(pending), 0)::int8, COALESCE(sum(revision), 0)::int8 \
             FROM {s}.duraq_count_shards \
             UNION ALL SELECT q.queue, q.queued, q.handed_off, q.completed, q.failed, q.cancelled, \
             q.orphaned, q.pending, CASE WHEN q.queued > 0 THEN (SELECT j.scheduled_at_ms FROM {s}.duraq_jobs AS j \
             WHERE j.status = 'queued' AND j.queue = q.queue ORDER BY j.scheduled_at_ms LIMIT 1) END \
             FROM (SELECT queue, sum(queued)::int8 AS queued, sum(handed_off)::int8 AS handed_off, \
             sum(completed)::int8 AS completed, sum(failed)::int8 AS failed, \
             sum(cancelled)::int8 AS cancelled, sum(orphaned)::int8 AS orphaned, \
             sum(pending)::int8 AS pending FROM {s}.duraq_queue_count_shards GROUP BY queue) AS q",
            &[],
        )
        .await?;
    let mut global = ([0; STATUS_COUNT], 0);
    let mut queues = Vec::new();
    for row in &rows {
        let counts = per_status(row, 1);
        match row.get::<_, Option<String>>(0) {
            None => global = (counts, row.get(8)),
            Some(queue) => queues.extend(QueueCounts::new(queue, counts, row.get(8), now)),
        }
    }
    Ok(QueueSnapshot::new(global.0, global.1, now, queues))
}
