//! Progress and log lines in `MemoryStore`: a row and its newest lines per
//! job, beside the jobs (as the stores' `duraq_job_progress` and
//! `duraq_job_logs` tables), written by [`crate::driver::progress_write`].

use std::collections::VecDeque;

use super::State;
use crate::progress::{progress_write, JobProgress, LogLine, ProgressBatch, ProgressRow};

/// One job's stored progress: the row and its kept lines, oldest first.
#[derive(Clone, Debug, Default)]
pub(super) struct Stored {
    row: ProgressRow,
    logs: VecDeque<LogLine>,
}

impl State {
    /// A fenced progress write; `false` when the lease is not current.
    pub(super) fn record_progress(&mut self, batch: &ProgressBatch, now: i64) -> bool {
        let lease = batch.lease();
        let Some(job) = self.jobs.get(&lease.job_id) else {
            return false;
        };
        if !lease.holds(job) {
            return false;
        }
        let stored = self.progress.entry(lease.job_id.clone()).or_default();
        let write = progress_write(Some(&stored.row), batch, now);
        stored.row = write.row;
        stored.logs.extend(write.lines);
        while stored
            .logs
            .front()
            .is_some_and(|l| l.seq < write.keep_from_seq)
        {
            stored.logs.pop_front();
        }
        true
    }

    pub(super) fn job_progress(&self, id: &str) -> Option<JobProgress> {
        let stored = self.progress.get(id)?;
        Some(JobProgress {
            fraction: stored.row.fraction,
            message: stored.row.message.clone(),
            updated_at_ms: stored.row.updated_at_ms,
            lines_total: stored.row.lines_total,
            logs: stored.logs.iter().cloned().collect(),
        })
    }
}
