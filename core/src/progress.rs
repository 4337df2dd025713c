//! Progress and log lines from a running job (`docs/jobs.md`):
//! the values ([`JobProgress`], [`LogLine`]), the batch a worker sends
//! ([`ProgressBatch`]), the throttle that decides when it sends one
//! ([`ProgressBuffer`]) and the rule a store applies to persist one
//! ([`progress_write`]). Written once here so that every store trims, numbers
//! and bounds the lines alike, and so that a handler calling
//! `ctx.log` in a tight loop costs a bounded number of writes: the buffer
//! keeps at most [`MAX_LOG_LINES`] lines in memory and is due at most once
//! per [`PROGRESS_FLUSH_INTERVAL_MS`].

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::job::Lease;

/// The least time between two progress writes of one attempt, in milliseconds
/// (the final write when the attempt ends comes on top).
pub const PROGRESS_FLUSH_INTERVAL_MS: i64 = 1_000;

/// How many log lines a job keeps: the newest 100, older ones are deleted.
pub const MAX_LOG_LINES: usize = 100;

/// The longest log line or progress message kept, in bytes of UTF-8; a
/// longer one is cut at the last character boundary within the bound.
pub const MAX_LINE_BYTES: usize = 4096;

/// What a job last said: its progress and its newest log lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobProgress {
    /// The last fraction reported (0.0 ..= 1.0); `None` if the job only logged.
    pub fraction: Option<f64>,
    /// The message that came with it.
    pub message: Option<String>,
    /// When the store last wrote any of it (the store's clock).
    pub updated_at_ms: i64,
    /// How many lines the job has logged in all its attempts, kept or not;
    /// the newest line's `seq`.
    pub lines_total: i64,
    /// The newest lines (at most [`MAX_LOG_LINES`]), oldest first.
    pub logs: Vec<LogLine>,
}

/// One stored log line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    /// 1-based position among every line the job logged.
    pub seq: i64,
    /// When the handler logged it (the worker's clock).
    pub at_ms: i64,
    /// The attempt that logged it (1-based).
    pub attempt: i64,
    /// The text, at most [`MAX_LINE_BYTES`] bytes, without control characters.
    pub line: String,
}

/// A line waiting in a [`ProgressBatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingLine {
    /// When it was logged.
    pub at_ms: i64,
    /// The cleaned text.
    pub line: String,
}

/// A progress report waiting in a [`ProgressBatch`].
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressPoint {
    /// Within 0.0 ..= 1.0.
    pub fraction: f64,
    /// The cleaned message.
    pub message: String,
}

/// What one write persists for one attempt, fenced by its lease: the newest
/// progress (if any was reported since the last write) and the lines logged
/// since. Built only through its methods, so a store is never handed a bad
/// fraction, a line over the bound or more than [`MAX_LOG_LINES`] lines.
///
/// ```
/// use duraq_core::driver::{Lease, ProgressBatch};
/// let lease = Lease { job_id: "j1".into(), handoff_id: "h1".into() };
/// let batch = ProgressBatch::new(lease, 1)
///     .with_progress(0.5, "halfway")?
///     .with_line(1_000, "copied 500 rows");
/// assert_eq!(batch.lines().len(), 1);
/// assert!(ProgressBatch::new(batch.lease().clone(), 1).with_progress(f64::NAN, "").is_err());
/// # Ok::<(), duraq_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressBatch {
    lease: Lease,
    attempt: i64,
    progress: Option<ProgressPoint>,
    lines: VecDeque<PendingLine>,
    skipped: i64,
}

impl ProgressBatch {
    /// An empty batch for the attempt holding `lease` (`attempt` is 1-based).
    pub fn new(lease: Lease, attempt: i64) -> Self {
        Self {
            lease,
            attempt,
            progress: None,
            lines: VecDeque::new(),
            skipped: 0,
        }
    }

    /// Sets the progress; `invalid-progress` when `fraction` is NaN or outside
    /// 0.0 ..= 1.0 (the batch is then dropped with the error).
    pub fn with_progress(mut self, fraction: f64, message: impl Into<String>) -> Result<Self> {
        self.progress = Some(progress_point(fraction, message.into())?);
        Ok(self)
    }

    /// Adds a line logged at `at_ms` (cleaned and cut to [`MAX_LINE_BYTES`]);
    /// past [`MAX_LOG_LINES`] the oldest waiting line is dropped (and counted).
    pub fn with_line(mut self, at_ms: i64, line: impl Into<String>) -> Self {
        self.push_line(at_ms, line.into());
        self
    }

    fn push_line(&mut self, at_ms: i64, line: String) {
        if self.lines.len() == MAX_LOG_LINES {
            self.lines.pop_front();
            self.skipped += 1;
        }
        self.lines.push_back(PendingLine {
            at_ms,
            line: clean_line(line),
        });
    }

    /// The lease the write is fenced by.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The attempt whose lines these are.
    pub fn attempt(&self) -> i64 {
        self.attempt
    }

    /// The newest progress, if any.
    pub fn progress(&self) -> Option<&ProgressPoint> {
        self.progress.as_ref()
    }

    /// The lines to add, oldest first.
    pub fn lines(&self) -> &VecDeque<PendingLine> {
        &self.lines
    }

    /// Lines logged before [`ProgressBatch::lines`] that were dropped
    /// unwritten: they count in `lines_total` but are not stored.
    pub fn skipped(&self) -> i64 {
        self.skipped
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.progress.is_none() && self.lines.is_empty() && self.skipped == 0
    }
}

/// A job's stored progress row, without its lines: what a store reads before
/// it applies a batch with [`progress_write`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgressRow {
    /// The stored fraction.
    pub fraction: Option<f64>,
    /// The stored message.
    pub message: Option<String>,
    /// The last write.
    pub updated_at_ms: i64,
    /// Lines logged so far.
    pub lines_total: i64,
}

/// What a store persists for one batch: the new row, the lines to insert and
/// the oldest `seq` to keep (lines below it are deleted).
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressWrite {
    /// The row to upsert.
    pub row: ProgressRow,
    /// The lines to insert, numbered.
    pub lines: Vec<LogLine>,
    /// Delete the job's lines whose `seq` is below this.
    pub keep_from_seq: i64,
}

/// The rule a store applies to a fenced batch: new progress replaces the old
/// (no progress in the batch keeps it), lines are numbered after the stored
/// total (dropped lines counted), and only the newest [`MAX_LOG_LINES`] stay.
///
/// ```
/// use duraq_core::driver::{progress_write, Lease, ProgressBatch};
/// let lease = Lease { job_id: "j1".into(), handoff_id: "h1".into() };
/// let batch = ProgressBatch::new(lease, 1).with_line(5, "a").with_line(6, "b");
/// let write = progress_write(None, &batch, 10);
/// assert_eq!(write.row.lines_total, 2);
/// assert_eq!(write.lines[1].seq, 2);
/// ```
pub fn progress_write(
    current: Option<&ProgressRow>,
    batch: &ProgressBatch,
    now_ms: i64,
) -> ProgressWrite {
    let current = current.cloned().unwrap_or_default();
    let first = current.lines_total + batch.skipped + 1;
    let lines: Vec<LogLine> = batch
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| LogLine {
            seq: first + i as i64,
            at_ms: l.at_ms,
            attempt: batch.attempt,
            line: l.line.clone(),
        })
        .collect();
    let lines_total = current.lines_total + batch.skipped + lines.len() as i64;
    let (fraction, message) = match &batch.progress {
        Some(p) => (Some(p.fraction), Some(p.message.clone())),
        None => (current.fraction, current.message),
    };
    ProgressWrite {
        row: ProgressRow {
            fraction,
            message,
            updated_at_ms: now_ms,
            lines_total,
        },
        lines,
        keep_from_seq: lines_total - MAX_LOG_LINES as i64 + 1,
    }
}

/// The throttle of one attempt: calls buffer here, and a write is due at most
/// once per [`PROGRESS_FLUSH_INTERVAL_MS`] (the first one interval after the
/// first call), plus the final [`ProgressBuffer::take`] when the attempt ends.
/// Times are any monotonic milliseconds (the worker uses its runtime's clock).
/// Holds at most [`MAX_LOG_LINES`] lines however many are logged.
#[derive(Clone, Debug)]
pub struct ProgressBuffer {
    batch: ProgressBatch,
    /// When the oldest unwritten call came (monotonic).
    pending_since: Option<i64>,
    last_write: Option<i64>,
}

impl ProgressBuffer {
    /// An empty buffer for the attempt holding `lease`.
    pub fn new(lease: Lease, attempt: i64) -> Self {
        Self {
            batch: ProgressBatch::new(lease, attempt),
            pending_since: None,
            last_write: None,
        }
    }

    /// Buffers a progress report (replacing an unwritten one); `invalid-progress`
    /// for a NaN or out-of-range fraction, which changes nothing.
    pub fn progress(&mut self, fraction: f64, message: String, mono_ms: i64) -> Result<()> {
        self.batch.progress = Some(progress_point(fraction, message)?);
        self.pending_since.get_or_insert(mono_ms);
        Ok(())
    }

    /// Buffers a line logged at `at_ms` (the worker's clock).
    pub fn log(&mut self, line: String, at_ms: i64, mono_ms: i64) {
        self.batch.push_line(at_ms, line);
        self.pending_since.get_or_insert(mono_ms);
    }

    /// When the next write is due (monotonic), `None` when nothing waits.
    pub fn due_at(&self) -> Option<i64> {
        let since = self.pending_since?;
        let base = self
            .last_write
            .map_or(since, |w| w.max(since - PROGRESS_FLUSH_INTERVAL_MS));
        Some(base + PROGRESS_FLUSH_INTERVAL_MS)
    }

    /// The waiting batch if a write is due at `mono_ms`.
    pub fn take_due(&mut self, mono_ms: i64) -> Option<ProgressBatch> {
        if self.due_at()? > mono_ms {
            return None;
        }
        self.take(mono_ms)
    }

    /// The waiting batch whether due or not (the attempt's final write).
    pub fn take(&mut self, mono_ms: i64) -> Option<ProgressBatch> {
        self.pending_since?;
        self.pending_since = None;
        self.last_write = Some(mono_ms);
        let fresh = ProgressBatch::new(self.batch.lease.clone(), self.batch.attempt);
        let batch = std::mem::replace(&mut self.batch, fresh);
        (!batch.is_empty()).then_some(batch)
    }

    /// Lines waiting (at most [`MAX_LOG_LINES`]).
    pub fn waiting_lines(&self) -> usize {
        self.batch.lines.len()
    }
}

fn progress_point(fraction: f64, message: String) -> Result<ProgressPoint> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(Error::invalid(
            ErrorCode::InvalidProgress,
            format!("progress {fraction} is not a fraction between 0 and 1"),
        ));
    }
    Ok(ProgressPoint {
        fraction,
        message: clean_line(message),
    })
}

/// A line as stored: control characters become spaces, and text past
/// [`MAX_LINE_BYTES`] is cut at a character boundary.
pub fn clean_line(line: String) -> String {
    let mut line = if line.chars().any(char::is_control) {
        line.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    } else {
        line
    };
    if line.len() > MAX_LINE_BYTES {
        let mut end = MAX_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
    }
    line
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
