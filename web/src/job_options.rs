//! The one parser of a new job's options, wherever they are written: the
//! flags of `duraq enqueue` and `schedule replace` (`--run-in 5m`), a
//! workflow file's step and the HTTP API's body (`"runIn": "5m"`), and a
//! schedule file's `[[job]]` (`timeout = "30s"`). Each gives its values as
//! the flags take them (a [`JobOptions`]: durations like `5m`, RFC 3339
//! times, `N/PERIOD` rates), so a value means the same everywhere, and a
//! mistake names the key as the user wrote it ([`Spelling`]) with the flag's
//! code (`invalid-duration`, …). Bounds that core checks (`NewJob::new`)
//! stay core's.
//!
//! Why here: the dashboard's router serves the HTTP API and the `duraq`
//! program depends on this crate (never the reverse), so this is the lowest
//! crate both reach that may know how people spell options; core keeps to
//! typed [`EnqueueOptions`] and does not parse human durations.

mod keys;
pub mod values;

use duraq_core::{EnqueueOptions, SequenceFailure};

pub use keys::{serde_fields, Spelling};
use values::{delay_ms, duration_ms, queue_name, rate_ms, rfc3339_ms, ValueError};

/// Options that shape any new job as people write them: the flags of `duraq
/// enqueue` and `schedule replace` (with the `clap` feature, `clap::Args`),
/// a workflow file's step and the HTTP API's body (camelCase keys, the
/// flags' values: `"runIn": "5m"`), read by one parser ([`enqueue_options`]).
/// An unknown key is refused by name (`deny_unknown_fields`).
///
/// ```
/// use duraq_web::job_options::{enqueue_options, JobOptions, Spelling};
/// let o: JobOptions = serde_json::from_str(r#"{"runIn": "5m", "priority": 3}"#).unwrap();
/// let opts = enqueue_options(&o, Spelling::Json).unwrap();
/// assert_eq!((opts.run_in_ms, opts.priority), (Some(300_000), Some(3)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobOptions {
    /// Queue name (default `default`; no commas, since workers choose queues
    /// with `--queues a,b`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "QUEUE"))]
    pub queue: Option<String>,
    /// Run no earlier than this RFC 3339 time (`2030-01-01T09:00:00Z`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TIME", conflicts_with = "run_in")
    )]
    pub run_at: Option<String>,
    /// Run after this delay (`10s`, `5m`, `1h`, `7d`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "DURATION", allow_hyphen_values = true)
    )]
    pub run_in: Option<String>,
    /// Retries after the first attempt (default 10).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub max_retries: Option<i64>,
    /// Concurrency key shared by jobs that may not all run at once.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KEY"))]
    pub concurrency_key: Option<String>,
    /// How many jobs of `--concurrency-key` may run at once.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub max_concurrency: Option<i64>,
    /// Fail an attempt that runs longer than this (`30s`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "DURATION", allow_hyphen_values = true)
    )]
    pub timeout: Option<String>,
    /// Priority within the queue, -100 (last) to 100 (first); default 0.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub priority: Option<i64>,
    /// Rate key shared by jobs whose starts are limited together (with `--rate`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "KEY", requires = "rate"))]
    pub rate_key: Option<String>,
    /// At most N starts per period for `--rate-key`, across every worker
    /// (`100/1s`, `5/10m`; a unit alone is one of it: `100/s`, `5/m`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N/PERIOD", requires = "rate_key")
    )]
    pub rate: Option<String>,
    /// Never start it after this RFC 3339 time: a worker that reaches it
    /// later cancels it (`lastError` `expired: …`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "TIME", conflicts_with = "expires_in")
    )]
    pub expires_at: Option<String>,
    /// Never start it later than this long after it is enqueued (`10m`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "DURATION", allow_hyphen_values = true)
    )]
    pub expires_in: Option<String>,
    /// Units of its concurrency cap and rate limit it takes (default 1; at
    /// most its own `--max-concurrency` and the N of its `--rate`).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", allow_negative_numbers = true)
    )]
    pub cost: Option<i64>,
    /// Delete the job once it completes, in the same transaction (an
    /// ephemeral job; failed and cancelled ones are kept). In a workflow
    /// file `"keepCompleted": false`, in a schedule file `keep_completed`.
    #[cfg_attr(feature = "clap", arg(long = "no-keep-completed", num_args = 0, default_missing_value = "false",
          value_parser = clap::value_parser!(bool)))]
    pub keep_completed: Option<bool>,
    /// Run it in this sequence: the jobs sharing a sequence key run one at a
    /// time, in the order they were enqueued.
    #[cfg_attr(feature = "clap", arg(long = "sequence", value_name = "KEY"))]
    pub sequence_key: Option<String>,
    /// What its failure does to its sequence: `hold` (the default: the jobs
    /// behind it wait until it is retried to completion, cancelled or
    /// deleted) or `continue` (the next one runs).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "hold|continue", requires = "sequence_key")
    )]
    pub on_sequence_failure: Option<String>,
    /// Take turns with the other keys of its queue (say, a tenant id): due
    /// jobs of different fairness keys are claimed in turn.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KEY"))]
    pub fairness_key: Option<String>,
}

/// A refused option: the [`JobOptions`] field it is about, and the error.
/// Not a `std::error::Error`: a caller says where the option was written.
#[derive(Debug)]
pub struct OptionError {
    /// The field (`run_in`), for a caller that points at where it was written.
    pub field: &'static str,
    /// The code and the message, naming the option as it was spelled.
    pub error: ValueError,
}

/// The options `a` gives (its `args` aside), each value parsed as its flag
/// parses it; a mistake names the option as `spelling` writes it.
pub fn enqueue_options(a: &JobOptions, spelling: Spelling) -> Result<EnqueueOptions, OptionError> {
    let at = |field: &'static str| {
        let name = spelling.name(field);
        move |error: ValueError| OptionError {
            field,
            error: ValueError::new(
                error.code,
                error
                    .message
                    .replacen(&format!("--{}", field.replace('_', "-")), &name, 1),
            ),
        }
    };
    // `runIn` stays a delay: the store adds it to its own clock, and an
    // idempotent request digests the delay, not a resolved time (`docs/idempotency.md`).
    let (scheduled_at_ms, run_in_ms) = match (&a.run_at, &a.run_in) {
        (Some(_), Some(_)) => {
            let error = ValueError::new(
                "invalid-scheduled-at",
                format!(
                    "give {} or {}, not both",
                    spelling.name("run_at"),
                    spelling.name("run_in")
                ),
            );
            return Err(OptionError {
                field: "run_at",
                error,
            });
        }
        (Some(t), None) => (Some(rfc3339_ms("--run-at", t).map_err(at("run_at"))?), None),
        (None, Some(d)) => (None, Some(delay_ms("--run-in", d).map_err(at("run_in"))?)),
        (None, None) => (None, None),
    };
    let (expires_at_ms, expires_in_ms) = match (&a.expires_at, &a.expires_in) {
        (Some(_), Some(_)) => {
            let names = (spelling.name("expires_at"), spelling.name("expires_in"));
            let error = ValueError::new(
                "invalid-expiry",
                format!("give {} or {}, not both", names.0, names.1),
            );
            return Err(at("expires_at")(error));
        }
        (Some(t), None) => (
            Some(rfc3339_ms("--expires-at", t).map_err(at("expires_at"))?),
            None,
        ),
        (None, Some(d)) => (
            None,
            Some(delay_ms("--expires-in", d).map_err(at("expires_in"))?),
        ),
        (None, None) => (None, None),
    };
    let timeout_ms = (a.timeout.as_deref())
        .map(|t| duration_ms("--timeout", t))
        .transpose()
        .map_err(at("timeout"))?;
    let rate = a
        .rate
        .as_deref()
        .map(rate_ms)
        .transpose()
        .map_err(at("rate"))?;
    let (rate_max, rate_period_ms) = match rate {
        Some((n, _)) if n < 1 => {
            let why = ValueError::new(
                "invalid-rate-limit",
                "--rate must allow at least 1 start per period",
            );
            return Err(at("rate")(why));
        }
        Some((_, 0)) => {
            let why = ValueError::new(
                "invalid-rate-limit",
                "--rate needs a period of at least 1ms",
            );
            return Err(at("rate")(why));
        }
        Some((n, ms)) => (Some(n), Some(ms)),
        None => (None, None),
    };
    let queue = (a.queue.as_deref())
        .map(|q| queue_name("--queue", q))
        .transpose()
        .map_err(at("queue"))?;
    // Core's message for a cap below 1 names both options of the pair; only
    // this one is wrong.
    if matches!(a.max_concurrency, Some(n) if n < 1) {
        let why = ValueError::new(
            "invalid-concurrency",
            "--max-concurrency must be at least 1",
        );
        return Err(at("max_concurrency")(why));
    }
    let on_sequence_failure = match a.on_sequence_failure.as_deref() {
        None => None,
        Some("hold") => Some(SequenceFailure::Hold),
        Some("continue") => Some(SequenceFailure::Continue),
        Some(other) => {
            let name = spelling.name("on_sequence_failure");
            let why = ValueError::new(
                "invalid-sequence",
                format!("{name} is hold or continue, not {other:?}"),
            );
            return Err(at("on_sequence_failure")(why));
        }
    };
    Ok(EnqueueOptions {
        queue: queue.map(String::from),
        max_retries: a.max_retries,
        scheduled_at_ms,
        run_in_ms,
        concurrency_key: a.concurrency_key.clone(),
        max_concurrency: a.max_concurrency,
        timeout_ms,
        priority: a.priority,
        cost: a.cost,
        keep_completed: a.keep_completed,
        sequence_key: a.sequence_key.clone(),
        on_sequence_failure,
        fairness_key: a.fairness_key.clone(),
        rate_key: a.rate_key.clone(),
        rate_max,
        rate_period_ms,
        expires_at_ms,
        expires_in_ms,
        ..EnqueueOptions::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistake_names_the_key_and_keeps_the_flags_code() {
        let a = JobOptions {
            run_in: Some("-5s".into()),
            ..JobOptions::default()
        };
        let err = enqueue_options(&a, Spelling::Json).unwrap_err();
        assert_eq!((err.field, err.error.code), ("run_in", "invalid-duration"));
        assert!(
            err.error.message.starts_with("runIn "),
            "{}",
            err.error.message
        );
        let a = JobOptions {
            run_in: Some("5m".into()),
            timeout: Some("30s".into()),
            rate: Some("100/s".into()),
            ..JobOptions::default()
        };
        let o = enqueue_options(&a, Spelling::Json).unwrap();
        assert_eq!((o.run_in_ms, o.timeout_ms), (Some(300_000), Some(30_000)));
        assert_eq!((o.rate_max, o.rate_period_ms), (Some(100), Some(1_000)));
    }

    #[test]
    fn an_expiry_is_a_time_or_a_delay_never_both() {
        let both = JobOptions {
            expires_at: Some("2030-01-01T00:00:00Z".into()),
            expires_in: Some("10m".into()),
            ..JobOptions::default()
        };
        let err = enqueue_options(&both, Spelling::Toml).unwrap_err();
        assert_eq!(err.error.code, "invalid-expiry");
        let negative = JobOptions {
            expires_in: Some("-1m".into()),
            ..JobOptions::default()
        };
        let err = enqueue_options(&negative, Spelling::Json).unwrap_err();
        assert_eq!(
            (err.field, err.error.code),
            ("expires_in", "invalid-duration")
        );
        assert!(
            err.error.message.starts_with("expiresIn "),
            "{}",
            err.error.message
        );
        let late = JobOptions {
            expires_in: Some("10m".into()),
            ..JobOptions::default()
        };
        assert_eq!(
            enqueue_options(&late, Spelling::Flag)
                .unwrap()
                .expires_in_ms,
            Some(600_000)
        );
        let at = JobOptions {
            expires_at: Some("2030-01-01T00:00:00Z".into()),
            ..JobOptions::default()
        };
        let o = enqueue_options(&at, Spelling::Flag).unwrap();
        assert_eq!(
            (o.expires_at_ms, o.expires_in_ms),
            (Some(1_893_456_000_000), None)
        );
    }
}
