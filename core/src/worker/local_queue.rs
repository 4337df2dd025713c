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

use std::collections::VecDeque;
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
    waiting: VecDeque<Waiting>,
    executing: usize,
}

impl LocalQueue {
    pub(crate) fn new(slots: usize) -> Self {
        Self {
            slots,
            inner: Mutex::new(Inner {
                waiting: VecDeque::new(),
                executing: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic never happens under this lock (only queue operations run
        // there), so a poisoned lock still holds consistent data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds claimed jobs behind those waiting; returns the ones that may start
    /// now (counted as executing), in claim order.
    pub(crate) fn push(&self, jobs: impl IntoIterator<Item = Waiting>) -> Vec<Waiting> {
        let mut inner = self.lock();
        inner.waiting.extend(jobs);
        let free = self.slots.saturating_sub(inner.executing);
        let n = free.min(inner.waiting.len());
        inner.executing += n;
        inner.waiting.drain(..n).collect()
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
        self.lock().waiting.drain(..).map(|(job, _)| job).collect()
    }

    /// Removes the waiting job `id`, if it is waiting (its lease is gone: it
    /// must not start). Returns whether it was waiting.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.waiting.len();
        inner.waiting.retain(|(job, _)| job.id != id);
        inner.waiting.len() != before
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
