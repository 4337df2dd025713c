//! The default retry policy (see `docs/jobs.md`): after the n-th failed attempt wait
//! 10 s, 1 min, 10 min, 1 h, then (n − 3) h.

use std::time::Duration;

/// Delay in milliseconds before the attempt that follows failed attempt `attempt`
/// (1-based). Values below 1 are treated as 1.
///
/// ```
/// use duraq_core::worker::retry_backoff_ms;
/// assert_eq!(retry_backoff_ms(1), 10_000);
/// assert_eq!(retry_backoff_ms(4), 3_600_000);
/// assert_eq!(retry_backoff_ms(6), 3 * 3_600_000);
/// ```
pub fn retry_backoff_ms(attempt: i64) -> i64 {
    const SECOND: i64 = 1_000;
    const HOUR: i64 = 3_600 * SECOND;
    match attempt {
        i64::MIN..=1 => 10 * SECOND,
        2 => 60 * SECOND,
        3 => 600 * SECOND,
        4 => HOUR,
        n => (n - 3).saturating_mul(HOUR),
    }
}

/// [`retry_backoff_ms`] as a `Duration`, for attempt `attempt` (1-based).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(duraq_core::worker::retry_backoff(2), Duration::from_secs(60));
/// ```
pub fn retry_backoff(attempt: u32) -> Duration {
    Duration::from_millis(retry_backoff_ms(i64::from(attempt)).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_spec_table() {
        let expected = [10_000, 60_000, 600_000, 3_600_000, 7_200_000, 10_800_000];
        for (i, ms) in expected.iter().enumerate() {
            assert_eq!(retry_backoff_ms(i as i64 + 1), *ms, "attempt {}", i + 1);
        }
        assert_eq!(retry_backoff_ms(0), 10_000);
    }
}
