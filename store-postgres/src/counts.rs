//! Count bookkeeping on sharded counter rows (SPEC §8).
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
//! The same statement sends the delta with `pg_notify`, which PostgreSQL delivers
//! only if and when the transaction commits. A delta's revision is the shard sum
//! as that statement saw it: exact for one writer at a time; with concurrent
//! writers on other shards it can be off by their in-flight commits, so a
//! subscriber that needs exactness re-snapshots when revisions do not line up.
//! Snapshots themselves are always exact.

use duraq_core::{CountChange, CountDelta, CountSnapshot, Result};

use crate::db::Db;

/// Number of counter shards created by the schema.
pub const SHARDS: i32 = 16;

/// What a committed transaction must announce in this process.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub delta: Option<CountDelta>,
    pub work: bool,
}

/// A NOTIFY payload: origin store, revision, per-status deltas, work flag.
pub(crate) fn payload(
    origin: &str,
    revision: Option<i64>,
    deltas: Option<[i64; 6]>,
    work: bool,
) -> String {
    serde_json::json!({"o": origin, "r": revision, "d": deltas, "w": work}).to_string()
}

/// Adds `change` to `shard`, bumps its revision and queues the NOTIFY; a zero
/// change only notifies (when there is work to announce). A negative shard means
/// "this session's shard" (backend pid modulo [`SHARDS`]): every enqueue inside
/// one application transaction then lands on the same row, so two such
/// transactions cannot deadlock on shard rows taken in opposite orders.
pub(crate) async fn record(
    db: &Db<'_>,
    shard: i32,
    change: &CountChange,
    work: bool,
    origin: &str,
) -> Result<Effects> {
    if change.is_zero() {
        if work {
            let body = payload(origin, None, None, true);
            db.execute(
                "SELECT pg_notify($1, $2)::text",
                &[&db.names.channel, &body],
            )
            .await?;
        }
        return Ok(Effects { delta: None, work });
    }
    let d = change.per_status();
    let row = db
        .query_one(
            "WITH s AS (SELECT CASE WHEN $1::int4 >= 0 THEN $1::int4 ELSE pg_backend_pid() % $11::int4 END \
             AS shard), \
             u AS (UPDATE {s}.duraq_count_shards SET revision = revision + 1, queued = queued + $2, \
             handed_off = handed_off + $3, completed = completed + $4, failed = failed + $5, \
             cancelled = cancelled + $6, orphaned = orphaned + $7 \
             WHERE shard = (SELECT shard FROM s) RETURNING shard, revision), \
             t AS (SELECT (u.revision + COALESCE((SELECT sum(c.revision) FROM {s}.duraq_count_shards AS c \
             WHERE c.shard <> u.shard), 0))::int8 AS total FROM u) \
             SELECT t.total, pg_notify($8, json_build_object('o', $9::text, 'r', t.total, \
             'd', ARRAY[$2, $3, $4, $5, $6, $7]::int8[], 'w', $10::bool)::text)::text FROM t",
            &[&shard, &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &db.names.channel, &origin, &work, &SHARDS],
        )
        .await?;
    let revision: i64 = row.get(0);
    Ok(Effects {
        delta: Some(change.to_delta(revision)),
        work,
    })
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
