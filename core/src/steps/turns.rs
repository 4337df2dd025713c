//! Fair turns: which candidates a claim considers, and in which order, when
//! jobs carry fairness keys ([`crate::EnqueueOptions::fairness_key`]).
//!
//! Within one walk (a queue-priority level and one job priority), each
//! fairness key of each queue is a *lane*, `(queue, key)`, and the jobs
//! without a key are one more lane, [`Turn::Unkeyed`], which comes first.
//! Lanes take turns in that order, starting after the lane the worker's
//! previous claim ended on ([`Turns::after`]) and wrapping around; a turn
//! considers the lane's next candidates in claim order, as many as the key's
//! weight (1 unless the worker set one). So no key gets a second turn before
//! every key with due work had one. After the first round only the lanes
//! that filled their turn go on; when one is left it is paged through like
//! a claim without keys, so a key alone in its queue drains as fast as jobs
//! without one (the walk is work-conserving).
//!
//! A store answers two reads, each an index seek: the next lane after a
//! given one ([`TurnReads::next_lane`]), and a lane's next due candidates
//! ([`TurnReads::candidates`]). It never reads a key's backlog beyond the
//! candidates it hands over, so a million jobs of one key cost the jobs of
//! another key nothing.

use std::collections::{BTreeMap, VecDeque};

use crate::error::Result;
use crate::job::Job;
use crate::steps::{AdmissionReads, Claim};

/// One lane of fair turns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Turn {
    /// The jobs without a fairness key, in claim order: the first lane.
    Unkeyed,
    /// The jobs of one fairness key in one queue.
    Key {
        /// The queue.
        queue: String,
        /// The fairness key.
        key: String,
    },
}

impl Turn {
    /// The lane `job` waits in.
    pub fn of(job: &Job) -> Self {
        match &job.fairness_key {
            None => Self::Unkeyed,
            Some(key) => Self::Key {
                queue: job.queue.clone(),
                key: key.clone(),
            },
        }
    }
}

/// A claim's fair turns: where the worker's previous claim ended, and the
/// weights the worker gives keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Turns {
    /// The lane the previous claim's last taken job came from: this claim's
    /// first turn goes to the lane after it (`None`: the first lane).
    pub after: Option<Turn>,
    /// Turns in a row per fairness key (default 1).
    pub weights: BTreeMap<String, u32>,
}

impl Turns {
    /// How many candidates one turn of `lane` considers.
    pub fn weight_of(&self, lane: &Turn) -> usize {
        match lane {
            Turn::Unkeyed => 1,
            Turn::Key { key, .. } => self.weights.get(key).copied().unwrap_or(1).max(1) as usize,
        }
    }

    /// Moves `after` on to where a claim that took `taken` ended (unchanged
    /// when it took nothing).
    pub fn advance(&mut self, taken: &[Job]) {
        if let Some(last) = taken.last() {
            self.after = Some(Turn::of(last));
        }
    }
}

/// A store's reads for one walk of fair turns, inside the claim's
/// transaction.
#[allow(async_fn_in_trait)]
pub trait TurnReads {
    /// The first keyed lane after `after` (`None`: the first keyed lane) in
    /// `(queue, key)` order that holds a queued job of the walk's queues and
    /// priority, whether due or not.
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<(String, String)>>;

    /// Up to `n` due candidates of `lane` in claim order (`scheduledAtMs`,
    /// `createdAtMs`, `id`), after the candidate `after` when given.
    async fn candidates(&mut self, lane: &Turn, after: Option<&Job>, n: usize) -> Result<Vec<Job>>;

    /// A hint before a round: [`TurnReads::candidates`] will be asked next
    /// for each of `reads` (lane, after, n), in that order. A store whose
    /// reads are round trips may answer them all at once and keep the
    /// answers; the default does nothing.
    async fn prefetch(&mut self, reads: &[(&Turn, Option<&Job>, usize)]) -> Result<()> {
        let _ = reads;
        Ok(())
    }
}

/// One lane's place in the walk: the candidates read ahead and not yet
/// considered, and where its reads stopped.
struct Lane {
    turn: Turn,
    /// The last candidate read of it.
    last: Option<Job>,
    buffer: VecDeque<Job>,
    /// Its last read came back short: it has no candidate beyond the buffer.
    drained: bool,
}

impl Lane {
    fn new(turn: Turn) -> Self {
        Self {
            turn,
            last: None,
            buffer: VecDeque::new(),
            drained: false,
        }
    }

    /// Its next candidate, reading up to `batch` more when none is buffered.
    /// (How many are read at once never changes the order they come in.)
    async fn next<R: TurnReads>(&mut self, reads: &mut R, batch: usize) -> Result<Option<Job>> {
        if self.buffer.is_empty() && !self.drained {
            let batch = batch.max(1);
            let rows = reads
                .candidates(&self.turn, self.last.as_ref(), batch)
                .await?;
            self.drained = rows.len() < batch;
            self.last = rows.last().cloned().or(self.last.take());
            self.buffer.extend(rows);
        }
        Ok(self.buffer.pop_front())
    }
}

/// The lane after `turn` in the ring of lanes.
async fn successor<R: TurnReads>(reads: &mut R, turn: &Turn) -> Result<Turn> {
    let after = match turn {
        Turn::Unkeyed => None,
        Turn::Key { queue, key } => Some((queue.as_str(), key.as_str())),
    };
    Ok(match reads.next_lane(after).await? {
        Some((queue, key)) => Turn::Key { queue, key },
        None => Turn::Unkeyed,
    })
}

/// Hands `claim` the candidates of one walk in fair turns (see the module
/// docs), until the claim is full or no lane has a due candidate left.
pub async fn take_turns<R: TurnReads, A: AdmissionReads>(
    claim: &mut Claim<'_>,
    turns: &Turns,
    reads: &mut R,
    admission: &mut A,
) -> Result<()> {
    // The first round: every lane once, from the one after `after`, around
    // the ring to where it started. (A lane that empties meanwhile, taken by
    // another worker, is passed by in order, so the round still ends.) It
    // reads one turn's candidates per lane: how many lanes there are is not
    // known yet.
    let first = match &turns.after {
        None => Turn::Unkeyed,
        Some(after) => successor(reads, after).await?,
    };
    let mut live: Vec<Lane> = Vec::new();
    let mut turn = first.clone();
    let mut wrapped = false;
    loop {
        if claim.is_full() {
            return Ok(());
        }
        let mut lane = Lane::new(turn.clone());
        let weight = turns.weight_of(&turn);
        if take_turn(claim, weight, reads, admission, &mut lane, weight).await? {
            live.push(lane);
        }
        let next = successor(reads, &turn).await?;
        if next <= turn {
            if wrapped {
                break;
            }
            wrapped = true;
        }
        if wrapped && next >= first {
            break;
        }
        turn = next;
    }
    // Later rounds: the lanes that filled their turn, in the same order,
    // each reading ahead its share of the slots still free; the last lane
    // standing reads a page of the free slots at a time.
    while !claim.is_full() && !live.is_empty() {
        let weights: usize = live.iter().map(|l| turns.weight_of(&l.turn)).sum();
        let rounds = claim.free().div_ceil(weights.max(1));
        let mut still = Vec::with_capacity(live.len());
        let alone = live.len() == 1;
        if !alone {
            let batch = |l: &Lane| turns.weight_of(&l.turn) * rounds;
            let asked: Vec<_> = (live.iter())
                .filter(|l| l.buffer.is_empty() && !l.drained)
                .map(|l| (&l.turn, l.last.as_ref(), batch(l)))
                .collect();
            reads.prefetch(&asked).await?;
        }
        for mut lane in live {
            if claim.is_full() {
                return Ok(());
            }
            let weight = turns.weight_of(&lane.turn);
            let (turn_size, batch) = if alone {
                (claim.free(), claim.free())
            } else {
                (weight, weight * rounds)
            };
            if take_turn(claim, turn_size, reads, admission, &mut lane, batch).await? {
                still.push(lane);
            }
        }
        live = still;
    }
    Ok(())
}

/// One turn of `lane`: up to `size` of its candidates, read `batch` at a
/// time. Whether it filled the turn (and so may have more).
async fn take_turn<R: TurnReads, A: AdmissionReads>(
    claim: &mut Claim<'_>,
    size: usize,
    reads: &mut R,
    admission: &mut A,
    lane: &mut Lane,
    batch: usize,
) -> Result<bool> {
    for _ in 0..size {
        if claim.is_full() {
            return Ok(true);
        }
        match lane.next(reads, batch).await? {
            Some(job) => claim.consider(job, admission).await?,
            None => return Ok(false),
        }
    }
    Ok(true)
}
