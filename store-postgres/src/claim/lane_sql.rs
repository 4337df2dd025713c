//! The statements of a fair claim ([`super::turns`]): the walk of a
//! priority's ring of lanes and the candidates of several lanes at once, both
//! seeks of `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`.

use std::sync::LazyLock;

use crate::rows::JOB_COLUMNS;

/// The distinct priorities of queued jobs with a fairness key, highest first
/// (a loose scan of `duraq_jobs_fair`).
pub(crate) const KEYED_PRIORITIES: &str = "WITH RECURSIVE k AS (\
     SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1) AS p \
     UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL AND priority < k.p ORDER BY priority DESC LIMIT 1) \
     FROM k WHERE k.p IS NOT NULL) \
     SELECT ARRAY(SELECT p FROM k WHERE p IS NOT NULL)";

/// The first lane of `duraq_jobs_fair` at priority `p` where `cond` holds:
/// `(queue, fairness key)`.
fn lane_sql(p: &str, cond: &str) -> String {
    format!(
        "SELECT queue, fairness_key FROM {{s}}.duraq_jobs \
         WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = {p} AND {cond} \
         ORDER BY queue COLLATE \"C\", fairness_key COLLATE \"C\" LIMIT 1"
    )
}

/// Up to `n` lanes at priority `p`, whatever their queue, in ring order
/// from `(q, k)`: the lanes after it to the last (`wrapped` false), then
/// from the first (`wrapped`) to the first lane at or after `(q, k)`, which
/// comes last (`done`) so that every link is known; and `p`. One seek per
/// lane, in one round trip (a recursive walk of `duraq_jobs_fair`'s
/// distinct lanes).
fn lanes_ring_sql(p: &str, (q, k): (&str, &str), n: &str) -> String {
    let after = |q: &str, k: &str| {
        let cond = format!("(queue COLLATE \"C\", fairness_key COLLATE \"C\") > ({q}, {k})");
        lane_sql(p, &cond)
    };
    let first = lane_sql(p, "true");
    let done = format!(
        "l.wrapped AND (l.queue COLLATE \"C\", l.fairness_key COLLATE \"C\") >= ({q}, {k})"
    );
    format!(
        "WITH RECURSIVE lanes(n, wrapped, done, queue, fairness_key) AS (\
         SELECT 1::int8, l.wrapped, {done}, l.queue, l.fairness_key FROM (\
         SELECT false AS wrapped, * FROM ({}) AS a UNION ALL \
         SELECT true, * FROM ({first}) AS b LIMIT 1) AS l \
         UNION ALL SELECT lanes.n + 1, l.wrapped, {done}, l.queue, l.fairness_key \
         FROM lanes, LATERAL (\
         SELECT lanes.wrapped AS wrapped, * FROM ({}) AS a UNION ALL \
         SELECT true, * FROM ({first}) AS b WHERE NOT lanes.wrapped LIMIT 1) AS l \
         WHERE lanes.n < {n}::int8 AND NOT lanes.done) \
         SELECT wrapped, done, queue, fairness_key, {p} FROM lanes ORDER BY n",
        after(q, k),
        after(
            "lanes.queue COLLATE \"C\"",
            "lanes.fairness_key COLLATE \"C\""
        ),
    )
}

/// [`lanes_ring_sql`] at priority `$1` from `($2, $3)`, `$4` lanes.
pub(super) static LANES_RING: LazyLock<String> =
    LazyLock::new(|| lanes_ring_sql("$1::int8", ("$2", "$3"), "$4"));

/// [`lanes_ring_sql`] at the highest priority of keyed jobs from `($1,
/// $2)`, [`LOOKAHEAD`] lanes: the claim's first round trip reads it ahead
/// ([`pre_read`](mod@super::pre_read)).
pub(crate) static TOP_LANES_RING: LazyLock<String> = LazyLock::new(|| {
    let top = "(SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
               AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1)";
    lanes_ring_sql(top, ("$1", "$2"), &LOOKAHEAD.to_string())
});

/// How many lanes one read of [`LANES_RING`] looks ahead.
pub(super) const LOOKAHEAD: i64 = 16;

/// [`prefetch_sql`].
pub(super) static PREFETCH: LazyLock<String> = LazyLock::new(prefetch_sql);

/// The due candidates of several keyed lanes at once: lane `i` is
/// (`$4[i]`, `$5[i]`), after (`$6[i]`, `$7[i]`, `$8[i]`), at most `$9[i]`.
fn prefetch_sql() -> String {
    format!(
        "SELECT j.* FROM unnest($4::text[], $5::text[], $6::int8[], \
     $7::int8[], $8::text[], $9::int8[]) AS v(lq, lk, l_at, l_created, l_id, l_n), LATERAL \
     (SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL AND priority = $1 \
     AND queue COLLATE \"C\" = v.lq AND fairness_key COLLATE \"C\" = v.lk \
     AND scheduled_at_ms <= $2 AND job_name = ANY($3) \
     AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
     AND (scheduled_at_ms, created_at_ms, id COLLATE \"C\") > (v.l_at, v.l_created, v.l_id) \
     ORDER BY priority, queue COLLATE \"C\", fairness_key COLLATE \"C\", \
     scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT v.l_n FOR UPDATE SKIP LOCKED) AS j"
    )
}

/// The candidates of the jobs without a key in the queues `$4`, after a
/// cursor (see [`candidates_sql`]).
pub(super) static PLAIN_IN: LazyLock<String> =
    LazyLock::new(|| candidates_sql("AND fairness_key IS NULL AND queue = ANY($4)", ""));

/// The candidates of the jobs without a key outside the queues `$4`.
pub(super) static PLAIN_NOT_IN: LazyLock<String> =
    LazyLock::new(|| candidates_sql("AND fairness_key IS NULL AND NOT (queue = ANY($4))", ""));

/// The candidates of one keyed lane, (`$4[1]`, `$9`).
pub(super) static KEYED: LazyLock<String> = LazyLock::new(|| {
    candidates_sql(
        "AND fairness_key IS NOT NULL AND queue COLLATE \"C\" = ($4::text[])[1] \
         AND fairness_key COLLATE \"C\" = $9",
        "priority, queue COLLATE \"C\", fairness_key COLLATE \"C\", ",
    )
});

/// A lane's candidates: `lane` is the filter that picks it, `order` what
/// comes before the due order. A keyed lane is ordered by the whole key of
/// `duraq_jobs_fair` (its leading columns are fixed by equality, so the order
/// is the same): with sorts off, that index is then the only plan without
/// one. Left to itself, the generic plan the claim forces walked
/// `duraq_jobs_fair_due` and filtered out every other key's row (486 ms
/// behind a million jobs of one key, measured).
fn candidates_sql(lane: &str, order: &str) -> String {
    format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE status = 'queued' {lane} \
         AND priority = $1 AND scheduled_at_ms <= $2 AND job_name = ANY($3) \
         AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
         AND (scheduled_at_ms, created_at_ms, id COLLATE \"C\") > ($5, $6, $7) \
         ORDER BY {order}scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT $8 \
         FOR UPDATE SKIP LOCKED"
    )
}
