//! Semantic parsing of command-line values (JSON args, durations, RFC 3339 times)
//! into duraq's option types. Each failure has its own stable code and happens
//! before any database is opened, so bad input can never write anything.

use std::time::{SystemTime, UNIX_EPOCH};

use duraq_core::QueueName;
use serde_json::Value;

use crate::error::CliError;

/// Parses `--args`; absent means `[]`.
pub fn json_args(raw: Option<&str>) -> Result<Value, CliError> {
    match raw {
        None => Ok(Value::Array(vec![])),
        Some(s) => serde_json::from_str(s)
            .map_err(|e| CliError::new("invalid-args", format!("--args is not valid JSON: {e}"))),
    }
}

/// Parses a duration such as `10s`, `5m`, `1h`, `7d` into milliseconds; a
/// negative one says so rather than what humantime expected instead.
pub fn duration_ms(flag: &str, raw: &str) -> Result<i64, CliError> {
    if raw.trim_start().starts_with('-') {
        return Err(CliError::new(
            "invalid-duration",
            format!("{flag} {raw:?} must not be negative: give a duration like 10s, 5m, 1h or 7d"),
        ));
    }
    let d = humantime::parse_duration(raw.trim()).map_err(|e| {
        CliError::new(
            "invalid-duration",
            format!("{flag} {raw:?} is not a duration like 10s, 5m, 1h or 7d: {e}"),
        )
    })?;
    i64::try_from(d.as_millis())
        .map_err(|_| CliError::new("invalid-duration", format!("{flag} {raw:?} is too long")))
}

/// Parses `--rate N/PERIOD` (`100/1s`, `5/1m`, or a bare unit for one of it:
/// `100/s`, `5/m`, `1/h`) into (max starts, period in ms). Bounds (N >= 1,
/// period >= 1 ms) are core's, checked by `NewJob::new`.
pub fn rate_ms(raw: &str) -> Result<(i64, i64), CliError> {
    let bad = |why: String| CliError::new("invalid-rate-limit", format!("--rate {raw:?} {why}"));
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

/// Validates a queue name given on the command line (`what` is the flag or
/// argument, e.g. `--queue`): the queue name rule, and a blank name is
/// `invalid-queue` too, never the `default` queue (`QueueName::named`).
pub fn queue_name(what: &str, raw: &str) -> Result<QueueName, CliError> {
    QueueName::named(raw).map_err(|_| {
        let why = if raw.trim().is_empty() {
            "must not be empty (leave it out for the default queue)"
        } else {
            "must be 1 to 255 characters without control characters or commas"
        };
        CliError::new("invalid-queue", format!("{what} {raw:?} {why}"))
    })
}

/// Parses a delay from now (`--run-in`): a duration no longer than
/// [`duraq_core::limits::MAX_RUN_IN_MS`], so that adding it to a clock cannot overflow.
pub fn delay_ms(flag: &str, raw: &str) -> Result<i64, CliError> {
    let ms = duration_ms(flag, raw)?;
    if ms > duraq_core::limits::MAX_RUN_IN_MS {
        return Err(CliError::new(
            "invalid-duration",
            format!("{flag} {raw:?} is too long"),
        ));
    }
    Ok(ms)
}

/// Parses a time flag's value with core's one parser ([`duraq_core::inspect::parse_time_ms`]:
/// RFC 3339 with offsets and fractions, or a date and time without an offset, as
/// UTC) into milliseconds since the epoch; `invalid-time` naming the flag.
pub fn rfc3339_ms(flag: &str, raw: &str) -> Result<i64, CliError> {
    duraq_core::inspect::parse_time_ms(raw).map_err(|_| {
        CliError::new(
            "invalid-time",
            format!("{flag} {raw:?} is not an RFC 3339 time like 2026-01-02T03:04:05Z"),
        )
    })
}

/// A core validation error reworded to name the flag the user typed
/// (`--timeout must be at least 1ms`, not `timeoutMs`); the code stays.
pub fn flag_error(err: duraq_core::Error) -> anyhow::Error {
    use duraq_core::ErrorCode as C;
    let code = err.code();
    let message = match code {
        C::InvalidJobName => "<NAME> must be 1 to 255 characters without control characters",
        C::InvalidQueue => {
            "--queue must be 1 to 255 characters without control characters or commas"
        }
        C::InvalidMaxRetries => "--max-retries must be 0 or more",
        C::InvalidTimeout => "--timeout must be at least 1ms",
        C::InvalidScheduledAt => {
            "--run-at must not be before 1970 and --run-in must not be negative"
        }
        C::InvalidConcurrency => {
            "--concurrency-key (1 to 255 characters without control characters, not \
             starting with `queue:`) and --max-concurrency (at least 1) go together"
        }
        C::InvalidIdempotencyKey => "--idempotency-key must be 1 to 1024 bytes",
        C::InvalidPriority => "--priority must be from -100 to 100",
        C::InvalidRateLimit => {
            "--rate-key (1 to 255 characters without control characters) and --rate \
             (at least 1 start per period of at least 1ms, like 100/1s) go together"
        }
        C::UnsupportedOption => "--idempotency-key and --dedupe-while-queued cannot be combined",
        _ => return err.into(),
    };
    CliError::new(code.as_str(), message).into()
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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

    #[test]
    fn rejects_bad_json_args() {
        assert_eq!(json_args(Some("{")).unwrap_err().code, "invalid-args");
        assert_eq!(json_args(None).unwrap(), serde_json::json!([]));
    }
}
