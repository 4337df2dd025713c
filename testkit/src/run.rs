//! Running jobs in a test: one job now (inline mode, [`TestKit::perform`]),
//! everything due ([`TestKit::drain`]), or everything, moving the clock to
//! each scheduled job ([`TestKit::drain_scheduled`]). Each attempt is a
//! [`Worker::run_due`](duraq_core::Worker::run_due) round, the runtime's own
//! attempt path; the kit only decides which rounds to run and when to stop.
//!
//! What a drain runs, decided once: every job due at the current instant,
//! round after round, so that a retry with no backoff, a reschedule by zero and
//! a job a handler enqueued run in the same drain; a retry with a backoff waits
//! for the clock ([`TestKit::advance`], or `drain_scheduled`, which moves it).

use std::time::Duration;

use duraq_core::worker::JobFinished;
use duraq_core::{JobArgs, JobStatus, WorkerError};

use crate::{system_time_ms, Error, Kit, TestKit};

/// The most rounds one drain runs before it fails with `drain-unsettled`.
pub const MAX_DRAIN_ROUNDS: usize = 1_000;

/// How many jobs one drain round claims.
const ROUND_LIMIT: usize = 1_000;

/// What a drain did.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct DrainReport {
    /// Attempts that completed their job.
    pub completed: u64,
    /// Failed attempts whose job went back to the queue for a retry.
    pub retried: u64,
    /// Failed attempts whose job failed for good.
    pub failed: u64,
    /// Attempts that rescheduled their job.
    pub rescheduled: u64,
    /// How far [`TestKit::drain_scheduled`] moved the clock (zero for `drain`).
    pub advanced: Duration,
    /// Every attempt, in the order they ended.
    pub attempts: Vec<JobFinished>,
}

impl DrainReport {
    /// Attempts run.
    pub fn ran(&self) -> usize {
        self.attempts.len()
    }
}

impl Kit {
    pub(crate) fn is_inline(&self) -> bool {
        self.inline.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs job `id` now if it is queued and due: rounds of one claim of its
    /// name and queue until it has run (a job of that name and queue due
    /// before it, in claim order, runs first). `None`: it did not run.
    pub(crate) async fn run_job(&self, id: &str) -> Result<Option<JobFinished>, WorkerError> {
        let Some(job) = self.base.get_job(id).await? else {
            return Ok(None);
        };
        if job.status != JobStatus::Queued || job.scheduled_at_ms > self.clock_ms() {
            return Ok(None);
        }
        for _ in 0..MAX_DRAIN_ROUNDS {
            let round = self
                .worker
                .run_due_named(&job.job_name, &job.queue, 1)
                .await?;
            if round.finished.is_empty() {
                return Ok(None);
            }
            let mine = round.finished.iter().find(|f| f.job_id == id).cloned();
            self.attempts().extend(round.finished);
            if mine.is_some() {
                return Ok(mine);
            }
        }
        Ok(None)
    }

    fn clock_ms(&self) -> i64 {
        duraq_core::Clock::now_ms(&self.clock)
    }
}

impl TestKit {
    /// Runs every job due now, round after round, until none is due; the
    /// clock does not move. Returns what ran.
    ///
    /// Errors: the store's; `drain-unsettled` after [`MAX_DRAIN_ROUNDS`]
    /// rounds (a job that keeps rescheduling itself by zero).
    pub async fn drain(&self) -> Result<DrainReport, Error> {
        let mut report = DrainReport::default();
        self.drain_into(&mut report).await?;
        Ok(report)
    }

    /// As [`TestKit::drain`], then moves the clock to the next scheduled job
    /// the worker handles (a job enqueued for later, a retry's backoff, a
    /// reschedule) and drains again, until no such job is left queued.
    /// [`DrainReport::advanced`] says how far the clock moved.
    ///
    /// Errors: as [`TestKit::drain`].
    pub async fn drain_scheduled(&self) -> Result<DrainReport, Error> {
        let mut report = DrainReport::default();
        let start = self.kit.clock_ms();
        for _ in 0..MAX_DRAIN_ROUNDS {
            let ran = self.drain_into(&mut report).await?;
            let next = self.kit.worker.next_due_at().await?.map(system_time_ms);
            match next {
                Some(at) if at > self.kit.clock_ms() => self.kit.clock.set(at),
                // Due but not claimable now (a full rate-limit window), or
                // nothing left: settled.
                Some(_) if ran == 0 => break,
                Some(_) => {}
                None => break,
            }
        }
        let moved = (self.kit.clock_ms() - start).max(0);
        report.advanced = Duration::from_millis(moved as u64);
        Ok(report)
    }

    /// Rounds of everything due until a round claims nothing; returns the
    /// attempts run.
    async fn drain_into(&self, report: &mut DrainReport) -> Result<usize, Error> {
        let mut ran = 0;
        for _ in 0..MAX_DRAIN_ROUNDS {
            let round = self.kit.worker.run_due(ROUND_LIMIT).await?;
            if round.totals.claimed == 0 {
                return Ok(ran);
            }
            ran += round.finished.len();
            report.completed += round.totals.completed;
            report.retried += round.totals.retried;
            report.failed += round.totals.failed;
            report.rescheduled += round.totals.rescheduled;
            self.kit.attempts().extend(round.finished.iter().cloned());
            report.attempts.extend(round.finished);
        }
        Err(Error::Unsettled {
            rounds: MAX_DRAIN_ROUNDS,
        })
    }

    /// Enqueues `args` (its type's default options) and runs that one job now,
    /// in either mode, through the worker's attempt path; returns its attempt:
    /// [`JobFinished::outcome`] is what the handler's result became
    /// (`Completed`, `Failed { error, .. }` with the real `lastError`, …).
    /// Like an inline enqueue, it claims by name and queue: a job of the same
    /// name and queue that was already due ahead of it runs first.
    ///
    /// Errors: the enqueue's; `job-not-run` when the job could not be run
    /// (no handler for `T`, a paused queue, not due yet).
    pub async fn perform<T: JobArgs>(&self, args: T) -> Result<JobFinished, Error> {
        let job = args.job()?;
        let outcome = self.kit.base.enqueue(job).await?;
        let id = outcome.job_id().to_owned();
        match self.kit.run_job(&id).await? {
            Some(finished) => Ok(finished),
            None => Err(Error::NotRun {
                reason: self.why_not_run(&id).await?,
                job_id: id,
                job_name: T::NAME.to_owned(),
            }),
        }
    }

    async fn why_not_run(&self, id: &str) -> Result<String, Error> {
        let job = self.job(id).await?;
        let reason = if !self.kit.names.contains(&job.job_name) {
            "no handler is registered for it".to_owned()
        } else if job.status != JobStatus::Queued {
            format!("it is {:?}, not queued", job.status)
        } else if job.scheduled_at_ms > self.kit.clock_ms() {
            "it is scheduled later than the kit's clock".to_owned()
        } else {
            format!(
                "the worker could not claim it (queue {:?} paused or not served)",
                job.queue
            )
        };
        Ok(reason)
    }
}
