//! The one parser of a new job's options, wherever they are written: the
//! flags of `enqueue` and `schedule replace` (`--run-in 5m`), a workflow
//! file's step (`"runIn": "5m"`) and a schedule file's `[[job]]`
//! (`timeout = "30s"`). Each gives its values as the flags take them (a
//! [`JobArgs`]: durations like `5m`, RFC 3339 times, `N/PERIOD` rates), so a
//! value means the same in all three, and a mistake names the key as the
//! user wrote it ([`Spelling`]) with the flag's code (`invalid-duration`, …).
//! Bounds that core checks (`NewJob::new`) stay core's.

use clap::Args;
use duraq_core::EnqueueOptions;
use serde_json::Value;

use crate::error::CliError;
use crate::parse::{delay_ms, duration_ms, json_args, queue_name, rate_ms, rfc3339_ms};

/// Options that shape any new job: the flags of `enqueue` and `schedule
/// replace`, and the same options in a workflow file's step (camelCase keys,
/// the flags' values: `"runIn": "5m"`), read by one parser
/// ([`crate::options`]). An unknown key of a file is refused by name.
#[derive(Debug, Args, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobArgs {
    /// Job arguments as JSON, handed to the handler (default `[]`).
    #[arg(long, value_name = "JSON")]
    #[serde(skip)]
    pub args: Option<String>,
    /// Queue name (default `default`; no commas, since workers choose queues
    /// with `--queues a,b`).
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Run no earlier than this RFC 3339 time (`2030-01-01T09:00:00Z`).
    #[arg(long, value_name = "TIME", conflicts_with = "run_in")]
    pub run_at: Option<String>,
    /// Run after this delay (`10s`, `5m`, `1h`, `7d`).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub run_in: Option<String>,
    /// Retries after the first attempt (default 10).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_retries: Option<i64>,
    /// Concurrency key shared by jobs that may not all run at once.
    #[arg(long, value_name = "KEY")]
    pub concurrency_key: Option<String>,
    /// How many jobs of `--concurrency-key` may run at once.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_concurrency: Option<i64>,
    /// Fail an attempt that runs longer than this (`30s`).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,
    /// Priority within the queue, -100 (last) to 100 (first); default 0.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Rate key shared by jobs whose starts are limited together (with `--rate`).
    #[arg(long, value_name = "KEY", requires = "rate")]
    pub rate_key: Option<String>,
    /// At most N starts per period for `--rate-key`, across every worker
    /// (`100/1s`, `5/10m`; a unit alone is one of it: `100/s`, `5/m`).
    #[arg(long, value_name = "N/PERIOD", requires = "rate_key")]
    pub rate: Option<String>,
    /// Never start it after this RFC 3339 time: a worker that reaches it
    /// later cancels it (`lastError` `expired: …`).
    #[arg(long, value_name = "TIME", conflicts_with = "expires_in")]
    pub expires_at: Option<String>,
    /// Never start it later than this long after it is enqueued (`10m`).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub expires_in: Option<String>,
    /// Units of its concurrency cap and rate limit it takes (default 1; at
    /// most its own `--max-concurrency` and the N of its `--rate`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub cost: Option<i64>,
    /// Delete the job once it completes, in the same transaction (an
    /// ephemeral job; failed and cancelled ones are kept). In a workflow
    /// file `"keepCompleted": false`, in a schedule file `keep_completed`.
    #[arg(long = "no-keep-completed", num_args = 0, default_missing_value = "false",
          value_parser = clap::value_parser!(bool))]
    pub keep_completed: Option<bool>,
    /// Not a flag: `--delay` is refused with the real one's name (`--run-in`).
    #[arg(long, hide = true, value_name = "DURATION", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --delay: use --run-in DURATION (10s, 5m) or --run-at TIME"))]
    #[serde(skip)]
    pub delay: Option<String>,
    /// Not a flag: `--retries` is refused with the real one's name (`--max-retries`).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --retries: use --max-retries N"))]
    #[serde(skip)]
    pub retries: Option<String>,
}

/// How the options were written: which name a message gives an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags: `--run-in`.
    Flag,
    /// A JSON file's keys: `runIn`.
    Json,
    /// A TOML file's keys: `run_in`.
    Toml,
}

impl Spelling {
    /// The name of the option whose [`JobArgs`] field is `field`.
    pub fn name(self, field: &str) -> String {
        match self {
            Self::Flag => format!("--{}", field.replace('_', "-")),
            Self::Toml => field.to_owned(),
            Self::Json => {
                let mut parts = field.split('_');
                let first = parts.next().unwrap_or_default().to_owned();
                parts.fold(first, |mut out, part| {
                    let mut chars = part.chars();
                    if let Some(c) = chars.next() {
                        out.push(c.to_ascii_uppercase());
                        out.extend(chars);
                    }
                    out
                })
            }
        }
    }
}

/// A refused option: the [`JobArgs`] field it is about, and the error.
#[derive(Debug)]
pub struct OptionError {
    /// The field (`run_in`), for a caller that points at where it was written.
    pub field: &'static str,
    pub error: CliError,
}

impl From<OptionError> for CliError {
    fn from(e: OptionError) -> Self {
        e.error
    }
}

impl From<OptionError> for anyhow::Error {
    fn from(e: OptionError) -> Self {
        e.error.into()
    }
}

/// The options `a` gives (its `args` aside), each value parsed as its flag
/// parses it; a mistake names the option as `spelling` writes it.
pub fn enqueue_options(a: &JobArgs, spelling: Spelling) -> Result<EnqueueOptions, OptionError> {
    let at = |field: &'static str| {
        let name = spelling.name(field);
        move |error: CliError| OptionError {
            field,
            error: CliError::new(
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
            let error = CliError::new(
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
            let error = CliError::new(
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
            let why = CliError::new(
                "invalid-rate-limit",
                "--rate must allow at least 1 start per period",
            );
            return Err(at("rate")(why));
        }
        Some((_, 0)) => {
            let why = CliError::new(
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
        let why = CliError::new(
            "invalid-concurrency",
            "--max-concurrency must be at least 1",
        );
        return Err(at("max_concurrency")(why));
    }
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
        rate_key: a.rate_key.clone(),
        rate_max,
        rate_period_ms,
        expires_at_ms,
        expires_in_ms,
        ..EnqueueOptions::default()
    })
}

/// Builds `(args, options)` from the shared job flags.
/// Core validation of the options (retries, concurrency, timeout) happens
/// later in `NewJob::new`.
pub fn job_options(a: &JobArgs) -> Result<(Value, EnqueueOptions), CliError> {
    let args = json_args(a.args.as_deref())?;
    let opts = enqueue_options(a, Spelling::Flag)?;
    Ok((args, opts))
}

/// The field names serde reads for the struct `T`, asked of its derive (so a
/// list of keys is never written twice): a deserializer that records the
/// fields `deserialize_struct` is called with, then stops.
pub fn serde_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_names_an_option_as_it_is_written() {
        assert_eq!(Spelling::Flag.name("run_in"), "--run-in");
        assert_eq!(Spelling::Json.name("max_concurrency"), "maxConcurrency");
        assert_eq!(Spelling::Json.name("queue"), "queue");
        assert_eq!(Spelling::Toml.name("rate_key"), "rate_key");
    }

    #[test]
    fn a_mistake_names_the_key_and_keeps_the_flags_code() {
        let a = JobArgs {
            run_in: Some("-5s".into()),
            ..JobArgs::default()
        };
        let err = enqueue_options(&a, Spelling::Json).unwrap_err();
        assert_eq!((err.field, err.error.code), ("run_in", "invalid-duration"));
        assert!(
            err.error.message.starts_with("runIn "),
            "{}",
            err.error.message
        );
        let a = JobArgs {
            run_in: Some("5m".into()),
            timeout: Some("30s".into()),
            rate: Some("100/s".into()),
            ..JobArgs::default()
        };
        let o = enqueue_options(&a, Spelling::Json).unwrap();
        assert_eq!((o.run_in_ms, o.timeout_ms), (Some(300_000), Some(30_000)));
        assert_eq!((o.rate_max, o.rate_period_ms), (Some(100), Some(1_000)));
    }

    #[test]
    fn an_expiry_is_a_time_or_a_delay_never_both() {
        let both = JobArgs {
            expires_at: Some("2030-01-01T00:00:00Z".into()),
            expires_in: Some("10m".into()),
            ..JobArgs::default()
        };
        let err = enqueue_options(&both, Spelling::Toml).unwrap_err();
        assert_eq!(err.error.code, "invalid-expiry");
        let negative = JobArgs {
            expires_in: Some("-1m".into()),
            ..JobArgs::default()
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
        let late = JobArgs {
            expires_in: Some("10m".into()),
            ..JobArgs::default()
        };
        assert_eq!(
            enqueue_options(&late, Spelling::Flag)
                .unwrap()
                .expires_in_ms,
            Some(600_000)
        );
        let at = JobArgs {
            expires_at: Some("2030-01-01T00:00:00Z".into()),
            ..JobArgs::default()
        };
        let o = enqueue_options(&at, Spelling::Flag).unwrap();
        assert_eq!(
            (o.expires_at_ms, o.expires_in_ms),
            (Some(1_893_456_000_000), None)
        );
    }
}
