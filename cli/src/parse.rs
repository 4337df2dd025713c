//! Semantic parsing of command-line values (JSON args, durations, RFC 3339 times)
//! into duraq's option types. Each failure has its own stable code and happens
//! before any database is opened, so bad input can never write anything. The
//! values a job option takes are parsed by `duraq_web::job_options::values`
//! (shared with files and the HTTP API); this module gives them the CLI's
//! error type for every other flag that takes such a value.

use std::time::{SystemTime, UNIX_EPOCH};

use duraq_core::QueueName;
use duraq_web::job_options::values;
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

/// Parses a duration such as `10s`, `5m`, `1h`, `7d` into milliseconds
/// ([`values::duration_ms`]).
pub fn duration_ms(flag: &str, raw: &str) -> Result<i64, CliError> {
    Ok(values::duration_ms(flag, raw)?)
}

/// Validates a queue name given on the command line (`what` is the flag or
/// argument, e.g. `--queue`; [`values::queue_name`]).
pub fn queue_name(what: &str, raw: &str) -> Result<QueueName, CliError> {
    Ok(values::queue_name(what, raw)?)
}

/// Parses a time flag's value into milliseconds since the epoch
/// ([`values::rfc3339_ms`]); `invalid-time` naming the flag.
pub fn rfc3339_ms(flag: &str, raw: &str) -> Result<i64, CliError> {
    Ok(values::rfc3339_ms(flag, raw)?)
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
    fn shared_values_keep_their_codes_as_cli_errors() {
        assert_eq!(
            duration_ms("d", "-5s").unwrap_err().code,
            "invalid-duration"
        );
        assert_eq!(rfc3339_ms("t", "soon").unwrap_err().code, "invalid-time");
        assert_eq!(
            queue_name("--queue", " ").unwrap_err().code,
            "invalid-queue"
        );
    }

    #[test]
    fn rejects_bad_json_args() {
        assert_eq!(json_args(Some("{")).unwrap_err().code, "invalid-args");
        assert_eq!(json_args(None).unwrap(), serde_json::json!([]));
    }
}
