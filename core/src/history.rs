//! Throughput history (`docs/history.md`).
//!
//! Net counts per status cannot give throughput: a prune lowers them. So every
//! store also keeps, per queue, monotonic [`OutcomeTotals`] (how many jobs ever
//! *entered* each outcome) on the per-queue counter row it already updates, and
//! a sampler ([`crate::Inspect::record_history`]) copies those totals once a
//! minute into a history table. Throughput over time is then the difference
//! between consecutive samples, computed here once by [`throughput`], for the
//! dashboard, `duraq stats` and anyone else.
//!
//! Which transition counts as what is decided in [`crate::driver::CountChange`] (the one
//! rule for counts); this module holds the values, the sampling constants and
//! the bucketing arithmetic, all pure.

use std::collections::BTreeMap;
use std::ops::{Add, Sub};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How long samples are kept: 7 days. A sampler deletes older ones.
pub const HISTORY_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// The sampling period: one minute.
pub const MINUTE_MS: i64 = 60_000;

/// The start of the minute that holds `now_ms` (the key of a sample).
///
/// ```
/// assert_eq!(duraq_core::inspect::history_minute(125_000), 120_000);
/// ```
pub fn history_minute(now_ms: i64) -> i64 {
    now_ms.div_euclid(MINUTE_MS) * MINUTE_MS
}

/// Samples of minutes before this one are deleted by a sampler running at `now_ms`.
pub fn history_cutoff(now_ms: i64) -> i64 {
    history_minute(now_ms) - HISTORY_RETENTION_MS
}

/// The minute of a database's baseline sample: every queue at zero, written
/// by the first sampler ever (the history holds no sample yet) just before its
/// own sample, so that what happened before the first sample (the enqueues of
/// a fresh database) is the difference between the two, not lost. It is the
/// minute of the oldest job's creation (`oldest_created_ms`), or the minute
/// before `minute_ms` when that is later or there is no job.
///
/// ```
/// use duraq_core::driver::history_baseline;
/// use duraq_core::limits::MINUTE_MS;
/// assert_eq!(history_baseline(10 * MINUTE_MS, Some(3 * MINUTE_MS + 5)), 3 * MINUTE_MS);
/// assert_eq!(history_baseline(10 * MINUTE_MS, Some(10 * MINUTE_MS + 5)), 9 * MINUTE_MS);
/// assert_eq!(history_baseline(10 * MINUTE_MS, None), 9 * MINUTE_MS);
/// ```
pub fn history_baseline(minute_ms: i64, oldest_created_ms: Option<i64>) -> i64 {
    let before = minute_ms - MINUTE_MS;
    oldest_created_ms.map_or(before, |at| history_minute(at).min(before))
}

/// How many jobs of a queue ever entered each outcome. Monotonic: prune, delete
/// and operator retries never lower them.
///
/// | field | counted when a job… |
/// |---|---|
/// | `enqueued` | is inserted (a new row, whatever the call) |
/// | `completed` | moves to `completed` |
/// | `failed` | moves to `failed` (no retries left, or discarded) |
/// | `retried` | goes from `handed_off` back to `queued` because its attempt failed or its worker was lost (not a `reschedule_in`, not a shutdown return) |
/// | `cancelled` | moves to `cancelled` (operator, bulk action, schedule-key replace) |
/// | `orphaned` | moves to `orphaned` (its worker was lost, no retries left) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeTotals {
    /// Jobs inserted.
    pub enqueued: i64,
    /// Jobs that entered `completed`.
    pub completed: i64,
    /// Jobs that entered `failed`.
    pub failed: i64,
    /// Failed or lost attempts that went back to the queue for another attempt.
    pub retried: i64,
    /// Jobs that entered `cancelled`.
    pub cancelled: i64,
    /// Jobs that entered `orphaned`.
    pub orphaned: i64,
}

impl OutcomeTotals {
    /// The field names, in [`OutcomeTotals::as_array`] order (also the `outcome`
    /// label values of `/metrics` and the JSON keys of `duraq stats`).
    pub const NAMES: [&'static str; 6] = [
        "enqueued",
        "completed",
        "failed",
        "retried",
        "cancelled",
        "orphaned",
    ];

    /// The six totals in [`OutcomeTotals::NAMES`] order.
    pub fn as_array(&self) -> [i64; 6] {
        [
            self.enqueued,
            self.completed,
            self.failed,
            self.retried,
            self.cancelled,
            self.orphaned,
        ]
    }

    /// Totals from six numbers in [`OutcomeTotals::NAMES`] order.
    pub fn from_array(a: [i64; 6]) -> Self {
        let [enqueued, completed, failed, retried, cancelled, orphaned] = a;
        Self {
            enqueued,
            completed,
            failed,
            retried,
            cancelled,
            orphaned,
        }
    }

    /// Whether all six are zero.
    pub fn is_zero(&self) -> bool {
        self.as_array().iter().all(|n| *n == 0)
    }
}

impl Add for OutcomeTotals {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        let (a, b) = (self.as_array(), rhs.as_array());
        Self::from_array(std::array::from_fn(|i| a[i] + b[i]))
    }
}

impl Sub for OutcomeTotals {
    type Output = Self;
    /// The difference, never below zero per field (a restored backup could make
    /// a later sample smaller; that is not negative throughput).
    fn sub(self, rhs: Self) -> Self {
        let (a, b) = (self.as_array(), rhs.as_array());
        Self::from_array(std::array::from_fn(|i| (a[i] - b[i]).max(0)))
    }
}

/// One queue's current totals ([`crate::Inspect::outcome_totals`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueTotals {
    /// The queue's name.
    pub queue: String,
    /// Its monotonic totals.
    pub totals: OutcomeTotals,
}

/// One stored sample: a queue's totals as the first sampler of `minute_ms` saw them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistorySample {
    /// The start of the sampled minute (a multiple of [`MINUTE_MS`]).
    pub minute_ms: i64,
    /// The queue.
    pub queue: String,
    /// Its totals at the sampling instant.
    pub totals: OutcomeTotals,
}

/// The three views of the history: the last hour in 1-minute points, the last
/// 24 hours in 15-minute points, the last 7 days in 1-hour points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HistoryRange {
    /// 60 points of 1 minute.
    #[default]
    Hour,
    /// 96 points of 15 minutes.
    Day,
    /// 168 points of 1 hour.
    Week,
}

impl HistoryRange {
    /// Every range, shortest first.
    pub const ALL: [HistoryRange; 3] = [Self::Hour, Self::Day, Self::Week];

    /// Parses `1h`, `24h` or `7d` (also `1d`); anything else is `invalid-range`.
    ///
    /// ```
    /// use duraq_core::ErrorCode;
    /// use duraq_core::inspect::HistoryRange;
    /// assert_eq!(HistoryRange::parse("24h").unwrap(), HistoryRange::Day);
    /// assert_eq!(HistoryRange::parse("2h").unwrap_err().code(), ErrorCode::InvalidRange);
    /// ```
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "1h" | "60m" => Ok(Self::Hour),
            "24h" | "1d" => Ok(Self::Day),
            "7d" | "168h" => Ok(Self::Week),
            other => Err(Error::invalid(
                crate::ErrorCode::InvalidRange,
                format!("history range {other:?} is not one of 1h, 24h, 7d"),
            )),
        }
    }

    /// The spelling [`HistoryRange::parse`] takes back (`1h`, `24h`, `7d`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "1h",
            Self::Day => "24h",
            Self::Week => "7d",
        }
    }

    /// The width of one point.
    pub fn bucket_ms(self) -> i64 {
        match self {
            Self::Hour => MINUTE_MS,
            Self::Day => 15 * MINUTE_MS,
            Self::Week => 60 * MINUTE_MS,
        }
    }

    /// The number of points.
    pub fn buckets(self) -> usize {
        match self {
            Self::Hour => 60,
            Self::Day => 96,
            Self::Week => 168,
        }
    }

    /// The start of the first point for a view ending at `now_ms`. Read samples
    /// from one bucket earlier ([`HistoryRange::read_from`]) so the first point
    /// has a sample before it.
    pub fn start(self, now_ms: i64) -> i64 {
        let b = self.bucket_ms();
        now_ms.div_euclid(b) * b - (self.buckets() as i64 - 1) * b
    }

    /// The `since_ms` to pass to [`crate::Inspect::history`] for this view.
    pub fn read_from(self, now_ms: i64) -> i64 {
        self.start(now_ms) - self.bucket_ms()
    }
}

/// One point of a throughput series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThroughputPoint {
    /// The start of the point's bucket.
    pub start_ms: i64,
    /// What entered each outcome in the bucket; `None` is a gap (no two
    /// consecutive samples began in it: no process sampled then).
    pub counts: Option<OutcomeTotals>,
}

/// Per-bucket throughput from stored samples.
///
/// The samples are grouped by minute; for each pair of consecutive sampled
/// minutes (m1, m2), a queue's throughput is its totals at m2 minus those at m1
/// (0 at m1 when the queue had no sample then: every sample writes every queue,
/// so it did not exist yet). The difference lands in the bucket holding m1: a
/// point holds what happened *between a sample in it and the next sample*,
/// precise to the sampling instants, not to the bucket's edges. Only the queue
/// `queue` counts when given. The result has [`HistoryRange::buckets`] points
/// ending with the one that holds `now_ms`; a bucket in which no pair begins is
/// a gap (`None`).
///
/// ```
/// use duraq_core::inspect::{throughput, HistoryRange, HistorySample, OutcomeTotals};
/// let s = |m: i64, done: i64| HistorySample {
///     minute_ms: m * 60_000,
///     queue: "q".into(),
///     totals: OutcomeTotals { completed: done, ..Default::default() },
/// };
/// let points = throughput(&[s(8, 10), s(9, 15)], None, HistoryRange::Hour, 9 * 60_000);
/// assert_eq!(points.len(), 60);
/// assert_eq!(points[58].counts.unwrap().completed, 5); // minute 8 → 9
/// assert_eq!(points[59].counts, None); // no sample after minute 9 yet
/// ```
pub fn throughput(
    samples: &[HistorySample],
    queue: Option<&str>,
    range: HistoryRange,
    now_ms: i64,
) -> Vec<ThroughputPoint> {
    let bucket = range.bucket_ms();
    let start = range.start(now_ms);
    let mut points: Vec<ThroughputPoint> = (0..range.buckets())
        .map(|i| ThroughputPoint {
            start_ms: start + i as i64 * bucket,
            counts: None,
        })
        .collect();
    let mut minutes: BTreeMap<i64, BTreeMap<&str, OutcomeTotals>> = BTreeMap::new();
    for s in samples {
        if queue.is_none_or(|q| q == s.queue) {
            minutes
                .entry(s.minute_ms)
                .or_default()
                .insert(&s.queue, s.totals);
        } else {
            minutes.entry(s.minute_ms).or_default();
        }
    }
    let sampled: Vec<_> = minutes.iter().collect();
    for pair in sampled.windows(2) {
        let ((m1, before), (_, after)) = (pair[0], pair[1]);
        if *m1 < start {
            continue;
        }
        let index = ((m1 - start) / bucket) as usize;
        let Some(point) = points.get_mut(index) else {
            continue;
        };
        let mut sum = point.counts.unwrap_or_default();
        for (q, totals) in after {
            sum = sum + (*totals - before.get(q).copied().unwrap_or_default());
        }
        point.counts = Some(sum);
    }
    points
}

/// `samples` followed by `current` (every queue's live totals, from
/// [`crate::Inspect::outcome_totals`]) as one more sample keyed `now_ms`, so
/// that [`throughput`]'s newest point holds what happened since the last stored
/// sample, to the moment of reading.
///
/// ```
/// use duraq_core::inspect::{with_current, HistorySample, QueueTotals};
/// let samples = with_current(Vec::new(), &[QueueTotals::default()], 61_000);
/// assert_eq!(samples[0].minute_ms, 61_000);
/// ```
pub fn with_current(
    mut samples: Vec<HistorySample>,
    current: &[QueueTotals],
    now_ms: i64,
) -> Vec<HistorySample> {
    samples.extend(current.iter().map(|q| HistorySample {
        minute_ms: now_ms,
        queue: q.queue.clone(),
        totals: q.totals,
    }));
    samples
}

/// The sum of every point's counts (gaps count as nothing).
pub fn throughput_sum(points: &[ThroughputPoint]) -> OutcomeTotals {
    points
        .iter()
        .filter_map(|p| p.counts)
        .fold(OutcomeTotals::default(), |a, b| a + b)
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
