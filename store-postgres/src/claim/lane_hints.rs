//! A keyed lane, a place in one (its cursor), and where this process last
//! claimed in each lane, so that the next fair claim reads a lane from there
//! ([`LaneHints`]).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use duraq_core::Job;

/// A keyed lane: `(queue, fairness key)`.
pub(crate) type Lane = (String, String);

/// `(scheduledAtMs, createdAtMs, id)` after which a lane's candidates come.
pub(crate) type Cursor = (i64, i64, String);

/// A keyed candidate handed to a claim: its priority, lane and place.
pub(crate) type Handed = (i64, Lane, Cursor);

/// The cursor after `after` (`None`: a lane's start).
pub(crate) fn cursor(after: Option<&Job>) -> Cursor {
    after.map_or((i64::MIN, i64::MIN, String::new()), |j| {
        (j.scheduled_at_ms, j.created_at_ms, j.id.clone())
    })
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
/// before a claim that follows such reports in its transaction, or when it
/// enqueues a keyed job due at a time not after now
/// (`PostgresStore::forget_hints_before`); and a hint older than
/// [`HINT_TTL`] is not used, so a job left behind the hint by another
/// process (a candidate it locked and then left, or a job it enqueued due in
/// the past, say) waits at most that long for its turn.
#[derive(Debug, Default)]
pub(crate) struct LaneHints {
    hints: Mutex<HashMap<HintedLane, (Cursor, Instant)>>,
}

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
        lock(&self.hints).clear();
    }

    /// Whether this process claims keyed jobs: it holds a hint.
    pub(crate) fn keyed(&self) -> bool {
        !lock(&self.hints).is_empty()
    }

    /// The fresh hints of `priority`'s lanes.
    pub(crate) fn at(&self, priority: i64) -> HashMap<Lane, Cursor> {
        let hints = lock(&self.hints);
        (hints.iter())
            .filter(|((p, ..), (_, at))| *p == priority && at.elapsed() < HINT_TTL)
            .map(|((_, q, k), (cursor, _))| ((q.clone(), k.clone()), cursor.clone()))
            .collect()
    }

    /// Notes the keyed jobs a claim took: each lane's hint moves to its last,
    /// unless a candidate the claim was handed before it stays queued (at
    /// its cap, say): that lane's hint is dropped, so that the next claim
    /// reads the lane from its start and meets it.
    pub(crate) fn record<'j>(&self, taken: impl Iterator<Item = &'j Job>, handed: &[Handed]) {
        // Each lane's last job first: a claim takes many of a lane's jobs.
        fn due(j: &Job) -> (i64, i64, &str) {
            (j.scheduled_at_ms, j.created_at_ms, &j.id)
        }
        let mut lasts: HashMap<(i64, &str, &str), &Job> = HashMap::new();
        let mut taken_ids = std::collections::HashSet::new();
        for job in taken {
            if let Some(key) = &job.fairness_key {
                taken_ids.insert(job.id.as_str());
                let last = lasts.entry((job.priority, &job.queue, key)).or_insert(job);
                if due(job) > due(last) {
                    *last = job;
                }
            }
        }
        let mut hints = lock(&self.hints);
        for (priority, (queue, key), at) in handed {
            let lane = (*priority, queue.as_str(), key.as_str());
            let left = !taken_ids.contains(at.2.as_str());
            if left
                && lasts
                    .get(&lane)
                    .is_some_and(|last| cursor(Some(last)) > *at)
            {
                lasts.remove(&lane);
                hints.remove(&(*priority, queue.clone(), key.clone()));
            }
        }
        let now = Instant::now();
        for ((priority, queue, key), job) in lasts {
            let lane = (priority, queue.to_owned(), key.to_owned());
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
