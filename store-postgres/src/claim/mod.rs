//! Claiming (`docs/jobs.md`, `docs/queues.md`): several due jobs per round trip,
//! never the same job twice.
//!
//! Candidates are read in claim order (queue priority, job priority,
//! `scheduledAtMs`, `createdAtMs`, `id`) with `FOR UPDATE SKIP LOCKED`, so
//! concurrent workers take disjoint rows without waiting for each other. Without
//! queue priorities each job priority that holds a due job (found by a loose
//! index scan in the claim's first round trip) is one range of the
//! `(priority, scheduledAtMs, createdAtMs, id)` claim index, walked in order with
//! no sort; future jobs of a high priority never stand in the way of due jobs of
//! a lower one. A candidate whose rate key is saturated stays queued with a later
//! `scheduledAtMs` (see [`crate::rate`]). A candidate holding a concurrency
//! key must first take a reservation: an upsert on the key's row that only
//! increments while `active < max` — the row lock makes the count exact however
//! many workers claim at once. A candidate at its cap is skipped, never blocking
//! the rest; when skips leave slots free the next batch of candidates is read
//! (each batch only as large as the slots still free: candidates stay locked).
//! The claimed rows are then written back in one statement. The priorities
//! and the candidates of the highest are read in one round trip
//! ([`first_read`]), which a report of completions may share.
//!
//! Jobs of paused queues are never candidates: the candidate query carries
//! `queue NOT IN (SELECT queue FROM duraq_paused_queues)`, a hashed subplan over
//! that tiny table evaluated once per statement (not a subquery per job), so the
//! walk of the due index is unchanged. A pause committed before the claim's
//! statement starts is seen by it (READ COMMITTED takes a snapshot per statement).
//!
//! Once a queued job has a fairness key, the walk takes turns by lane
//! instead ([`turns`], its statements in [`lane_sql`]); a process's last
//! place in each lane ([`LaneHints`]) and the ring of lanes read in the
//! claim's first round trip ([`pre_read`](mod@pre_read)) keep that walk to one statement
//! more than a plain claim's.

use duraq_core::driver::steps::{Claim, ClaimPlan, Taken};
use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, JobStatus, Result};

use crate::admission::Reads;
use crate::backend::db::{pooled, Conn, Db};
use crate::backend::plans::{by_key_only, walk_due_index, WALK_DUE_INDEX};
use crate::backend::row::Row;
use crate::error::map_pg_error;
use crate::ownership::write_moved_from_queued;
use crate::report::{heartbeat, HEARTBEAT};
use crate::rows::{loaded_from_row, save_jobs, JOB_COLUMNS};
use crate::tx::Tx;
use crate::Shared;
use crate::{counts, rate};

mod lane_hints;
pub(crate) mod lane_sql;
mod pre_read;
mod turns;

pub(crate) use lane_hints::LaneHints;
use pre_read::{pre_read, PreRead};

/// Takes the reservations of a claim's jobs on the key rows the admission
/// ([`crate::admission`]) locked: one statement, however many jobs and keys.
async fn take_reservations(db: &Db<'_>, taken: &[Taken]) -> Result<()> {
    let mut held: (Vec<&str>, Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new(), Vec::new());
    for t in taken {
        if let Some((key, max)) = &t.reservation {
            held.0.push(key);
            held.1.push(*max);
            held.2.push(t.job.cost);
        }
    }
    if held.0.is_empty() {
        return Ok(());
    }
    db.execute(TAKE_RESERVATIONS, &[&held.0, &held.1, &held.2])
        .await?;
    Ok(())
}

/// Each key's reservations go up by the cost of its claimed jobs.
const TAKE_RESERVATIONS: &str =
    "UPDATE {s}.duraq_concurrency AS c SET active = c.active + v.n, max_concurrency = v.max \
     FROM (SELECT k, sum(n)::int8 AS n, max(m) AS max \
     FROM unnest($1::text[], $2::int8[], $3::int8[]) AS t(k, m, n) \
     GROUP BY k) AS v WHERE c.concurrency_key = v.k";

/// The earliest `scheduledAtMs` among queued jobs of `job_names` (in `queues`):
/// the first entry of each priority's range of the claim index (see
/// [`WALK_DUE_INDEX`]).
pub(crate) async fn next_due(
    shared: &Shared,
    job_names: &[String],
    queues: Option<&[String]>,
) -> Result<Option<i64>> {
    // One claim-index range per priority that queued jobs hold.
    // (And the front of the keyed jobs' index by due time.)
    let sql = format!(
        "WITH RECURSIVE {QUEUED_PRIORITIES} SELECT LEAST((SELECT min(n.scheduled_at_ms) FROM levels, \
         LATERAL (SELECT scheduled_at_ms FROM {{s}}.duraq_jobs WHERE status = 'queued' \
         AND fairness_key IS NULL AND priority = levels.p \
         AND job_name = ANY($1) AND ($2::text[] IS NULL OR queue = ANY($2)) \
         AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
         ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT 1) AS n \
         WHERE levels.p IS NOT NULL), \
         (SELECT scheduled_at_ms FROM {{s}}.duraq_jobs WHERE status = 'queued' \
         AND fairness_key IS NOT NULL \
         AND job_name = ANY($1) AND ($2::text[] IS NULL OR queue = ANY($2)) \
         AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
         ORDER BY scheduled_at_ms LIMIT 1))"
    );
    let mut client = pooled(&shared.pool).await?;
    let tx = client.transaction().await.map_err(map_pg_error)?;
    let db = Db {
        conn: Conn::Pooled(tx),
        names: &shared.names,
    };
    db.execute(WALK_DUE_INDEX, &[]).await?;
    let next = db.query_opt(&sql, &[&job_names, &queues]).await?;
    if let Conn::Pooled(tx) = db.conn {
        tx.commit().await.map_err(map_pg_error)?;
    }
    Ok(next.and_then(|r| r.get(0)))
}

/// The distinct priorities of queued jobs, highest first: a loose index scan of
/// the claim index (one seek per priority, at most 201). Whether a priority
/// holds a due job is left to the candidate query of that priority: a check
/// here would walk, a second time per claim, the front of the range where a
/// drain leaves the entries of the jobs it just claimed.
pub(crate) const QUEUED_PRIORITIES: &str = "levels AS (\
     SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' AND fairness_key IS NULL \
     ORDER BY priority DESC LIMIT 1) AS p \
     UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NULL \
     AND priority < levels.p ORDER BY priority DESC LIMIT 1) FROM levels WHERE levels.p IS NOT NULL)";

/// The distinct priorities of queued jobs with a fairness key, highest
/// first: a loose scan of `duraq_jobs_fair` from its end, in the claim's
/// first statement. That statement is planned before the planner settings
/// it sends take effect: a plain `EXISTS` here was planned as a scan of the
/// live jobs' heap, which a drain leaves full of dead rows at its front (50
/// to 280 ms per claim behind a million jobs, measured); a `LIMIT 1` in
/// index order is one seek.
const KEYED_LEVELS: &str = "keyed AS (\
     SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1) AS p \
     UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL AND priority < keyed.p ORDER BY priority DESC LIMIT 1) \
     FROM keyed WHERE keyed.p IS NOT NULL)";

/// The highest priority of queued jobs (the first entry of the claim index).
const TOP_PRIORITY: &str = "SELECT priority FROM {s}.duraq_jobs \
     WHERE status = 'queued' AND fairness_key IS NULL ORDER BY priority DESC LIMIT 1";

/// Writes claimed rows back: only the columns
/// [`duraq_core::driver::transitions::claim`] sets
/// ([`duraq_core::driver::transitions::CLAIM_CHANGES`], declared and tested in core)
/// and the reservation taken, not every
/// mutable column as [`save_jobs`] does (a claim's rows carry arguments and
/// error histories that it never changes). The conformance and model suites
/// read claimed rows back, so a transition that set more would be caught.
async fn save_claimed(db: &Db<'_>, taken: &[Taken], worker_id: &str, now: i64) -> Result<()> {
    if taken.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = taken.iter().map(|t| t.job.id.as_str()).collect();
    let attempts: Vec<i64> = taken.iter().map(|t| t.job.attempts).collect();
    let handoffs: Vec<Option<&str>> = taken.iter().map(|t| t.job.handoff_id.as_deref()).collect();
    let reservations: Vec<Option<&str>> = taken
        .iter()
        .map(|t| t.reservation.as_ref().map(|(key, _)| key.as_str()))
        .collect();
    db.execute(
        SAVE_CLAIMED,
        &[&ids, &attempts, &handoffs, &reservations, &worker_id, &now],
    )
    .await?;
    Ok(())
}

/// It names the live partition, not `duraq_jobs`: the rows were queued and
/// stay live, so probing the finished jobs' key for each id (as an update of
/// the partitioned table does) would be work for nothing.
const SAVE_CLAIMED: &str =
    "UPDATE {s}.duraq_jobs_live AS j SET status = 'handed_off', attempts = v.attempts, \
     handoff_id = v.handoff_id, worker_id = $5, handed_off_at_ms = $6, \
     reservation_key = v.reservation_key \
     FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[]) \
     AS v(id, attempts, handoff_id, reservation_key) WHERE j.id = v.id";

/// A candidate query in claim order (`order` first), with `filter`; `$limit`
/// is the parameter of its `LIMIT`.
fn candidates_sql(order: &str, filter: &str, limit: usize) -> String {
    format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs \
         WHERE status = 'queued' AND fairness_key IS NULL {filter}\
         AND scheduled_at_ms <= $1 AND job_name = ANY($2) AND ($3::text[] IS NULL OR queue = ANY($3)) \
         AND NOT (id = ANY($4)) AND queue NOT IN (SELECT queue FROM {{s}}.duraq_paused_queues) \
         ORDER BY {order}scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT ${limit} \
         FOR UPDATE SKIP LOCKED"
    )
}

/// Queue priorities come first when some queue has one (a sort over the due
/// rows of those queues, as the order is not an index's); without them each
/// job priority is one range of the claim index, walked in its own order.
fn by_queue_priority(req: &ClaimRequest) -> bool {
    req.queue_config.values().any(|c| c.priority != 0)
}

/// What a claim's first round trip reads: the priorities of queued jobs,
/// highest first, and the candidates of the highest.
pub(crate) struct FirstRead {
    queued_priorities: Vec<i64>,
    top: Vec<Row>,
    /// The priorities queued jobs with a fairness key hold: when there are
    /// any, the claim takes turns ([`crate::claim::turns`]).
    keyed: Vec<i64>,
    /// The ring of lanes its walk starts from, read ahead.
    pre_read: Option<PreRead>,
}

/// The claim's first round trip (see [`FirstRead`]), which a report may share
/// (see `report_and_claim`): the due priorities and the planner settings of
/// [`WALK_DUE_INDEX`] and [`BY_KEY_ONLY`], then the candidates of the highest
/// priority (sent after the settings: `biased`).
pub(crate) async fn first_read(
    db: &Db<'_>,
    req: &ClaimRequest,
    hints: &LaneHints,
    now: i64,
) -> Result<FirstRead> {
    let levels_sql = format!(
        "WITH RECURSIVE {QUEUED_PRIORITIES}, {KEYED_LEVELS} \
         SELECT ARRAY(SELECT p FROM levels WHERE p IS NOT NULL ORDER BY p DESC), {}, {}, \
         ARRAY(SELECT p FROM keyed WHERE p IS NOT NULL ORDER BY p DESC)",
        walk_due_index!(),
        by_key_only!()
    );
    // A process that claims keyed jobs reads ahead for its walk.
    let pre_read = pre_read(db, req, hints);
    let (row, top, ring) = if by_queue_priority(req) || req.limit == 0 || req.job_names.is_empty() {
        tokio::try_join!(
            biased;
            db.query_one(&levels_sql, &[]),
            async { Ok(Vec::new()) },
            pre_read
        )?
    } else {
        let top_sql = candidates_sql("", &format!("AND priority = ({TOP_PRIORITY}) "), 5);
        let limit = i64::try_from(req.limit).unwrap_or(i64::MAX);
        let none: &[&str] = &[];
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&now, &req.job_names, &req.queues, &none, &limit];
        tokio::try_join!(
            biased;
            db.query_one(&levels_sql, &[]),
            db.query(&top_sql, &params),
            pre_read
        )?
    };
    Ok(FirstRead {
        queued_priorities: row.get(0),
        top,
        // The last item, after the planner settings.
        keyed: row.get(row.len() - 1),
        pre_read: ring,
    })
}

pub(crate) async fn claim(
    tx: &mut Tx<'_>,
    req: &ClaimRequest,
    hints: &LaneHints,
) -> Result<Vec<Job>> {
    let first = first_read(&tx.db, req, hints, tx.now).await?;
    claim_after(tx, req, first, hints).await
}

/// The rest of a claim after its [`first_read`]; a fair walk starts each
/// keyed lane where this process's last claim left it (`hints`).
pub(crate) async fn claim_after(
    tx: &mut Tx<'_>,
    req: &ClaimRequest,
    first: FirstRead,
    hints: &LaneHints,
) -> Result<Vec<Job>> {
    let mut claim = Claim::new(req, tx.now);
    // The candidates some job depends on: one moved to an end settles them.
    let (with_dependents, handed) = if !first.keyed.is_empty() {
        let levels = (first.queued_priorities, first.keyed);
        let (db, now) = (&tx.db, tx.now);
        turns::walk(db, req, &mut claim, levels, hints, first.pre_read, now).await?
    } else {
        let plain = walk_plain(&tx.db, req, &mut claim, first, tx.now).await?;
        (plain, Vec::new())
    };
    let ClaimPlan {
        taken,
        postponed,
        rate_starts: started,
        moved,
    } = claim.finish();
    hints.record(taken.iter().map(|t| &t.job), &handed);
    // Rows moved out of `queued` are written, and their dependents settled,
    // before the counts are recorded.
    if !moved.is_empty() {
        let has_dependents = |id: &str| with_dependents.iter().any(|d| d == id);
        write_moved_from_queued(tx, &moved, has_dependents).await?;
        tx.release_dependents().await?;
    }
    for Taken { job, .. } in &taken {
        tx.change
            .moved(&job.queue, JobStatus::Queued, JobStatus::HandedOff);
    }
    let postponed: Vec<(&Job, Option<&str>)> = postponed.iter().map(|j| (j, None)).collect();
    // The heartbeat comes last but for the counts, sent with the rows: its row
    // lock is then held only while the transaction commits, so two claims of
    // one worker in flight at once (see the dispatcher) overlap everything but
    // their commits. The counts go in the same round trip (the claim is its
    // transaction's last change; see `Tx::counts_recorded`), on a shard row of
    // their own. (`biased`: tokio's join otherwise rotates which future it
    // polls first, and the first polled is the first sent.) A pipelined
    // transaction commits in the same round trip, unless rate limits add
    // statements of their own (not prepared here).
    let reserved = taken.iter().any(|t| t.reservation.is_some());
    let mut last = vec![SAVE_CLAIMED, HEARTBEAT, counts::STORE_SQL.as_str()];
    if reserved {
        last.push(TAKE_RESERVATIONS);
    }
    let commit = postponed.is_empty() && started.is_empty() && tx.commit_ready(&last).await?;
    let (.., effects, ()) = tokio::try_join!(
        biased;
        save_claimed(&tx.db, &taken, &req.worker_id, tx.now),
        take_reservations(&tx.db, &taken),
        save_jobs(&tx.db, &postponed),
        rate::log_starts(&tx.db, &started, tx.now),
        heartbeat(&tx.db, &req.worker_id, tx.now),
        tx.record(None),
        tx.commit_statement(commit)
    )?;
    tx.counts_recorded(effects, commit);
    Ok(taken.into_iter().map(|t| t.job).collect())
}

/// The walk without fairness keys: the claim index, a priority at a time
/// (queue priorities first when some queue has one), in batches as large as
/// the slots still free. The ids of candidates some job depends on.
async fn walk_plain(
    db: &Db<'_>,
    req: &ClaimRequest,
    claim: &mut Claim<'_>,
    first: FirstRead,
    now: i64,
) -> Result<Vec<String>> {
    let FirstRead {
        mut queued_priorities,
        top: top_rows,
        ..
    } = first;

    // The highest priority's candidates, read ahead: in their priority's
    // place. (Read by a later statement than the priorities, they may belong to
    // one that was enqueued in between.)
    let mut top: Option<(i64, Vec<Row>)> = None;
    if let Some(first) = top_rows.first() {
        let priority: i64 = first.try_get("priority")?;
        if !queued_priorities.contains(&priority) {
            queued_priorities.push(priority);
            queued_priorities.sort_unstable_by(|a, b| b.cmp(a));
        }
        top = Some((priority, top_rows));
    }
    // Nothing to claim still ends as a claim does (heartbeat, counts, commit).
    let levels: Vec<Option<i64>> =
        if req.limit == 0 || req.job_names.is_empty() || queued_priorities.is_empty() {
            Vec::new()
        } else if by_queue_priority(req) {
            vec![None]
        } else {
            queued_priorities.into_iter().map(Some).collect()
        };
    let by_queue_sql = candidates_sql(
        "COALESCE(($5::int8[])[array_position($6::text[], queue)], 0) DESC, priority DESC, ",
        "",
        7,
    );
    let one_priority_sql = candidates_sql("", "AND priority = $5 ", 6);
    let names: Vec<&str> = req.queue_config.keys().map(String::as_str).collect();
    let priorities: Vec<i64> = req.queue_config.values().map(|c| c.priority).collect();
    let mut seen: Vec<String> = Vec::new();
    let mut with_dependents: Vec<String> = Vec::new();
    let mut reads = Reads(db);
    for level in levels {
        let level_seen = seen.len();
        let level_taken = claim.taken();
        while !claim.is_full() {
            // As many candidates as slots are left: every row read stays locked until
            // commit, so reading more would only hide it from other workers. Rounds
            // after skips (candidates at their cap) read more, as many as were skipped.
            let skipped = (seen.len() - level_seen) - (claim.taken() - level_taken);
            let batch = i64::try_from(req.limit - claim.taken() + skipped).unwrap_or(i64::MAX);
            let read_ahead = match (&top, level) {
                (Some((top_priority, _)), Some(priority)) => *top_priority == priority,
                _ => false,
            };
            let rows = match level {
                Some(_) if read_ahead => top.take().map(|(_, rows)| rows).unwrap_or_default(),
                None => {
                    db.query(
                        &by_queue_sql,
                        &[
                            &now,
                            &req.job_names,
                            &req.queues,
                            &seen,
                            &priorities,
                            &names,
                            &batch,
                        ],
                    )
                    .await?
                }
                Some(priority) => {
                    db.query(
                        &one_priority_sql,
                        &[&now, &req.job_names, &req.queues, &seen, &priority, &batch],
                    )
                    .await?
                }
            };
            let exhausted = (rows.len() as i64) < batch;
            for row in &rows {
                let loaded = loaded_from_row(row)?;
                if loaded.has_dependents {
                    with_dependents.push(loaded.job.id.clone());
                }
                let candidate = loaded.job;
                seen.push(candidate.id.clone());
                if claim.is_full() {
                    break;
                }
                claim.consider(candidate, &mut reads).await?;
            }
            if exhausted {
                break;
            }
        }
        if claim.is_full() {
            break;
        }
    }
    Ok(with_dependents)
}
