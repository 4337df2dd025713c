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
//! to its notifier after commit ([`crate::notify`]). Only a caller's own
//! transaction ([`crate::PostgresStore::enqueue_in`]) notifies inside it, since
//! the store cannot see that commit. A delta's global revision is the shard sum
//! as the statement saw it: exact for one writer at a time; with concurrent
//! writers on other shards it can be off by their in-flight commits. The
//! per-shard revision is exact, which is what lets listeners find lost
//! announcements ([`crate::mirror`]). Snapshots themselves are always exact.

use duraq_core::{CountChange, CountDelta, CountSnapshot, Result, StatusCounts};

use crate::db::Db;

/// Number of counter shards created by the schema.
pub const SHARDS: i32 = 16;

/// The shard update, after a CTE `s` naming the shard.
macro_rules! shard_update {
    () => {
        "u AS (UPDATE {s}.duraq_count_shards SET revision = revision + 1, \
         queued = queued + $2, handed_off = handed_off + $3, completed = completed + $4, \
         failed = failed + $5, cancelled = cancelled + $6, orphaned = orphaned + $7 \
         WHERE shard = (SELECT shard FROM s) RETURNING shard, revision), \
         t AS (SELECT u.shard, u.revision, (u.revision + COALESCE((SELECT sum(c.revision) \
         FROM {s}.duraq_count_shards AS c WHERE c.shard <> u.shard), 0))::int8 AS total FROM u) "
    };
}

/// The CTE `s` of a store transaction: shard `$1` (modulo `$8` shards).
///
/// Not "any shard row nobody holds" (`FOR UPDATE SKIP LOCKED`): tried, and under
/// concurrent writers that statement turned CPU-bound at hundreds of
/// milliseconds each; round-robin from a per-process offset collides rarely.
pub(crate) const SHARD_CTE: &str = "s AS (SELECT $1::int4 % $8::int4 AS shard)";

/// Returns (shard, shard revision, global revision as seen).
pub(crate) const UPDATE: &str = concat!(
    shard_update!(),
    "SELECT t.shard, t.revision, t.total FROM t"
);

/// [`UPDATE`] that also NOTIFYs the entry under origin `$10` with work flag `$11`.
const UPDATE_NOTIFY: &str = concat!(
    shard_update!(),
    "SELECT t.shard, t.revision, t.total, pg_notify($9, json_build_object('o', $10::text, \
     'w', $11::bool, 'e', json_build_array(json_build_array(t.shard, t.revision, t.total, \
     $2, $3, $4, $5, $6, $7)))::text)::text FROM t"
);

/// One committed count change: `shard` moved to `shard_revision`, the
/// per-status `deltas`, and the global `revision` the statement saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub shard: i32,
    pub shard_revision: i64,
    pub revision: i64,
    pub deltas: [i64; 6],
}

impl Entry {
    /// The wire form inside a NOTIFY payload: `[shard, shard_rev, rev, d0..d5]`.
    pub fn to_json(self) -> serde_json::Value {
        let d = self.deltas;
        serde_json::json!([
            self.shard,
            self.shard_revision,
            self.revision,
            d[0],
            d[1],
            d[2],
            d[3],
            d[4],
            d[5]
        ])
    }

    /// Parses [`Entry::to_json`]'s form; `None` for anything else.
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let numbers: Vec<i64> = value
            .as_array()?
            .iter()
            .map(serde_json::Value::as_i64)
            .collect::<Option<_>>()?;
        let [shard, shard_revision, revision, d @ ..] = <[i64; 9]>::try_from(numbers).ok()?;
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
}

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
        return Ok(Effects { entry: None, work });
    }
    let d = change.per_status();
    let row = match notify_origin {
        None => {
            let sql = format!("WITH {SHARD_CTE}, {UPDATE}");
            db.query_one(
                &sql,
                &[&shard, &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &SHARDS],
            )
            .await?
        }
        Some(origin) => {
            let sql = format!(
                "WITH s AS (SELECT CASE WHEN $1::int4 >= 0 THEN $1::int4 \
                 ELSE pg_backend_pid() % $8::int4 END AS shard), {UPDATE_NOTIFY}"
            );
            db.query_one(
                &sql,
                &[
                    &shard,
                    &d[0],
                    &d[1],
                    &d[2],
                    &d[3],
                    &d[4],
                    &d[5],
                    &SHARDS,
                    &db.names.channel,
                    &origin,
                    &work,
                ],
            )
            .await?
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
    })
}

/// Every shard row: (shard, revision, per-status counts), in shard order.
pub(crate) async fn shard_rows(db: &Db<'_>) -> Result<Vec<(i32, i64, [i64; 6])>> {
    let rows = db
        .query(
            "SELECT shard, revision, queued, handed_off, completed, failed, cancelled, orphaned \
             FROM {s}.duraq_count_shards ORDER BY shard",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                [r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7)],
            )
        })
        .collect())
}

/// The exact counts and revision, summed over the shards in one statement.
pub(crate) async fn snapshot(db: &Db<'_>) -> Result<CountSnapshot> {
    let row = db
        .query_one(
            "SELECT COALESCE(sum(queued), 0)::int8, COALESCE(sum(handed_off), 0)::int8, \
             COALESCE(sum(completed), 0)::int8, COALESCE(sum(failed), 0)::int8, \
             COALESCE(sum(cancelled), 0)::int8, COALESCE(sum(orphaned), 0)::int8, \
             COALESCE(sum(revision), 0)::int8 FROM {s}.duraq_count_shards",
            &[],
        )
        .await?;
    let per_status = [
        row.get(0),
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
    ];
    Ok(CountSnapshot::new(per_status, row.get(6)))
}
