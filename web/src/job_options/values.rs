//! The values of a new job's options as people write them: durations (`5m`),
//! RFC 3339 times, `N/PERIOD` rates and queue names, each into duraq's own
//! types with its own stable code. They live here, beside
//! [`super::enqueue_options`], so that the `duraq` flags, workflow and
//! schedule files and the HTTP API read a value the same way; the `duraq`
//! program wraps them for its other flags.

use duraq_core::QueueName;

/// A value that is not one: a stable code (`invalid-duration`, …) and a
/// message naming the option as it was given (`what`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError {
    /// The stable code, e.g. `invalid-duration`.
    pub code: &'static str,
    /// Which option, which value, and why.
    pub message: String,
}

impl ValueError {
    /// A refusal with `code`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Parses a duration such as `10s`, `5m`, `1h`, `7d` into milliseconds; a
/// negative one says so rather than what humantime expected instead.
pub fn duration_ms(what: &str, raw: &str) -> Result<i64, ValueError> {
    if raw.trim_start().starts_with('-') {
        return Err(ValueError::new(
            "invalid-duration",
            format!("{what} {raw:?} must not be negative: give a duration like 10s, 5m, 1h or 7d"),
        ));
    }
    let d = humantime::parse_duration(raw.trim()).map_err(|e| {
        ValueError::new(
            "invalid-duration",
            format!("{what} {raw:?} is not a duration like 10s, 5m, 1h or 7d: {e}"),
        )
    })?;
    i64::try_from(d.as_millis())
        .map_err(|_| ValueError::new("invalid-duration", format!("{what} {raw:?} is too long")))
}

/// Parses a delay from now (`--run-in`): a duration no longer than
/// [`duraq_core::limits::MAX_RUN_IN_MS`], so that adding it to a clock cannot overflow.
pub fn delay_ms(what: &str, raw: &str) -> Result<i64, ValueError> {
    let ms = duration_ms(what, raw)?;
    if ms > duraq_core::limits::MAX_RUN_IN_MS {
        return Err(ValueError::new(
            "invalid-duration",
            format!("{what} {raw:?} is too long"),
        ));
    }
    Ok(ms)
}

/// Parses `--rate N/PERIOD` (`100/1s`, `5/1m`, or a bare unit for one of it:
/// `100/s`, `5/m`, `1/h`) into (max starts, period in ms). Bounds (N >= 1,
/// period >= 1 ms) are core's, checked by `NewJob::new`.
pub fn rate_ms(raw: &str) -> Result<(i64, i64), ValueError> {
    let bad = |why: String| ValueError::new("invalid-rate-limit", format!("--rate {raw:?} {why}"));
    let (n, period) = raw
        .split_once('/')
        .ok_or_else(|| bad("is not N/PERIOD like 100/1s or 100/s".into()))?;
    let n: i64 = n
        .trim()
        .parse()
        .map_err(|_| bad("does not start with a whole number of starts".into()))?;
    let period = period.trim();
    // A bare unit is one of it: `100/s` is `100/1s`.
    let period = if period.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("1{period}")
    } else {
        period.to_owned()
    };
    let period_ms = humantime::parse_duration(&period)
        .ok()
        .and_then(|d| i64::try_from(d.as_millis()).ok())
        .ok_or_else(|| {
            bad("does not end with a period like 1s, 5m, 1h or a unit alone (s, m, h)".into())
        })?;
    Ok((n, period_ms))
}

/// Validates a queue name (`what` is the option, e.g. `--queue`): the queue
/// name rule, and a blank name is `invalid-queue` too, never the `default`
/// queue (`QueueName::named`).
pub fn queue_name(what: &str, raw: &str) -> Result<QueueName, ValueError> {
    QueueName::named(raw).map_err(|_| {
        let why = if raw.trim().is_empty() {
            "must not be empty (leave it out for the default queue)"
        } else {
            "must be 1 to 255 characters without control characters or commas"
        };
        ValueError::new("invalid-queue", format!("{what} {raw:?} {why}"))
    })
}

/// Parses a time with core's one parser ([`duraq_core::inspect::parse_time_ms`]:
/// RFC 3339 with offsets and fractions, or a date and time without an offset, as
/// UTC) into milliseconds since the epoch; `invalid-time` naming the option.
pub fn rfc3339_ms(what: &str, raw: &str) -> Result<i64, ValueError> {
    duraq_core::inspect::parse_time_ms(raw).map_err(|_| {
        ValueError::new(
            "invalid-time",
            format!("{what} {raw:?} is not an RFC 3339 time like 2026-01-02T03:04:05Z"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rates() {
        assert_eq!(rate_ms("100/1s").unwrap(), (100, 1_000));
        assert_eq!(rate_ms("5 / 1m").unwrap(), (5, 60_000));
        assert_eq!(rate_ms("100/s").unwrap(), (100, 1_000));
        assert_eq!(rate_ms("5/m").unwrap(), (5, 60_000));
        assert_eq!(rate_ms("5/ min").unwrap(), (5, 60_000));
        assert_eq!(rate_ms("1/h").unwrap(), (1, 3_600_000));
        assert_eq!(rate_ms("10/ms").unwrap(), (10, 1));
        assert_eq!(rate_ms("2/d").unwrap(), (2, 86_400_000));
        for bad in ["100", "x/1s", "5/soon", "/1s", "5/", "5/ss", "5/-1s"] {
            assert_eq!(
                rate_ms(bad).unwrap_err().code,
                "invalid-rate-limit",
                "{bad}"
            );
        }
    }

    #[test]
    fn parses_rfc3339_with_offsets() {
        assert_eq!(rfc3339_ms("t", "1970-01-01T00:00:01Z").unwrap(), 1_000);
        assert_eq!(
            rfc3339_ms("t", "1970-01-01T01:00:01.5+01:00").unwrap(),
            1_500
        );
        assert_eq!(
            rfc3339_ms("t", "1970-01-01T00:00:01-00:01").unwrap(),
            61_000
        );
        assert_eq!(
            rfc3339_ms("t", "tomorrow").unwrap_err().code,
            "invalid-time"
        );
        // A multi-byte character where the offset would start used to panic.
        assert_eq!(
            rfc3339_ms("t", "2026-01-01T00:00:00\u{e9}00:00")
                .unwrap_err()
                .code,
            "invalid-time"
        );
    }

    #[test]
    fn a_delay_too_long_to_add_to_a_clock_is_invalid_duration() {
        // humantime's year is 365.25 days.
        assert_eq!(
            delay_ms("--run-in", "10001y").unwrap(),
            10_001 * 31_557_600_000
        );
        for huge in ["9223372036854775s", "300000000y", "18446744073709551615s"] {
            assert_eq!(
                delay_ms("--run-in", huge).unwrap_err().code,
                "invalid-duration",
                "{huge}"
            );
        }
    }

    #[test]
    fn parses_durations() {
        assert_eq!(duration_ms("d", "10s").unwrap(), 10_000);
        assert_eq!(duration_ms("d", "7d").unwrap(), 7 * 86_400_000);
        for bad in ["soon", "-5s", " -1m"] {
            assert_eq!(duration_ms("d", bad).unwrap_err().code, "invalid-duration");
        }
    }
}
