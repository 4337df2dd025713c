//! Prune batching (`docs/retention.md`): which terminal jobs go, in what
//! order, and when a prune stops.
//!
//! A prune deletes, one transaction per batch, the terminal jobs whose terminal
//! timestamp is strictly older than the cutoff of their status
//! ([`crate::inspect::PruneRequest::cutoff_ms`]), oldest first ([`prune_order`]), at most
//! `batch_size` per batch, until a batch comes back short. Each non-empty batch
//! is one count mutation. A store selects a batch with SQL that follows
//! [`is_prunable`] and [`prune_order`], deletes it, and asks [`PruneRun::record`]
//! whether to go on.

use std::cmp::Ordering;

use crate::job::Job;
use crate::requests::{PruneReport, PruneRequest};

/// Whether `job` is deleted by `req` at `now_ms`.
pub fn is_prunable(job: &Job, req: &PruneRequest, now_ms: i64) -> bool {
    match (req.cutoff_ms(job.status, now_ms), job.terminal_at_ms()) {
        (Some(cutoff), Some(at)) => at < cutoff,
        _ => false,
    }
}

/// The order in which prunable jobs go: terminal timestamp, then id (bytes).
pub fn prune_order(a: (i64, &str), b: (i64, &str)) -> Ordering {
    (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes()))
}

/// One prune's progress through its batches.
///
/// ```
/// use duraq_core::driver::rules::PruneRun;
/// use duraq_core::inspect::PruneRequest;
/// let mut run = PruneRun::new(&PruneRequest { batch_size: 2, ..PruneRequest::default() });
/// assert!(run.record(2)); // a full batch: there may be more
/// assert!(!run.record(1)); // a short one: done
/// assert_eq!((run.report().deleted, run.report().batches), (3, 2));
/// ```
#[derive(Clone, Debug)]
pub struct PruneRun {
    batch_size: usize,
    report: PruneReport,
}

impl PruneRun {
    /// A prune of `req` that has deleted nothing yet.
    pub fn new(req: &PruneRequest) -> Self {
        Self {
            batch_size: req.batch_size.max(1),
            report: PruneReport::default(),
        }
    }

    /// The most rows one batch deletes (at least 1).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Counts a batch that deleted `deleted` rows; returns whether to run
    /// another (only after a full batch).
    pub fn record(&mut self, deleted: u64) -> bool {
        if deleted > 0 {
            self.report.deleted += deleted;
            self.report.batches += 1;
        }
        deleted >= self.batch_size as u64
    }

    /// What the prune has done so far.
    pub fn report(&self) -> PruneReport {
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobStatus;
    use std::time::Duration;

    #[test]
    fn an_empty_batch_ends_the_run_and_counts_no_batch() {
        let mut run = PruneRun::new(&PruneRequest::default());
        assert!(!run.record(0));
        assert_eq!(run.report(), PruneReport::default());
    }

    #[test]
    fn a_batch_size_of_zero_means_one() {
        let mut run = PruneRun::new(&PruneRequest {
            batch_size: 0,
            ..PruneRequest::default()
        });
        assert_eq!(run.batch_size(), 1);
        assert!(run.record(1));
    }

    #[test]
    fn only_terminal_jobs_older_than_their_cutoff_go() {
        let req = PruneRequest {
            completed_older_than: Some(Duration::from_millis(100)),
            ..PruneRequest::default()
        };
        let mut job = crate::transitions::new_job_row(
            &crate::NewJob::new("j", serde_json::json!([]), crate::EnqueueOptions::new()).unwrap(),
            0,
        );
        assert!(!is_prunable(&job, &req, 1_000), "queued");
        job.status = JobStatus::Completed;
        job.completed_at_ms = Some(900);
        assert!(is_prunable(&job, &req, 1_001));
        assert!(
            !is_prunable(&job, &req, 1_000),
            "exactly at the cutoff stays"
        );
        job.status = JobStatus::Failed;
        job.completed_at_ms = None;
        job.failed_at_ms = Some(0);
        assert!(
            !is_prunable(&job, &req, 1_000),
            "no age given for failed jobs"
        );
    }
}
