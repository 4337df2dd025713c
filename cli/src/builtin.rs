//! The built-in jobs (see `docs/cli.md`) (`duraq.noop`, `duraq.sleep`, `duraq.http`,
//! `duraq.echo`, `duraq.await_signal`) and
//! the one place where a worker's handlers are registered, so that the mail crate
//! adds `duraq.mail.deliver` (see `mail.rs`) without touching the worker loop.
//! `duraq.sleep` and `duraq.http` stop as soon as their job is cancelled while
//! they run ([`until_cancelled`]).

use std::future::Future;
use std::time::Duration;

use duraq_core::{JobContext, JobError, JobResult, Registry, WorkerError};
use duraq_web::builtin_args::HttpRequest;
use serde_json::Value;

pub use duraq_web::builtin_args::{AWAIT_SIGNAL, ECHO, HTTP, NOOP, SLEEP};

/// What the built-in handlers share.
#[derive(Clone, Debug)]
pub struct Builtins {
    /// The client `duraq.http` sends with (connection pooling across jobs).
    pub http: reqwest::Client,
}

impl Builtins {
    pub fn new() -> Self {
        Self {
            http: http_client(),
        }
    }
}

/// Adds every built-in handler to `registry`: the one registration point for
/// built-in jobs, shared by `duraq worker` and `duraq demo`. `duraq.mail.deliver`
/// comes from [`crate::mail::register`], which needs a configured backend.
pub fn register_builtins(registry: &mut Registry, builtins: &Builtins) -> Result<(), WorkerError> {
    let client = builtins.http.clone();
    *registry = std::mem::take(registry)
        .register_fn(NOOP, |_ctx, args| async move {
            noop(args).await.map_err(JobError::new)
        })?
        .register_fn(ECHO, |_ctx, args| async move {
            Ok::<_, JobError>(JobResult::Output(args))
        })?
        .register_fn(SLEEP, |ctx, args| async move {
            until_cancelled(&ctx, sleep(args)).await
        })?
        .register_fn(HTTP, move |ctx, args| {
            let client = client.clone();
            async move { until_cancelled(&ctx, http(client, args)).await }
        })?
        .register_fn(AWAIT_SIGNAL, |ctx, args| async move {
            await_signal(&ctx, args).await
        })?;
    crate::mail::register(registry)?;
    Ok(())
}

/// Runs `work` until it ends or the attempt is cancelled (the job was
/// cancelled while running, or the lease lost): then `work` is dropped (a
/// sleep ends, an HTTP request is abandoned) and the attempt fails without
/// retries. The worker refuses that report anyway: the job is already
/// `cancelled`.
pub async fn until_cancelled<T>(
    ctx: &JobContext,
    work: impl Future<Output = Result<T, JobError>>,
) -> Result<T, JobError> {
    tokio::select! {
        biased;
        _ = ctx.cancelled() => Err(JobError::new("cancelled while running").discard()),
        result = work => result,
    }
}

/// `duraq.await_signal`: `{"name", "timeoutMs"?}`; waits for that signal
/// (as `pending`, holding no slot) and completes with its payload as its
/// output; fails without retries with `signal-timeout` when the time is up.
pub async fn await_signal(ctx: &JobContext, args: Value) -> Result<JobResult, JobError> {
    let (name, ms) =
        duraq_web::builtin_args::awaited_signal(&args).map_err(|m| JobError::new(m).discard())?;
    match ctx
        .wait_for_signal::<Value>(&name, Duration::from_millis(ms))
        .await?
    {
        Some(payload) => Ok(JobResult::Output(payload)),
        None => Err(
            JobError::new(format!("signal-timeout: no signal {name:?} within {ms} ms")).discard(),
        ),
    }
}

/// `duraq.noop`: any args; succeeds.
pub async fn noop(_args: Value) -> Result<(), String> {
    Ok(())
}

/// `duraq.sleep`: `{"ms": N}`; sleeps, then succeeds.
/// Malformed args can never succeed, so they fail the job without retries.
pub async fn sleep(args: Value) -> Result<(), JobError> {
    let ms = sleep_ms(&args)?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(())
}

/// How long `duraq.sleep` sleeps, or the error that fails it without retries.
fn sleep_ms(args: &Value) -> Result<u64, JobError> {
    duraq_web::builtin_args::sleep_ms(args).map_err(|m| JobError::new(m).discard())
}

/// Checks `args` the way the built-in job `name`'s handler reads them, before
/// any job exists (`duraq enqueue`, a workflow file and `duraq worker
/// --schedule` refuse args its handler would refuse at once, as
/// `invalid-args`): `Err` carries the handler's own message. The checks of
/// `duraq-web` ([`duraq_web::builtin_args::check_args`], which the HTTP API
/// runs too) and `duraq.mail.deliver`'s payload; other names are the
/// application's, not checked here.
pub fn check_args(name: &str, args: &Value) -> Result<(), String> {
    if name == duraq_mailer::DELIVER_JOB {
        let deliver: duraq_mailer::DeliverArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("duraq.mail.deliver expects {{\"payload\": {{…}}}}: {e}"))?;
        return deliver.payload.validate().map_err(|e| e.to_string());
    }
    duraq_web::builtin_args::check_args(name, args)
}

/// [`check_args`] for a job about to be enqueued: `invalid-args`.
pub fn checked_args(name: &str, args: &Value) -> Result<(), crate::error::CliError> {
    check_args(name, args)
        .map_err(|m| crate::error::CliError::new("invalid-args", format!("--args: {m}")))
}

/// `duraq.http`: `{"url", "method"?: "POST", "headers"?: {…}, "body"?: any}`.
///
/// A connection error or a non-2xx answer is a failed attempt, retried by the
/// normal policy. A request that can never be sent (not an `http(s)` URL, a bad
/// method, header name or value) fails at once without retries. Error texts keep
/// their cause chain ("connection refused") and never a password in the URL.
pub async fn http(client: reqwest::Client, args: Value) -> Result<(), JobError> {
    let never = |message: String| JobError::new(message).discard();
    let HttpRequest {
        method,
        url,
        headers,
        shown,
    } = http_request(&args)?;
    let mut req = client.request(method, url).headers(headers);
    match args.get("body") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => req = req.body(s.clone()),
        Some(body) => req = req.json(body),
    }
    let resp = req.send().await.map_err(|e| {
        let builder = e.is_builder();
        let message = format!(
            "duraq.http: request to {shown} failed: {}",
            duraq_core::inspect::error_chain(&e.without_url())
        );
        if builder {
            never(message)
        } else {
            JobError::new(message)
        }
    })?;
    let status = resp.status();
    if status.is_success() {
        Ok(())
    } else {
        let text = resp.text().await.unwrap_or_default();
        let snippet: String = text.chars().take(200).collect();
        Err(JobError::new(format!(
            "duraq.http: {shown} answered {status}: {snippet}"
        )))
    }
}

/// Reads a `duraq.http` job's args: the error fails the job without retries,
/// since such a request can never be sent.
fn http_request(args: &Value) -> Result<HttpRequest, JobError> {
    duraq_web::builtin_args::http_request(args).map_err(|m| JobError::new(m).discard())
}

/// The HTTP client `duraq.http` shares across jobs.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(concat!("duraq/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}
