//! The worker's local queue: jobs it has claimed and not yet started, and the
//! count of attempts executing. It is what lets a worker claim ahead of its
//! slots ([`crate::worker::WorkerBuilder::prefetch`]) without running more than its
//! slots at once.
//!
//! Why it is shared rather than owned by the dispatcher: a report or a claim
//! may take milliseconds, and while the dispatcher waits for one an attempt
//! that ends takes the next waiting job itself (in [`LocalQueue::next_after`]),
//! so the slots keep running from the local queue while the store is busy:
//! claims and reports overlap the work instead of alternating with it. Without
//! prefetch the dispatcher never holds more jobs than slots, so nothing ever
//! waits here and the behaviour is the one a worker always had.
//!
//! Its executing count is the worker's one count of attempts running (the
//! dispatcher's ledger counts jobs held, which includes those whose report is
//! on its way).
//!
//! Waiting jobs take turns by fairness key as claims do
//! ([`crate::EnqueueOptions::fairness_key`]): each key of each queue is a
//! lane, the jobs without a key one more, and a freed slot goes to the next
//! lane in turn, in claim order within a lane. Otherwise a job of a quiet key
//! claimed behind hundreds of a busy key's claimed-ahead jobs would wait for
//! all of them. Without keys there is one lane: first in, first out.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::watch;

use crate::job::Job;

/// A claimed job waiting for a slot, with the receiver its attempt will watch
/// for the loss of its lease.
pub(crate) type Waiting = (Job, watch::Receiver<bool>);

/// Jobs claimed ahead and the executing count, under one lock so that "is a
/// slot free" and "take the next job" are one decision.
pub(crate) struct LocalQueue {
    slots: usize,
    inner: Mutex<Inner>,
}

struct Inner {
    waiting: Lanes,
    executing: usize,
}

/// Which lane a job waits in: its queue and fairness key (`None` without one).
type Lane = Option<(String, String)>;

fn lane_of(job: &Job) -> Lane {
    (job.fairness_key.as_ref()).map(|key| (job.queue.clone(), key.clone()))
}

/// Waiting jobs by lane, and the lanes holding any in turn order.
#[derive(Default)]
struct Lanes {
    jobs: HashMap<Lane, VecDeque<Waiting>>,
    turns: VecDeque<Lane>,
    len: usize,
}

impl Lanes {
    fn push_back(&mut self, waiting: Waiting) {
        let lane = lane_of(&waiting.0);
        let jobs = self.jobs.entry(lane.clone()).or_default();
        if jobs.is_empty() {
            self.turns.push_back(lane);
        }
        jobs.push_back(waiting);
        self.len += 1;
    }

    /// The next lane's first job; the lane goes to the back of the turns.
    fn pop_front(&mut self) -> Option<Waiting> {
        let lane = self.turns.pop_front()?;
        let jobs = self.jobs.get_mut(&lane)?;
        let next = jobs.pop_front();
        if jobs.is_empty() {
            self.jobs.remove(&lane);
        } else {
            self.turns.push_back(lane);
        }
        self.len -= usize::from(next.is_some());
        next
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Every waiting job, lanes emptied.
    fn take_all(&mut self) -> Vec<Waiting> {
        std::iter::from_fn(|| self.pop_front()).collect()
    }

    /// Drops the waiting job `id`; whether it was waiting.
    fn remove(&mut self, id: &str) -> bool {
        let Some((lane, at)) = (self.jobs.iter()).find_map(|(lane, jobs)| {
            Some((lane.clone(), jobs.iter().position(|(j, _)| j.id == id)?))
        }) else {
            return false;
        };
        let jobs = self.jobs.get_mut(&lane).expect("the lane found");
        jobs.remove(at);
        if jobs.is_empty() {
            self.jobs.remove(&lane);
            self.turns.retain(|l| *l != lane);
        }
        self.len -= 1;
        true
    }
}

impl LocalQueue {
    pub(crate) fn new(slots: usize) -> Self {
        Self {
            slots,
            inner: Mutex::new(Inner {
                waiting: Lanes::default(),
                executing: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic never happens under this lock (only queue operations run
        // there), so a poisoned lock still holds consistent data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds claimed jobs behind those waiting in their lanes; returns the ones
    /// that may start now (counted as executing), in turn order.
    pub(crate) fn push(&self, jobs: impl IntoIterator<Item = Waiting>) -> Vec<Waiting> {
        let mut inner = self.lock();
        for waiting in jobs {
            inner.waiting.push_back(waiting);
        }
        let free = self.slots.saturating_sub(inner.executing);
        let n = free.min(inner.waiting.len());
        inner.executing += n;
        (0..n).filter_map(|_| inner.waiting.pop_front()).collect()
    }

    /// Called when an attempt has ended (its report sent): the next waiting job,
    /// which takes over the slot, or `None` and the slot is free.
    pub(crate) fn next_after(&self) -> Option<Waiting> {
        let mut inner = self.lock();
        match inner.waiting.pop_front() {
            Some(next) => Some(next),
            None => {
                inner.executing = inner.executing.saturating_sub(1);
                None
            }
        }
    }

    /// Takes every waiting job (shutdown: they go back to the queue unstarted).
    pub(crate) fn take_waiting(&self) -> Vec<Job> {
        let all = self.lock().waiting.take_all();
        all.into_iter().map(|(job, _)| job).collect()
    }

    /// Removes the waiting job `id`, if it is waiting (its lease is gone: it
    /// must not start). Returns whether it was waiting.
    pub(crate) fn remove(&self, id: &str) -> bool {
        self.lock().waiting.remove(id)
    }

    /// Attempts executing (each holds a slot).
    pub(crate) fn executing(&self) -> usize {
        self.lock().executing
    }

    /// Jobs waiting for a slot.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(id: &str) -> Waiting {
        let mut job = crate::transitions::new_job_row(
            &crate::NewJob::new("n", json!([]), crate::EnqueueOptions::new()).unwrap(),
            0,
        );
        job.id = id.to_owned();
        (job, watch::channel(false).1)
    }

    fn ids(jobs: &[Waiting]) -> Vec<&str> {
        jobs.iter().map(|(j, _)| j.id.as_str()).collect()
    }

    #[test]
    fn starts_no_more_than_slots_and_hands_slots_on_in_order() {
        let q = LocalQueue::new(2);
        let started = q.push(["a", "b", "c", "d"].map(job));
        assert_eq!(ids(&started), ["a", "b"]);
        assert_eq!(q.waiting(), 2);
        assert_eq!(q.next_after().map(|(j, _)| j.id), Some("c".into()));
        assert_eq!(q.next_after().map(|(j, _)| j.id), Some("d".into()));
        // Nothing waits: each end frees a slot.
        assert!(q.next_after().is_none());
        assert!(q.next_after().is_none());
        assert_eq!(ids(&q.push(["e", "f", "g"].map(job))), ["e", "f"]);
    }

    fn keyed(id: &str, key: &str) -> Waiting {
        let (mut job, rx) = job(id);
        job.fairness_key = Some(key.to_owned());
        (job, rx)
    }

    #[test]
    fn waiting_jobs_take_turns_by_key() {
        let q = LocalQueue::new(1);
        let busy = ["a1", "a2", "a3"].map(|id| keyed(id, "a"));
        assert_eq!(ids(&q.push(busy)), ["a1"]);
        q.push([keyed("b1", "b"), job("p1"), keyed("b2", "b")]);
        let next: Vec<String> = std::iter::from_fn(|| q.next_after().map(|(j, _)| j.id)).collect();
        assert_eq!(next, ["a2", "b1", "p1", "a3", "b2"]);
        assert_eq!(q.waiting(), 0);
    }

    #[test]
    fn removed_and_taken_jobs_never_start() {
        let q = LocalQueue::new(1);
        assert_eq!(ids(&q.push(["a", "b", "c"].map(job))), ["a"]);
        assert!(q.remove("b"));
        assert!(!q.remove("a"), "a started: it is not waiting");
        let taken: Vec<String> = q.take_waiting().into_iter().map(|j| j.id).collect();
        assert_eq!(taken, ["c"]);
        assert!(q.next_after().is_none());
        assert_eq!(ids(&q.push([job("d")])), ["d"]);
    }
}
