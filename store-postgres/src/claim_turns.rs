//! The claim's walk once some queued job has a fairness key: a queue-priority
//! level and a job priority at a time, in the fair turns core's `take_turns`
//! decides. The jobs without a key are read from the plain claim index and
//! each key's from `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`:
//! a lane's due candidates are one range (`FOR UPDATE SKIP LOCKED`, after a
//! keyset cursor) and the next lane after another is one seek, so a key's
//! backlog is never walked to reach another key's jobs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

use duraq_core::driver::rules::{claim_levels, QueueSet};
use duraq_core::driver::steps::{take_turns, Claim, Turn, TurnReads};
use duraq_core::driver::transitions::due_order;
use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, Result};

use crate::admission::Reads;
use crate::backend::db::Db;
use crate::backend::row::Row;
use crate::lane_hints::LaneHints;
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
static LANES_RING: LazyLock<String> =
    LazyLock::new(|| lanes_ring_sql("$1::int8", ("$2", "$3"), "$4"));

/// [`lanes_ring_sql`] at the highest priority of keyed jobs from `($1,
/// $2)`, [`LOOKAHEAD`] lanes: the claim's first round trip reads it ahead
/// ([`PreRead`]).
pub(crate) static TOP_LANES_RING: LazyLock<String> = LazyLock::new(|| {
    let top = "(SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
               AND fairness_key IS NOT NULL ORDER BY priority DESC LIMIT 1)";
    lanes_ring_sql(top, ("$1", "$2"), &LOOKAHEAD.to_string())
});

/// The ring of lanes at the highest keyed priority, read from `from` in the
/// claim's first round trip, when this process claims keyed jobs (see
/// [`LaneHints::keyed`]): the walk of that priority starts from it.
pub(crate) struct PreRead {
    pub(crate) from: Option<Lane>,
    pub(crate) rows: Vec<Row>,
}

impl PreRead {
    /// The priority it read (`None`: it found no lane).
    fn priority(&self) -> Option<i64> {
        self.rows.first().map(|row| row.get(4))
    }
}

/// How many lanes one read of [`LANES_RING`] looks ahead.
const LOOKAHEAD: i64 = 16;

/// [`prefetch_sql`].
static PREFETCH: LazyLock<String> = LazyLock::new(prefetch_sql);

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

/// Walks every level and priority in fair turns; the ids of the candidates
/// some job depends on.
pub(crate) async fn walk(
    db: &Db<'_>,
    req: &ClaimRequest,
    claim: &mut Claim<'_>,
    (plain, keyed): (Vec<i64>, Vec<i64>),
    hints: &LaneHints,
    mut pre_read: Option<PreRead>,
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
                budget: claim.free(),
                links: HashMap::new(),
                cache: HashMap::new(),
                hints: hints.at(*priority),
                unhinted: HashSet::new(),
                pre_read: pre_read.take_if(|pre| pre.priority() == Some(*priority)),
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

/// One walk's reads, with what it read ahead: the ring of lanes (one round
/// trip for up to [`LOOKAHEAD`] of them) and the candidates of the turns
/// the claim will take (one round trip for every lane's turns of a round),
/// so a claim over many keys costs a few round trips, not one per job.
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
    /// The claim's free slots when this walk started.
    budget: usize,
    /// The ring of lanes as read so far, of every queue: the lane after
    /// each lane (or after the start, `None`); `None` after the last.
    links: HashMap<Option<Lane>, Option<Lane>>,
    /// Candidates read ahead per lane, after a cursor (see [`ReadAhead`]).
    cache: HashMap<Lane, ReadAhead>,
    /// Where earlier claims of this process left each lane ([`LaneHints`]).
    hints: HashMap<Lane, Cursor>,
    /// The ring read ahead by the claim's first round trip, when of this
    /// priority and not used yet.
    pre_read: Option<PreRead>,
    /// Lanes whose hint came up short in this claim: read from their start.
    unhinted: HashSet<Lane>,
}

/// A keyed lane: `(queue, fairness key)`.
pub(crate) type Lane = (String, String);

/// `(scheduledAtMs, createdAtMs, id)` after which a lane's candidates come.
pub(crate) type Cursor = (i64, i64, String);

/// A lane's candidates read ahead, still to be handed over: the first
/// `jobs` after `from`, of the `asked` read for (fewer jobs than asked:
/// the lane has no more).
struct ReadAhead {
    from: Cursor,
    asked: usize,
    jobs: VecDeque<Job>,
}

impl ReadAhead {
    /// Hands over up to `n` of its jobs, when they are the lane's next `n`
    /// (or all it has left): the rest stays, after the last handed over.
    fn take(&mut self, n: usize) -> Option<Vec<Job>> {
        if self.jobs.len() < n && self.asked < n {
            return None;
        }
        let taken: Vec<Job> = self.jobs.drain(..n.min(self.jobs.len())).collect();
        if let Some(last) = taken.last() {
            self.from = cursor(Some(last));
        }
        self.asked -= taken.len();
        Some(taken)
    }
}

pub(crate) fn cursor(after: Option<&Job>) -> Cursor {
    after.map_or((i64::MIN, i64::MIN, String::new()), |j| {
        (j.scheduled_at_ms, j.created_at_ms, j.id.clone())
    })
}

impl Lanes<'_, '_> {
    /// Where a read of `lane` after `after` starts, and whether at a hint.
    fn start(&self, lane: &Lane, after: Option<&Job>) -> (Cursor, bool) {
        match (after, self.hints.get(lane)) {
            (None, Some(hint)) if !self.unhinted.contains(lane) => (hint.clone(), true),
            _ => (cursor(after), false),
        }
    }

    /// Reads the ring of lanes from `from` (up to [`LOOKAHEAD`] lanes of
    /// every queue), then the candidates of the turns the claim will take
    /// in the lanes of its level.
    async fn look_ahead(&mut self, from: Option<Lane>) -> Result<()> {
        let rows = match self.pre_read.take() {
            Some(pre) if pre.from == from => pre.rows,
            _ => {
                let (q, k) = from.clone().unwrap_or_default();
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&self.priority, &q, &k, &LOOKAHEAD];
                self.db.query(&LANES_RING, &params).await?
            }
        };
        let mut at = from.clone();
        let mut wrapped = false;
        for row in &rows {
            let lane: Lane = (row.get(2), row.get(3));
            if row.get::<_, bool>(0) && !wrapped {
                wrapped = true;
                self.links.insert(at.take(), None);
            }
            self.links.insert(at.clone(), Some(lane.clone()));
            if row.get::<_, bool>(1) {
                break;
            }
            at = Some(lane);
        }
        let whole = rows.len() < LOOKAHEAD as usize;
        if rows.is_empty() {
            self.links.insert(from.clone(), None);
            self.links.insert(None, None);
        } else if whole && !rows.last().is_some_and(|r| r.get::<_, bool>(1)) {
            // It ran out of lanes after wrapping: `at` is the last.
            self.links.insert(at, None);
        }
        self.prefetch_turns(from).await
    }

    /// Reads ahead the turns the claim takes next, from the lane after
    /// `from` around the ring as far as it is known: each lane's share of
    /// the claim's free slots when the whole ring is known (one turn each
    /// otherwise), up to what the slots can take.
    async fn prefetch_turns(&mut self, from: Option<Lane>) -> Result<()> {
        let mut ring: Vec<Turn> = Vec::new();
        let mut seen: HashSet<&Lane> = HashSet::new();
        let (mut at, mut ended) = (from.as_ref(), false);
        let whole = loop {
            match self.links.get(&at.cloned()) {
                None => break false,
                Some(None) if ended => break true,
                Some(None) => (at, ended) = (None, true),
                Some(Some(lane)) if !seen.insert(lane) => break true,
                Some(Some(lane)) => {
                    if self.level.contains(&lane.0) {
                        ring.push(Turn::Key {
                            queue: lane.0.clone(),
                            key: lane.1.clone(),
                        });
                    }
                    at = Some(lane);
                }
            }
        };
        let weights: usize = ring.iter().map(|t| self.req.turns.weight_of(t)).sum();
        let rounds = if whole {
            self.budget.div_ceil(weights.max(1))
        } else {
            1
        };
        let mut asked = Vec::new();
        let mut total = 0;
        for turn in &ring {
            if total >= self.budget {
                break;
            }
            let n = self.req.turns.weight_of(turn) * rounds;
            total += n;
            asked.push((turn, None, n));
        }
        self.prefetch(&asked).await
    }

    fn loaded(&mut self, rows: &[Row]) -> Result<Vec<Job>> {
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

    /// `lane`'s next `n` candidates after `from`, when read ahead.
    fn read_ahead(&mut self, lane: &Lane, from: &Cursor, n: usize) -> Option<Vec<Job>> {
        let ahead = self.cache.get_mut(lane)?;
        if ahead.from != *from {
            return None;
        }
        ahead.take(n)
    }
}

impl TurnReads for Lanes<'_, '_> {
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<Lane>> {
        let mut at = after.map(|(q, k)| (q.to_owned(), k.to_owned()));
        loop {
            match self.links.get(&at) {
                Some(None) => return Ok(None),
                Some(Some(lane)) if self.level.contains(&lane.0) => return Ok(Some(lane.clone())),
                Some(Some(lane)) => at = Some(lane.clone()),
                None => self.look_ahead(at.clone()).await?,
            }
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
            if let Some(jobs) = self.read_ahead(&lane_key, &at, n) {
                return Ok(jobs);
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
        let mut asked: Vec<(Lane, Cursor, usize)> = Vec::new();
        let mut hinted: HashSet<Lane> = HashSet::new();
        for (lane, after, n) in reads {
            if let Turn::Key { queue, key } = lane {
                let lane = (queue.clone(), key.clone());
                let (from, at_hint) = self.start(&lane, *after);
                let covered = (self.cache.get(&lane))
                    .is_some_and(|a| a.from == from && (a.jobs.len() >= *n || a.asked >= *n));
                if covered {
                    continue;
                }
                if at_hint {
                    hinted.insert(lane.clone());
                }
                asked.push((lane, from, *n));
            }
        }
        if asked.is_empty() {
            return Ok(());
        }
        let column =
            |f: fn(&(Lane, Cursor, usize)) -> &str| -> Vec<&str> { asked.iter().map(f).collect() };
        let (queues, keys, ids) = (
            column(|a| a.0 .0.as_str()),
            column(|a| a.0 .1.as_str()),
            column(|a| a.1 .2.as_str()),
        );
        let ats: Vec<i64> = asked.iter().map(|a| a.1 .0).collect();
        let created: Vec<i64> = asked.iter().map(|a| a.1 .1).collect();
        let ns: Vec<i64> = asked.iter().map(|a| a.2 as i64).collect();
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
        let rows = self.db.query(&PREFETCH, &params).await?;
        let jobs = self.loaded(&rows)?;
        let mut by_lane: HashMap<Lane, Vec<Job>> = HashMap::new();
        for job in jobs {
            let lane = (
                job.queue.clone(),
                job.fairness_key.clone().unwrap_or_default(),
            );
            by_lane.entry(lane).or_default().push(job);
        }
        for (lane, from, asked) in asked {
            let mut jobs = by_lane.remove(&lane).unwrap_or_default();
            if hinted.contains(&lane) && jobs.len() < asked {
                // Short from its hint: the lane is read again from its start.
                self.unhinted.insert(lane);
                continue;
            }
            jobs.sort_by(due_order);
            let jobs = jobs.into();
            self.cache.insert(lane, ReadAhead { from, asked, jobs });
        }
        Ok(())
    }
}
