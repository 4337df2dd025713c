//! Running due jobs once, in the caller's task: the hook a test kit (and any
//! program that wants "run what is due now, then return") drives a worker
//! through, instead of a second implementation of an attempt.
//!
//! Why here and not in the dispatcher: the dispatcher is a loop that polls,
//! heartbeats and checks leases on the wall clock; a test wants one round it
//! can await, under a manual clock, with nothing left running afterwards. A
//! round is one claim (the worker's names, queues and queue settings), each
//! attempt started through the very path a running worker uses
//! ([`super::execute`]: its own task, the timeout, panic isolation, the
//! handler's backoff, the worker's events), one fenced report of every
//! outcome, and the release backlog those reports left, continued to its end
//! ([`super::release`]), so a wide fan-out is claimable in the next round. No heartbeats, recovery, periodic ticks or retention run, and the
//! worker is not registered.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::{mpsc, watch};

use super::events::{JobFinished, Telemetry, WorkerEvent, WorkerReport};
use super::execute::{spawn_attempt, Shared};
use super::handle::Worker;
use super::local_queue::LocalQueue;
use super::WorkerError;
use crate::requests::ClaimRequest;
use crate::steps::Turns;
use crate::time::ms_to_system_time;

/// What one [`Worker::run_due`] round did.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct DueRun {
    /// The round's totals, counted as a running worker counts them
    /// (`claimed`, `completed`, `retried`, `failed`, `rescheduled`, …).
    pub totals: WorkerReport,
    /// Every attempt that ran, in the order the attempts ended, with the
    /// outcome reported and whether the store accepted it.
    pub finished: Vec<JobFinished>,
}

impl Worker {
    /// Claims up to `limit` due jobs this worker handles and runs them now:
    /// each attempt exactly as a running worker runs it (on a task of its own,
    /// under the job's timeout, a panic failing only that attempt, retries
    /// spaced by the handler's backoff), at most [`Worker::concurrency`] at
    /// once, then reports every outcome under its lease in one batch and
    /// returns what happened. Nothing keeps running when it returns.
    ///
    /// Time is the worker's clock ([`crate::worker::WorkerBuilder::clock`]): with a
    /// [`crate::ManualClock`], a job scheduled later runs once the clock has
    /// been moved past it (and a wait for a signal whose time is up, which a
    /// running worker's recovery pass ends, is ended first, so it is due
    /// too). A round claims once; jobs that become due during it
    /// (a retry with no backoff, a job a handler enqueued) wait for the next.
    ///
    /// Errors: the store's, from the claim or the report.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use duraq_core::{EnqueueOptions, MemoryStore, NewJob, Registry, Store, Worker};
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// let job = NewJob::new("hello", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// store.enqueue(job).await.unwrap();
    /// let registry = Registry::new().register_fn("hello", |_ctx, _args| async { Ok(()) }).unwrap();
    /// let worker = Worker::builder(store, registry).build().unwrap();
    /// let round = worker.run_due(100).await.unwrap();
    /// assert_eq!((round.totals.claimed, round.totals.completed), (1, 1));
    /// assert_eq!(worker.run_due(100).await.unwrap().totals.claimed, 0);
    /// # });
    /// ```
    pub async fn run_due(&self, limit: usize) -> Result<DueRun, WorkerError> {
        self.run_due_of(None, limit).await
    }

    /// As [`Worker::run_due`], claiming only jobs named `job_name` (one this
    /// worker handles) in `queue`: what a test kit's inline mode uses to run
    /// the job just enqueued rather than whatever else is due.
    ///
    /// Errors: as [`Worker::run_due`].
    pub async fn run_due_named(
        &self,
        job_name: &str,
        queue: &str,
        limit: usize,
    ) -> Result<DueRun, WorkerError> {
        self.run_due_of(Some((job_name, queue)), limit).await
    }

    /// When the next job this worker could run is due: the earliest
    /// `scheduledAtMs` of a queued job with one of its names, in its queues,
    /// outside paused queues (`None`: there is none). With a manual clock,
    /// moving the clock there makes [`Worker::run_due`] find it.
    ///
    /// Errors: the store's.
    pub async fn next_due_at(&self) -> Result<Option<SystemTime>, WorkerError> {
        let names = self.registry.names();
        if names.is_empty() {
            return Ok(None);
        }
        let queues = self.config.queues.as_deref();
        let at = self.store.next_scheduled_at(&names, queues).await?;
        Ok(at.map(ms_to_system_time))
    }

    async fn run_due_of(
        &self,
        only: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<DueRun, WorkerError> {
        let (job_names, queues) = match only {
            None => (self.registry.names(), self.config.queues.clone()),
            Some((name, queue)) => {
                let allowed = self.config.queues.as_ref();
                if !self.registry.contains(name)
                    || allowed.is_some_and(|q| !q.iter().any(|q| q == queue))
                {
                    return Ok(DueRun::default());
                }
                (vec![name.trim().to_owned()], Some(vec![queue.to_owned()]))
            }
        };
        if job_names.is_empty() || limit == 0 {
            return Ok(DueRun::default());
        }
        // What the recovery pass would do by now: a signal wait whose time
        // is up is due again.
        self.store.end_timed_out_waits(limit).await?;
        let req = ClaimRequest {
            worker_id: self.config.worker_id.clone(),
            job_names,
            queues,
            queue_config: self.config.queue_config.clone(),
            limit,
            turns: Turns {
                after: None,
                weights: self.config.fairness_weights.clone(),
            },
        };
        let jobs = self.store.claim(&req).await?;
        let telemetry = Arc::new(Telemetry::new(self.events.clone()));
        Telemetry::add(&telemetry.claimed, jobs.len() as u64);
        if jobs.is_empty() {
            return Ok(DueRun {
                totals: telemetry.snapshot(),
                finished: Vec::new(),
            });
        }
        // Kept until every attempt has ended: the attempts watch them (nobody
        // shuts this round down or cancels its jobs).
        let (_stopping_tx, stopping) = watch::channel(false);
        let (_abort_tx, abort) = watch::channel(false);
        let (reports, mut reports_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            store: self.store.clone(),
            registry: self.registry.clone(),
            clock: self.clock.clone(),
            telemetry: telemetry.clone(),
            worker_id: Arc::from(self.config.worker_id.as_str()),
            job_timeout: self.config.job_timeout,
            cancel_grace: self.config.cancel_grace,
            stopping,
            abort,
            reports,
            local: LocalQueue::new(self.config.concurrency),
        });
        let mut cancels = Vec::with_capacity(jobs.len());
        let waiting = jobs.into_iter().map(|job| {
            let (tx, rx) = watch::channel(false);
            cancels.push(tx);
            (job, rx)
        });
        let started: Vec<_> = shared.local.push(waiting.collect::<Vec<_>>());
        for (job, cancel) in started {
            spawn_attempt(shared.clone(), job, cancel);
        }
        // The attempts hold the only other clones; the channel closes when the
        // last one has sent its report.
        drop(shared);
        let mut ended = Vec::new();
        while let Some(report) = reports_rx.recv().await {
            ended.push(report);
        }
        drop(cancels);
        let batch = ended
            .iter()
            .map(|r| (r.lease.clone(), r.outcome.clone()))
            .collect();
        let accepted = self.store.report_batch(batch).await?;
        // A wide fan-out the reports finished is released before the round
        // ends, so the next round claims all of it.
        super::release::drain_once(self.store.as_ref()).await;
        let mut finished = Vec::with_capacity(ended.len());
        for (report, accepted) in ended.into_iter().zip(accepted) {
            telemetry.count_outcome(&report.outcome, report.retries_left, accepted, None);
            let done = JobFinished {
                job_id: report.lease.job_id,
                job_name: report.job_name,
                queue: report.queue,
                attempt: report.attempt,
                outcome: report.outcome,
                accepted,
                duration: report.duration,
            };
            telemetry.emit(WorkerEvent::Finished(done.clone()));
            finished.push(done);
        }
        Ok(DueRun {
            totals: telemetry.snapshot(),
            finished,
        })
    }
}
