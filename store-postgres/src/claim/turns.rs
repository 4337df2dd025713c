//! The claim's walk once some queued job has a fairness key: a queue-priority
//! level and a job priority at a time, in the fair turns core's `take_turns`
//! decides. The jobs without a key are read from the plain claim index and
//! each key's from `duraq_jobs_fair`, led by `(priority, queue, fairness_key)`:
//! a lane's due candidates are one range (`FOR UPDATE SKIP LOCKED`, after a
//! keyset cursor) and the next lane after another is one seek, so a key's
//! backlog is never walked to reach another key's jobs.

use std::collections::{HashMap, HashSet, VecDeque};

use duraq_core::driver::rules::{claim_levels, QueueSet};
use duraq_core::driver::steps::{take_turns, Claim, Turn, TurnReads, Turns};
use duraq_core::driver::transitions::due_order;
use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, Result};

use super::lane_hints::{cursor, Cursor, Handed, Lane, LaneHints};
use super::lane_sql::{KEYED, LANES_RING, LOOKAHEAD, PLAIN_IN, PLAIN_NOT_IN, PREFETCH};
use super::pre_read::{ring_priority, PreRead};
use crate::admission::Reads;
use crate::backend::db::Db;
use crate::backend::row::Row;
use crate::rows::loaded_from_row;

/// Walks every level and priority in fair turns; the ids of the candidates
/// some job depends on, and where each keyed candidate stands (see
/// [`LaneHints::record`]).
pub(super) async fn walk(
    db: &Db<'_>,
    req: &ClaimRequest,
    claim: &mut Claim<'_>,
    (plain, keyed): (Vec<i64>, Vec<i64>),
    hints: &LaneHints,
    pre_read: Option<PreRead>,
    now: i64,
) -> Result<(Vec<String>, Vec<Handed>)> {
    let (mut with_dependents, mut handed) = (Vec::new(), Vec::new());
    if req.limit == 0 || req.job_names.is_empty() {
        return Ok((with_dependents, handed));
    }
    // Both from the claim's first read; a walk of a priority that no job
    // without a key holds skips their lane without a statement.
    let mut priorities = plain.clone();
    priorities.extend(keyed);
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    let mut ring = pre_read.map(|pre| (pre.from, pre.rows));
    for level in claim_levels(req) {
        for priority in &priorities {
            let mut lanes = Lanes {
                db,
                req,
                level: &level,
                priority: *priority,
                plain: plain.contains(priority),
                now,
                with_dependents: &mut with_dependents,
                handed: &mut handed,
                budget: claim.free(),
                links: HashMap::new(),
                cache: HashMap::new(),
                hints: hints.at(*priority),
                unhinted: HashSet::new(),
                ring: ring.take_if(|(_, rows)| ring_priority(rows) == Some(*priority)),
            };
            take_turns(claim, &req.turns, &mut lanes, &mut Reads(db)).await?;
            if claim.is_full() {
                return Ok((with_dependents, handed));
            }
        }
    }
    Ok((with_dependents, handed))
}

/// One walk's reads, with what it read ahead: the ring of lanes (one round
/// trip for up to [`LOOKAHEAD`] of them) and the candidates of the turns
/// the claim will take (one round trip for every lane's turns of a round),
/// so a claim over many keys costs a few round trips, not one per job.
struct Lanes<'a, 'n> {
    db: &'a Db<'n>,
    req: &'a ClaimRequest,
    level: &'a QueueSet,
    priority: i64,
    /// Whether jobs without a key hold this priority.
    plain: bool,
    now: i64,
    with_dependents: &'a mut Vec<String>,
    /// Where every keyed candidate handed to the claim stands.
    handed: &'a mut Vec<Handed>,
    /// The claim's free slots when this walk started.
    budget: usize,
    /// The ring of lanes as read so far, of every queue: the lane after
    /// each lane (or after the start, `None`); `None` after the last.
    links: HashMap<Option<Lane>, Option<Lane>>,
    /// Candidates read ahead per lane, after a cursor (see [`ReadAhead`]).
    cache: HashMap<Lane, ReadAhead>,
    /// Where earlier claims of this process left each lane ([`LaneHints`]).
    hints: HashMap<Lane, Cursor>,
    /// The ring read ahead by the claim's first round trip, from the lane
    /// given, when of this priority and not used yet.
    ring: Option<(Option<Lane>, Vec<Row>)>,
    /// Lanes whose hint came up short in this claim: read from their start.
    unhinted: HashSet<Lane>,
}

/// One lane's read ahead: the lane, the cursor it starts after, how many.
type Asked = (Lane, Cursor, usize);

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
        let rows = match self.ring.take() {
            Some((read_from, rows)) if read_from == from => rows,
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
        let asked: Vec<_> = turns_ahead(&ring, whole, self.budget, &self.req.turns)
            .into_iter()
            .map(|(turn, n)| (turn, None, n))
            .collect();
        self.prefetch(&asked).await
    }

    /// Keeps what a read ahead of `asked` returned, per lane; a lane read
    /// from its hint (`hinted`) that came up short is read again from its
    /// start when its turn comes.
    fn keep(&mut self, asked: Vec<Asked>, hinted: &HashSet<Lane>, rows: &[Row]) -> Result<()> {
        let mut by_lane: Vec<Vec<Job>> = vec![Vec::new(); asked.len()];
        {
            let at: HashMap<(&str, &str), usize> = (asked.iter().enumerate())
                .map(|(i, ((queue, key), ..))| ((queue.as_str(), key.as_str()), i))
                .collect();
            for job in self.loaded(rows)? {
                let lane = (
                    job.queue.as_str(),
                    job.fairness_key.as_deref().unwrap_or_default(),
                );
                if let Some(&i) = at.get(&lane) {
                    by_lane[i].push(job);
                }
            }
        }
        for ((lane, from, asked), mut jobs) in asked.into_iter().zip(by_lane) {
            if hinted.contains(&lane) && jobs.len() < asked {
                self.unhinted.insert(lane);
                continue;
            }
            jobs.sort_by(due_order);
            let jobs = jobs.into();
            self.cache.insert(lane, ReadAhead { from, asked, jobs });
        }
        Ok(())
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
                    QueueSet::In(qs) => (&*PLAIN_IN, qs),
                    QueueSet::NotIn(qs) => (&*PLAIN_NOT_IN, qs),
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
        let jobs = loop {
            let (at, hinted) = self.start(&lane_key, after);
            if let Some(jobs) = self.read_ahead(&lane_key, &at, n) {
                break jobs;
            }
            let (at, created, id) = (at.0, at.1, at.2.as_str());
            let queues = [queue.as_str()];
            let queues: &[&str] = &queues;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                &common.0, &common.1, common.2, &queues, &at, &created, &id, &count, key,
            ];
            let rows = self.db.query(&KEYED, &params).await?;
            if hinted && rows.len() < n {
                self.unhinted.insert(lane_key.clone());
                continue;
            }
            break self.loaded(&rows)?;
        };
        let priority = self.priority;
        (self.handed).extend(
            jobs.iter()
                .map(|j| (priority, lane_key.clone(), cursor(Some(j)))),
        );
        Ok(jobs)
    }

    async fn prefetch(&mut self, reads: &[(&Turn, Option<&Job>, usize)]) -> Result<()> {
        let mut asked: Vec<Asked> = Vec::new();
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
        let (priority, now) = (self.priority, self.now);
        let rows = read_ahead_rows(self.db, priority, now, &self.req.job_names, &asked).await?;
        self.keep(asked, &hinted, &rows)
    }
}

/// The turns a claim of `budget` free slots takes next in `ring` (its lanes
/// in turn order), as many candidates each as it reads ahead: each lane's
/// share of the slots when the ring is `whole`, one turn each otherwise, up
/// to what the slots can take.
fn turns_ahead<'t>(
    ring: &'t [Turn],
    whole: bool,
    budget: usize,
    turns: &Turns,
) -> Vec<(&'t Turn, usize)> {
    let weights: usize = ring.iter().map(|t| turns.weight_of(t)).sum();
    let rounds = if whole {
        budget.div_ceil(weights.max(1))
    } else {
        1
    };
    let mut asked = Vec::new();
    let mut total = 0;
    for turn in ring {
        if total >= budget {
            break;
        }
        let n = turns.weight_of(turn) * rounds;
        total += n;
        asked.push((turn, n));
    }
    asked
}

/// The due candidates of every lane `asked` for, after its cursor, in one
/// statement (see [`PREFETCH`]).
async fn read_ahead_rows(
    db: &Db<'_>,
    priority: i64,
    now: i64,
    job_names: &[String],
    asked: &[Asked],
) -> Result<Vec<Row>> {
    let column = |f: fn(&Asked) -> &str| -> Vec<&str> { asked.iter().map(f).collect() };
    let (queues, keys, ids) = (
        column(|a| a.0 .0.as_str()),
        column(|a| a.0 .1.as_str()),
        column(|a| a.1 .2.as_str()),
    );
    let ats: Vec<i64> = asked.iter().map(|a| a.1 .0).collect();
    let created: Vec<i64> = asked.iter().map(|a| a.1 .1).collect();
    let ns: Vec<i64> = asked.iter().map(|a| a.2 as i64).collect();
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
        &priority, &now, &job_names, &queues, &keys, &ats, &created, &ids, &ns,
    ];
    db.query(&PREFETCH, &params).await
}
