//! One `[[job]]` entry of a schedule file: its keys, and how they become a core
//! [`PeriodicJob`], each mistake reported at the key that makes it. The rules
//! are not repeated here: the schedule is core's (`PeriodicJob::every`,
//! `cron`, `in_time_zone`), the args are the built-in handler's
//! ([`crate::builtin::check_args`], `MailPayload::validate`), and the options
//! are checked by building the job of a tick (`NewJob::new`).

use std::ops::Range;
use std::time::Duration;

use duraq_core::{EnqueueOptions, ErrorCode, PeriodicJob, Registry};
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use super::{at, ScheduleError, Source, INVALID};
use crate::options::{enqueue_options, Spelling};

/// The keys of a `[[job]]` (see `docs/periodic.md`, "Schedules without Rust").
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    pub(crate) name: Spanned<String>,
    job: Spanned<String>,
    every: Option<Spanned<String>>,
    cron: Option<Spanned<String>>,
    zone: Option<Spanned<String>>,
    args: Option<Spanned<toml::Value>>,
    queue: Option<Spanned<String>>,
    max_retries: Option<Spanned<i64>>,
    priority: Option<Spanned<i64>>,
    timeout: Option<Spanned<String>>,
    concurrency_key: Option<Spanned<String>>,
    max_concurrency: Option<Spanned<i64>>,
    rate_key: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    cost: Option<Spanned<i64>>,
    expires_in: Option<Spanned<String>>,
    keep_completed: Option<Spanned<bool>>,
    sequence_key: Option<Spanned<String>>,
    fairness_key: Option<Spanned<String>>,
}

/// The periodic job `entry` declares, for a worker whose handlers are `registry`.
pub(crate) fn build(
    src: &Source<'_>,
    entry: &Spanned<Entry>,
    registry: &Registry,
) -> Result<PeriodicJob, ScheduleError> {
    let whole = entry.span();
    let e = entry.get_ref();
    check_job(src, &e.job, registry)?;
    let job = schedule(src, e, whole.clone())?
        .args(args(src, e, whole.clone())?)
        .options(options(src, e)?);
    // Core's checks of the options, on the job of the next tick.
    let now = crate::parse::now_ms();
    let tick = job.schedule().next_after_ms(now).unwrap_or(now);
    job.tick_job(tick).map_err(|err| {
        let (key, span) = option_key(e, err.code()).unwrap_or(("", whole));
        let mut found = at(src, span, err);
        if let Some(message) = reworded(key) {
            found.message = message;
        }
        found
    })?;
    Ok(job)
}

/// The job must be one this worker runs, so every tick it enqueues has a handler.
fn check_job(
    src: &Source<'_>,
    job: &Spanned<String>,
    registry: &Registry,
) -> Result<(), ScheduleError> {
    let name = job.get_ref().as_str();
    if registry.contains(name) {
        return Ok(());
    }
    let message = if name == duraq_mailer::DELIVER_JOB {
        format!("job {name:?} needs a mail backend on this worker: set DURAQ_MAIL_BACKEND")
    } else {
        let mut known = registry.names();
        known.sort();
        format!(
            "job {name:?} is not a built-in job this worker runs ({})",
            known.join(", ")
        )
    };
    Err(src.error(INVALID, job.span(), message))
}

/// `every` or `cron` (with `zone`) under the entry's `name`.
fn schedule(
    src: &Source<'_>,
    e: &Entry,
    whole: Range<usize>,
) -> Result<PeriodicJob, ScheduleError> {
    let name = e.name.get_ref();
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(src.error(
            INVALID,
            e.name.span(),
            "name must not be empty or hold control characters",
        ));
    }
    let job_name = e.job.get_ref();
    match (&e.every, &e.cron) {
        (Some(_), Some(cron)) => {
            Err(src.error(INVALID, cron.span(), "give `every` or `cron`, not both"))
        }
        (None, None) => Err(src.error(
            INVALID,
            whole,
            "a [[job]] needs `every` (like \"5m\") or `cron` (like \"0 9 * * *\")",
        )),
        (Some(every), None) => {
            if let Some(zone) = &e.zone {
                return Err(src.error(
                    INVALID,
                    zone.span(),
                    "`zone` applies to `cron` only: `every` ticks at multiples of its \
                     period since the Unix epoch, the same instants in every zone",
                ));
            }
            let raw = every.get_ref();
            let period = humantime::parse_duration(raw.trim())
                .ok()
                .filter(|d| *d >= Duration::from_millis(1))
                .ok_or_else(|| {
                    src.error(
                        "invalid-duration",
                        every.span(),
                        format!("every {raw:?} is not a duration of at least 1ms like 30s, 5m, 1h or 1d"),
                    )
                })?;
            PeriodicJob::every(name, period, job_name).map_err(|err| at(src, e.name.span(), err))
        }
        (None, Some(cron)) => {
            let expr = cron.get_ref();
            let job = PeriodicJob::cron(name, expr, job_name).map_err(|err| {
                let on_cron = matches!(
                    err.code(),
                    ErrorCode::InvalidCron | ErrorCode::InvalidTimeZone
                );
                at(src, if on_cron { cron.span() } else { e.name.span() }, err)
            })?;
            let Some(zone) = &e.zone else {
                return Ok(job);
            };
            let expr = expr.trim_start();
            if expr.starts_with("CRON_TZ=") || expr.starts_with("TZ=") {
                return Err(src.error(
                    INVALID,
                    zone.span(),
                    "the cron expression already names its zone: give `zone` or a CRON_TZ= prefix, not both",
                ));
            }
            job.in_time_zone(zone.get_ref())
                .map_err(|err| at(src, zone.span(), err))
        }
    }
}

/// The args as JSON (default `[]`), checked as the built-in's handler reads them.
fn args(src: &Source<'_>, e: &Entry, whole: Range<usize>) -> Result<Value, ScheduleError> {
    let (value, span) = match &e.args {
        Some(a) => {
            let value = json(a.get_ref()).map_err(|m| src.error("invalid-args", a.span(), m))?;
            (value, a.span())
        }
        None => (Value::Array(Vec::new()), whole),
    };
    let job = e.job.get_ref();
    let checked = if job == duraq_mailer::DELIVER_JOB {
        mail_args(&value)
    } else {
        crate::builtin::check_args(job, &value)
    };
    checked.map_err(|m| src.error("invalid-args", span, format!("args: {m}")))?;
    Ok(value)
}

/// A TOML value as JSON: a date or time becomes its RFC 3339 text.
fn json(v: &toml::Value) -> Result<Value, String> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("args: {f} has no JSON form"))?,
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => {
            Value::Array(items.iter().map(json).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| Ok((k.clone(), json(v)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// `duraq.mail.deliver` from a file: a payload delivered at least once (a
/// required-idempotency operation is recorded by `duraq mail send --later`
/// with its job, which a tick cannot do).
fn mail_args(value: &Value) -> Result<(), String> {
    let args: duraq_mailer::DeliverArgs = serde_json::from_value(value.clone())
        .map_err(|e| format!("duraq.mail.deliver expects {{\"payload\": {{…}}}}: {e}"))?;
    if args.operation.is_some() {
        return Err("a scheduled mail is delivered at least once: leave out `operation`".into());
    }
    args.payload.validate().map_err(|e| e.to_string())
}

/// The enqueue options, parsed by the flags' own parser ([`crate::options`]),
/// a mistake reported at its key.
fn options(src: &Source<'_>, e: &Entry) -> Result<EnqueueOptions, ScheduleError> {
    let text = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
    let number = |v: &Option<Spanned<i64>>| v.as_ref().map(|v| *v.get_ref());
    let flags = crate::options::JobOptions {
        queue: text(&e.queue),
        max_retries: number(&e.max_retries),
        concurrency_key: text(&e.concurrency_key),
        max_concurrency: number(&e.max_concurrency),
        timeout: text(&e.timeout),
        priority: number(&e.priority),
        rate_key: text(&e.rate_key),
        rate: text(&e.rate),
        cost: number(&e.cost),
        keep_completed: e.keep_completed.as_ref().map(|v| *v.get_ref()),
        sequence_key: text(&e.sequence_key),
        fairness_key: text(&e.fairness_key),
        expires_in: text(&e.expires_in),
        ..crate::options::JobOptions::default()
    };
    enqueue_options(&flags, Spelling::Toml).map_err(|err| {
        let span = match err.field {
            "queue" => e.queue.as_ref().map(Spanned::span),
            "timeout" => e.timeout.as_ref().map(Spanned::span),
            "rate" => e.rate.as_ref().map(Spanned::span),
            "expires_in" => e.expires_in.as_ref().map(Spanned::span),
            "max_concurrency" => e.max_concurrency.as_ref().map(Spanned::span),
            _ => None,
        };
        src.error(
            err.error.code,
            span.unwrap_or_else(|| e.name.span()),
            err.error.message,
        )
    })
}

/// The key a core option error is about, and its span.
fn option_key(e: &Entry, code: ErrorCode) -> Option<(&'static str, Range<usize>)> {
    fn span<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
        v.as_ref().map(Spanned::span)
    }
    let (key, span) = match code {
        ErrorCode::InvalidQueue => ("queue", span(&e.queue)),
        ErrorCode::InvalidMaxRetries => ("max_retries", span(&e.max_retries)),
        ErrorCode::InvalidPriority => ("priority", span(&e.priority)),
        ErrorCode::InvalidTimeout => ("timeout", span(&e.timeout)),
        ErrorCode::InvalidConcurrency => (
            "concurrency_key",
            span(&e.concurrency_key).or_else(|| span(&e.max_concurrency)),
        ),
        ErrorCode::InvalidRateLimit => ("rate_key", span(&e.rate_key).or_else(|| span(&e.rate))),
        ErrorCode::InvalidIdempotencyKey => ("name", Some(e.name.span())),
        ErrorCode::InvalidCost => ("cost", span(&e.cost)),
        ErrorCode::InvalidSequence => ("sequence_key", span(&e.sequence_key)),
        ErrorCode::InvalidFairnessKey => ("fairness_key", span(&e.fairness_key)),
        _ => return None,
    };
    Some((key, span?))
}

/// Core's message reworded to name the file's keys, not the JSON fields.
fn reworded(key: &str) -> Option<String> {
    Some(
        match key {
            "queue" => "queue must be 1 to 255 characters without control characters or commas",
            "max_retries" => "max_retries must be 0 or more",
            "priority" => "priority must be from -100 to 100",
            "timeout" => "timeout must be at least 1ms",
            "concurrency_key" => {
                "concurrency_key (1 to 255 characters without control characters, not \
                 starting with `queue:`) and max_concurrency (at least 1) go together"
            }
            "rate_key" => {
                "rate_key (1 to 255 characters without control characters) and rate (at \
                 least 1 start per period of at least 1ms, like 100/1s) go together"
            }
            "cost" => "cost must be from 1 to the job's own max_concurrency and the N of its rate",
            "sequence_key" => "sequence_key must be 1 to 255 characters without control characters",
            "fairness_key" => "fairness_key must be 1 to 255 characters without control characters",
            "name" => "name is too long: a tick's idempotency key `periodic:<name>:<tick ms>` must be at most 1024 bytes",
            _ => return None,
        }
        .to_owned(),
    )
}
