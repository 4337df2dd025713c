//! The claim's walk once some queued job has a fairness key: a queue-priority
//! level and a job priority at a time, in the fair turns core's `take_turns`
//! decides. The jobs without a key are read from the plain claim index and
//! each key's from `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`:
//! a lane's due candidates are one range (`FOR UPDATE SKIP LOCKED`, after a
//! keyset cursor) and the next lane after another is one seek, so a key's
//! backlog is never walked to reach another key's jobs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use duraq_core::driver::rules::{claim_levels, QueueSet};
use duraq_core::driver::steps::{take_turns, Claim, Turn, TurnReads};
use duraq_core::driver::transitions::due_order;
use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, Result};

use crate::admission::Reads;
use crate::backend::db::Db;
use crate::rows::{loaded_from_row, JOB_COLUMNS};

/// The distinct priorities of queued jobs with a fairness key, highest first
/// (a loose scan of `duraq_jobs_fair`).
pub(crate) const KEYED_PRIORITIES: &str = "WITH RECURSIVE k AS (\
     SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1) AS p \
     UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
     AND fairness_key IS NOT NULL AND priority < k.p ORDER BY priority DESC LIMIT 1) \
     FROM k WHERE k.p IS NOT NULL) \
     SELECT ARRAY(SELECT p FROM k WHERE p IS NOT NULL)";

/// Up to `$4` lanes after `($2, $3)` at priority `$1`, whatever their queue,
/// in order: one seek each, in one round trip (a recursive walk of
/// `duraq_jobs_fair`'s distinct lanes).
const LANES_AFTER: &str = "WITH RECURSIVE lanes(n, queue, fairness_key) AS (\
     SELECT 1, l.queue, l.fairness_key FROM (SELECT queue, fairness_key FROM {s}.duraq_jobs \
     WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
     AND (queue COLLATE \"C\", fairness_key COLLATE \"C\") > ($2, $3) \
     ORDER BY queue COLLATE \"C\", fairness_key COLLATE \"C\" LIMIT 1) AS l \
     UNION ALL SELECT lanes.n + 1, l.queue, l.fairness_key FROM lanes, LATERAL \
     (SELECT queue, fairness_key FROM {s}.duraq_jobs \
     WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = $1 \
     AND (queue COLLATE \"C\", fairness_key COLLATE \"C\") \
     > (lanes.queue COLLATE \"C\", lanes.fairness_key COLLATE \"C\") \
     ORDER BY queue COLLATE \"C\", fairness_key COLLATE \"C\" LIMIT 1) AS l \
     WHERE lanes.n < $4::int8) \
     SELECT queue, fairness_key FROM lanes ORDER BY n";

/// How many lanes one read of [`LANES_AFTER`] looks ahead.
const LOOKAHEAD: i64 = 16;

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

/// Where this process last claimed in each keyed lane, so that its next
/// claim reads the lane from there rather than from its start.
///
/// Why: a drain leaves the index entries of the jobs it claimed at the front
/// of their lane until PostgreSQL may remove them, which it may not while any
/// snapshot older than them is open (an autovacuum ANALYZE of any table in
/// the cluster holds one for its whole run). A lane read from its start then
/// visits every such entry's row: measured in the three-worker fairness test,
/// 40 to 185 ms per claim while an ANALYZE ran, against 0.4 ms otherwise, and
/// a statement that slow met rows its own snapshot still saw queued already
/// claimed, completed and moved to the finished partition, which fails the
/// claim (SQLSTATE 40001) and runs it again.
///
/// A hint is only where to start: a read from it that comes back short of
/// what it asked for reads the lane again from its start, in the same claim;
/// every hint is dropped when this process puts a job back in `queued` (a
/// retry, a reschedule, an ended wait: it may stand before a hint), or
/// before a claim that follows such reports in its transaction; and a hint
/// older than [`HINT_TTL`] is not used, so a job left behind the hint by
/// another process (a candidate it locked and then left, say) waits at most
/// that long for its turn.
#[derive(Debug, Default)]
pub(crate) struct LaneHints(Mutex<HashMap<HintedLane, (Cursor, Instant)>>);

/// A keyed lane at one priority: `(priority, queue, fairness key)`.
type HintedLane = (i64, String, String);

/// How long a lane hint is used.
const HINT_TTL: Duration = Duration::from_millis(500);

/// Hints kept at most; past it, stale ones are dropped.
const MAX_HINTS: usize = 1024;

impl LaneHints {
    /// Forgets every hint: a job went back to `queued` and may stand before
    /// one (see [`duraq_core::driver::CountChange::requeued`]).
    pub(crate) fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The fresh hints of `priority`'s lanes.
    fn at(&self, priority: i64) -> HashMap<(String, String), Cursor> {
        let hints = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        (hints.iter())
            .filter(|((p, ..), (_, at))| *p == priority && at.elapsed() < HINT_TTL)
            .map(|((_, q, k), (cursor, _))| ((q.clone(), k.clone()), cursor.clone()))
            .collect()
    }

    /// Notes the keyed jobs a claim took: each lane's hint moves to its last.
    pub(crate) fn record<'j>(&self, taken: impl Iterator<Item = &'j Job>) {
        let mut hints = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        for job in taken {
            let Some(key) = &job.fairness_key else {
                continue;
            };
            let lane = (job.priority, job.queue.clone(), key.clone());
            let at = cursor(Some(job));
            match hints.get_mut(&lane) {
                Some((hint, set)) if *hint >= at && set.elapsed() < HINT_TTL => {}
                Some(entry) => *entry = (at, now),
                None => {
                    hints.insert(lane, (at, now));
                }
            }
        }
        if hints.len() > MAX_HINTS {
            hints.retain(|_, (_, set)| set.elapsed() < HINT_TTL);
        }
    }
}

/// Walks every level and priority in fair turns; the ids of the candidates
/// some job depends on.
pub(crate) async fn walk(
    db: &Db<'_>,
    req: &ClaimRequest,
    claim: &mut Claim<'_>,
    (plain, keyed): (Vec<i64>, Vec<i64>),
    hints: &LaneHints,
    now: i64,
) -> Result<Vec<String>> {
    let mut with_dependents = Vec::new();
    if req.limit == 0 || req.job_names.is_empty() {
        return Ok(with_dependents);
    }
    // Both from the claim's first read; a walk of a priority that no job
    // without a key holds skips their lane without a statement.
    let mut priorities = plain.clone();
    priorities.extend(keyed);
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    let sql = Sql {
        plain_in: candidates_sql("AND fairness_key IS NULL AND queue = ANY($4)", ""),
        plain_not_in: candidates_sql("AND fairness_key IS NULL AND NOT (queue = ANY($4))", ""),
        keyed: candidates_sql(
            "AND fairness_key IS NOT NULL AND queue COLLATE \"C\" = ($4::text[])[1] \
             AND fairness_key COLLATE \"C\" = $9",
            "priority, queue COLLATE \"C\", fairness_key COLLATE \"C\", ",
        ),
    };
    for level in claim_levels(req) {
        for priority in &priorities {
            let mut lanes = Lanes {
                db,
                req,
                sql: &sql,
                level: &level,
                priority: *priority,
                plain: plain.contains(priority),
                now,
                with_dependents: &mut with_dependents,
                upcoming_after: None,
                upcoming: VecDeque::new(),
                upcoming_end: false,
                cache: HashMap::new(),
                hints: hints.at(*priority),
                unhinted: HashSet::new(),
            };
            take_turns(claim, &req.turns, &mut lanes, &mut Reads(db)).await?;
            if claim.is_full() {
                return Ok(with_dependents);
            }
        }
    }
    Ok(with_dependents)
}

/// The candidate statements of a walk.
struct Sql {
    plain_in: String,
    plain_not_in: String,
    keyed: String,
}

/// One walk's reads, with what it read ahead: the next lanes (one round
/// trip for [`LOOKAHEAD`] of them) and candidates of keyed lanes (one round
/// trip per round, [`PREFETCH`]), so a claim over many keys costs a few
/// round trips, not one per job.
struct Lanes<'a, 'n> {
    db: &'a Db<'n>,
    req: &'a ClaimRequest,
    sql: &'a Sql,
    level: &'a QueueSet,
    priority: i64,
    /// Whether jobs without a key hold this priority.
    plain: bool,
    now: i64,
    with_dependents: &'a mut Vec<String>,
    /// The lane the lookahead follows (`Some(None)`: the first), once read.
    upcoming_after: Option<Option<(String, String)>>,
    upcoming: VecDeque<(String, String)>,
    /// The lookahead reached the last lane.
    upcoming_end: bool,
    /// Candidates read ahead per lane, with the (cursor, n) they answer.
    cache: HashMap<(String, String), (Cursor, usize, Vec<Job>)>,
    /// Where earlier claims of this process left each lane ([`LaneHints`]).
    hints: HashMap<(String, String), Cursor>,
    /// Lanes whose hint came up short in this claim: read from their start.
    unhinted: HashSet<(String, String)>,
}

/// `(scheduledAtMs, createdAtMs, id)` after which a lane's candidates come.
type Cursor = (i64, i64, String);

/// One lane's read ahead: the lane, its cursor, how many.
type Asked = ((String, String), Cursor, usize);

fn cursor(after: Option<&Job>) -> Cursor {
    after.map_or((i64::MIN, i64::MIN, String::new()), |j| {
        (j.scheduled_at_ms, j.created_at_ms, j.id.clone())
    })
}

impl Lanes<'_, '_> {
    /// Where a read of `lane` after `after` starts, and whether at a hint.
    fn start(&self, lane: &(String, String), after: Option<&Job>) -> (Cursor, bool) {
        match (after, self.hints.get(lane)) {
            (None, Some(hint)) if !self.unhinted.contains(lane) => (hint.clone(), true),
            _ => (cursor(after), false),
        }
    }

    /// Reads the lanes of the level after `after` (lanes of other queues
    /// are read past, a seek each), and their first turn's candidates.
    async fn look_ahead(&mut self, after: Option<&(String, String)>) -> Result<()> {
        let mut from = after.cloned().unwrap_or_default();
        self.upcoming.clear();
        loop {
            let rows = (self.db)
                .query(LANES_AFTER, &[&self.priority, &from.0, &from.1, &LOOKAHEAD])
                .await?;
            let lanes: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            self.upcoming_end = (lanes.len() as i64) < LOOKAHEAD;
            let last = lanes.last().cloned();
            self.upcoming
                .extend(lanes.into_iter().filter(|(q, _)| self.level.contains(q)));
            match last {
                Some(last) if self.upcoming.is_empty() && !self.upcoming_end => from = last,
                _ => break,
            }
        }
        self.upcoming_after = Some(after.cloned());
        let first_turns: Vec<(Turn, usize)> = (self.upcoming.iter())
            .map(|(queue, key)| {
                let lane = Turn::Key {
                    queue: queue.clone(),
                    key: key.clone(),
                };
                let weight = self.req.turns.weight_of(&lane);
                (lane, weight)
            })
            .collect();
        let asked: Vec<_> = first_turns.iter().map(|(l, n)| (l, None, *n)).collect();
        self.prefetch(&asked).await
    }

    fn loaded(&mut self, rows: &[crate::backend::row::Row]) -> Result<Vec<Job>> {
        let mut jobs = Vec::with_capacity(rows.len());
        for row in rows {
            let loaded = loaded_from_row(row)?;
            if loaded.has_dependents {
                self.with_dependents.push(loaded.job.id.clone());
            }
            jobs.push(loaded.job);
        }
        Ok(jobs)
    }
}

impl TurnReads for Lanes<'_, '_> {
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<(String, String)>> {
        let after = after.map(|(q, k)| (q.to_owned(), k.to_owned()));
        if self.upcoming_after.as_ref() != Some(&after) {
            self.look_ahead(after.as_ref()).await?;
        }
        loop {
            if let Some(next) = self.upcoming.pop_front() {
                self.upcoming_after = Some(Some(next.clone()));
                return Ok(Some(next));
            }
            if self.upcoming_end {
                return Ok(None);
            }
            let from = self.upcoming_after.clone().flatten();
            self.look_ahead(from.as_ref()).await?;
        }
    }

    async fn candidates(&mut self, lane: &Turn, after: Option<&Job>, n: usize) -> Result<Vec<Job>> {
        let common = (self.priority, self.now, &self.req.job_names);
        let count = i64::try_from(n).unwrap_or(i64::MAX);
        let (queue, key) = match lane {
            Turn::Unkeyed if !self.plain => return Ok(Vec::new()),
            Turn::Unkeyed => {
                let (at, created, id) = cursor(after);
                let (sql, queues) = match self.level {
                    QueueSet::In(qs) => (&self.sql.plain_in, qs),
                    QueueSet::NotIn(qs) => (&self.sql.plain_not_in, qs),
                };
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                    &common.0, &common.1, common.2, queues, &at, &created, &id, &count,
                ];
                let rows = self.db.query(sql, &params).await?;
                return self.loaded(&rows);
            }
            Turn::Key { queue, key } => (queue, key),
        };
        let lane_key = (queue.clone(), key.clone());
        loop {
            let (at, hinted) = self.start(&lane_key, after);
            if let Some((from, asked, jobs)) = self.cache.remove(&lane_key) {
                if from == at && asked == n {
                    return Ok(jobs);
                }
            }
            let (at, created, id) = (at.0, at.1, at.2.as_str());
            let queues = [queue.as_str()];
            let queues: &[&str] = &queues;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                &common.0, &common.1, common.2, &queues, &at, &created, &id, &count, key,
            ];
            let rows = self.db.query(&self.sql.keyed, &params).await?;
            if hinted && rows.len() < n {
                self.unhinted.insert(lane_key.clone());
                continue;
            }
            return self.loaded(&rows);
        }
    }

    async fn prefetch(&mut self, reads: &[(&Turn, Option<&Job>, usize)]) -> Result<()> {
        let mut asked: Vec<Asked> = Vec::new();
        let mut hinted: HashSet<(String, String)> = HashSet::new();
        for (lane, after, n) in reads {
            if let Turn::Key { queue, key } = lane {
                let lane = (queue.clone(), key.clone());
                let (from, at_hint) = self.start(&lane, *after);
                if at_hint {
                    hinted.insert(lane.clone());
                }
                asked.push((lane, from, *n));
            }
        }
        if asked.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&Asked) -> &str| -> Vec<&str> { asked.iter().map(f).collect() };
        let (queues, keys, ids) = (
            column(|a| a.0 .0.as_str()),
            column(|a| a.0 .1.as_str()),
            column(|a| a.1 .2.as_str()),
        );
        let ats: Vec<i64> = asked.iter().map(|a| a.1 .0).collect();
        let created: Vec<i64> = asked.iter().map(|a| a.1 .1).collect();
        let ns: Vec<i64> = asked.iter().map(|a| a.2 as i64).collect();
        let sql = prefetch_sql();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
            &self.priority,
            &self.now,
            &self.req.job_names,
            &queues,
            &keys,
            &ats,
            &created,
            &ids,
            &ns,
        ];
        let rows = self.db.query(&sql, &params).await?;
        let jobs = self.loaded(&rows)?;
        let mut by_lane: HashMap<(String, String), Vec<Job>> = HashMap::new();
        for job in jobs {
            let lane = (
                job.queue.clone(),
                job.fairness_key.clone().unwrap_or_default(),
            );
            by_lane.entry(lane).or_default().push(job);
        }
        for (lane, from, n) in asked {
            let mut jobs = by_lane.remove(&lane).unwrap_or_default();
            if hinted.contains(&lane) && jobs.len() < n {
                // Short from its hint: the lane is read again from its start.
                self.unhinted.insert(lane);
                continue;
            }
            jobs.sort_by(due_order);
            self.cache.insert(lane, (from, n, jobs));
        }
        Ok(())
    }
}
