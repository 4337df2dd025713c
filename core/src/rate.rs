//! Durable rate limits (`docs/queues.md`): at most `max` starts per `period` per
//! rate key, across every worker process.
//!
//! A store keeps a log of recent starts per key (`duraq_rate_starts`) and reads,
//! inside the claim's own transaction, the newest `max` of them into a
//! [`RateWindow`]. The window decides, here and only here, whether a candidate may
//! start now or when it may next try; the store then either claims the job and
//! logs the start, or moves the job's `scheduledAtMs` to that time (it stays
//! `queued`: a saturated key never blocks other jobs, its jobs simply become due
//! later).
//!
//! The rule is a sliding window: a start at `t` is allowed when fewer than `max`
//! logged starts are later than `t − period` (later ones included, so that two
//! processes whose clock readings cross still count each other). Then no interval
//! of length `period` ever holds more than `max` starts: the last start logged in
//! any such interval saw every other one of it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::keys::check_name;
use crate::time::{duration_to_ms_ceil, ms_to_duration};

/// A rate limit: at most `max` starts per `period_ms` among jobs naming `key`.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::RateLimit;
/// let limit = RateLimit::new("stripe", 100, Duration::from_secs(1)).unwrap();
/// assert_eq!((limit.max, limit.period_ms), (100, 1_000));
/// assert!(RateLimit::new("stripe", 0, Duration::from_secs(1)).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimit {
    /// The rate key shared by the limited jobs (`rateKey`).
    pub key: String,
    /// At most this many starts per period (`rateMax`, >= 1).
    pub max: i64,
    /// The period in ms (`ratePeriodMs`, >= 1).
    pub period_ms: i64,
}

impl RateLimit {
    /// A validated limit (`invalid-rate-limit` otherwise). The key follows the
    /// rules of job names.
    pub fn new(key: impl Into<String>, max: u32, period: Duration) -> Result<Self> {
        let period_ms = duration_to_ms_ceil(period).unwrap_or(i64::MIN);
        Self::from_parts(key.into(), i64::from(max), period_ms)
    }

    /// Validates the wire form (`rateKey`, `rateMax`, `ratePeriodMs`).
    pub(crate) fn from_parts(key: String, max: i64, period_ms: i64) -> Result<Self> {
        check_name(&key, ErrorCode::InvalidRateLimit, "a rate key")?;
        if max < 1 || period_ms < 1 {
            return Err(Error::invalid(
                ErrorCode::InvalidRateLimit,
                "a rate limit allows at least 1 start per period of at least 1ms",
            ));
        }
        Ok(Self {
            key,
            max,
            period_ms,
        })
    }

    /// `rate-limit-conflict` unless `(max, period_ms)`, the limit the key was
    /// registered with, is this one. Every store checks enqueues through this.
    pub fn check_registered(&self, max: i64, period_ms: i64) -> Result<()> {
        if (max, period_ms) == (self.max, self.period_ms) {
            return Ok(());
        }
        Err(Error::conflict(
            ErrorCode::RateLimitConflict,
            format!(
                "rate key {:?} is registered with {max} per {period_ms}ms, not {} per {}ms",
                self.key, self.max, self.period_ms
            ),
        ))
    }

    /// The period as a `Duration`.
    pub fn period(&self) -> Duration {
        ms_to_duration(self.period_ms)
    }
}

/// The recent starts of one rate key as a claim sees them, and the decision for
/// each candidate of that key in the claim (see the module docs).
///
/// ```
/// use duraq_core::RateLimit;
/// use duraq_core::driver::RateWindow;
/// let limit = RateLimit::new("k", 2, std::time::Duration::from_millis(1_000)).unwrap();
/// let mut window = RateWindow::new(vec![400]); // one start logged at 400 ms
/// assert_eq!(window.try_start(&limit, 1_000, 1), Ok(()));
/// assert_eq!(window.try_start(&limit, 1_000, 1), Err(1_400)); // full until 400 expires
/// assert_eq!(window.try_start(&limit, 1_000, 1), Err(1_400)); // max (2) refused per period…
/// assert_eq!(window.try_start(&limit, 1_000, 1), Err(2_400)); // …then a period later
/// ```
#[derive(Clone, Debug, Default)]
pub struct RateWindow {
    /// Logged starts, newest first (at least the newest `max` of the key).
    starts: Vec<i64>,
    /// Candidates refused so far in this claim.
    refused: i64,
}

impl RateWindow {
    /// A window over the key's logged starts (any order). A store reads at least
    /// the newest `limit.max` of them.
    pub fn new(mut starts: Vec<i64>) -> Self {
        starts.sort_unstable_by(|a, b| b.cmp(a));
        Self { starts, refused: 0 }
    }

    /// Whether a job of this key costing `units` starts may start at `now_ms`
    /// (a cost is checked against the limit when enqueued; here it counts as
    /// at most `max`). `Ok` records the starts in the window (the store logs
    /// them too); `Err(at)` is the time the job becomes due instead: when
    /// enough of the starts filling the window have expired, spread by one
    /// period for each `max` candidates already refused in this claim, so
    /// that a backlog of limited jobs does not all come due at once.
    pub fn try_start(
        &mut self,
        limit: &RateLimit,
        now_ms: i64,
        units: i64,
    ) -> std::result::Result<(), i64> {
        let max = usize::try_from(limit.max).unwrap_or(usize::MAX);
        let units = usize::try_from(units.clamp(1, limit.max)).unwrap_or(1);
        let since = now_ms.saturating_sub(limit.period_ms);
        let recent = self.starts.iter().take_while(|at| **at > since).count();
        if recent + units <= max {
            let at = self.starts.partition_point(|s| *s > now_ms);
            self.starts
                .splice(at..at, std::iter::repeat_n(now_ms, units));
            return Ok(());
        }
        // `recent + units > max`: the newest `max - units + 1` starts hold
        // the window shut until the oldest of them expires.
        let blocking = self.starts[max - units];
        let spread = (self.refused / limit.max).saturating_mul(limit.period_ms);
        self.refused += 1;
        Err(blocking
            .saturating_add(limit.period_ms)
            .saturating_add(spread)
            .max(now_ms.saturating_add(1)))
    }
}

/// Log entries of a key older than this (relative to a claim's clock) can no
/// longer matter to any claim and are deleted: one period, plus a margin for
/// processes whose clock readings lag.
pub fn rate_log_horizon(limit: &RateLimit, now_ms: i64) -> i64 {
    now_ms
        .saturating_sub(limit.period_ms.saturating_mul(2))
        .saturating_sub(60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(max: u32, period_ms: u64) -> RateLimit {
        RateLimit::new("k", max, Duration::from_millis(period_ms)).unwrap()
    }

    #[test]
    fn a_window_allows_max_starts_then_refuses() {
        let l = limit(3, 1_000);
        let mut w = RateWindow::new(vec![]);
        for _ in 0..3 {
            assert_eq!(w.try_start(&l, 5_000, 1), Ok(()));
        }
        assert_eq!(w.try_start(&l, 5_000, 1), Err(6_000));
        assert_eq!(w.try_start(&l, 5_000, 1), Err(6_000));
        assert_eq!(w.try_start(&l, 5_000, 1), Err(6_000));
        assert_eq!(w.try_start(&l, 5_000, 1), Err(7_000));
    }

    #[test]
    fn starts_expire_after_one_period() {
        let l = limit(1, 1_000);
        let mut w = RateWindow::new(vec![1_000]);
        assert_eq!(w.try_start(&l, 1_999, 1), Err(2_000));
        let mut w = RateWindow::new(vec![1_000]);
        assert_eq!(w.try_start(&l, 2_000, 1), Ok(()));
    }

    #[test]
    fn later_starts_from_lagging_clocks_count() {
        let l = limit(1, 1_000);
        let mut w = RateWindow::new(vec![5_000]);
        assert_eq!(w.try_start(&l, 4_900, 1), Err(6_000));
    }

    #[test]
    fn bad_limits_are_invalid() {
        for (max, period) in [(0, 1_000), (1, 0)] {
            let err = RateLimit::new("k", max, Duration::from_millis(period)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidRateLimit);
        }
        let err = RateLimit::new("", 1, Duration::from_secs(1)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRateLimit);
    }

    /// Whatever order starts arrive in, no period-long interval of the accepted
    /// ones holds more than `max`.
    #[test]
    fn no_interval_exceeds_the_limit() {
        let l = limit(3, 100);
        let mut accepted: Vec<i64> = Vec::new();
        let mut seed = 7u64;
        for _ in 0..2_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let now = (seed >> 33) as i64 % 5_000;
            let mut w = RateWindow::new(accepted.clone());
            if w.try_start(&l, now, 1).is_ok() {
                accepted.push(now);
            }
        }
        accepted.sort_unstable();
        for (i, start) in accepted.iter().enumerate() {
            let within = accepted[i..]
                .iter()
                .take_while(|t| **t < start + 100)
                .count();
            assert!(within <= 3, "{within} starts in [{start}, {start}+100)");
        }
    }
}
