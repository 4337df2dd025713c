//! Periodic jobs without a leader. Every worker process that declares a periodic
//! job computes the same tick times (multiples of the period since the epoch, or a
//! cron schedule's matches) and enqueues each tick with the idempotency key
//! `periodic:<name>:<tick ms>` and `scheduledAtMs` = the tick. The idempotency scope
//! turns every process's enqueue after the first into a replay, so each tick exists
//! once however many processes run. Ticks are enqueued ahead of time (the next one
//! is always waiting in the queue), so a tick fires on time even if the enqueuing
//! process is busy or restarting at that moment.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use super::cron::{CronSchedule, Zone};
use super::events::{Telemetry, WorkerEvent};
use super::handler::duration_ms;
use super::WorkerError;
use crate::clock::Clock;
use crate::error::ErrorCode;
use crate::keys::JobName;
use crate::new_job::NewJob;
use crate::options::EnqueueOptions;
use crate::requests::EnqueueOutcome;
use crate::store::Producer;
use crate::typed::{args_json, JobArgs};

/// When a periodic job fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeriodicSchedule {
    /// At every multiple of the period since the Unix epoch (so every process
    /// agrees on the ticks).
    Every(Duration),
    /// At the matches of a cron expression.
    Cron(CronSchedule),
}

impl PeriodicSchedule {
    /// The first tick strictly after `after_ms`.
    pub fn next_after_ms(&self, after_ms: i64) -> Option<i64> {
        match self {
            Self::Every(period) => {
                let p = duration_ms(*period).max(1);
                after_ms.div_euclid(p).checked_add(1)?.checked_mul(p)
            }
            Self::Cron(cron) => cron.next_after_ms(after_ms),
        }
    }
}

/// `every 1h` or the cron schedule with its zone (`0 9 * * * (Europe/Oslo)`).
impl fmt::Display for PeriodicSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Every(period) => write!(f, "every {period:?}"),
            Self::Cron(cron) => cron.fmt(f),
        }
    }
}

/// A job enqueued on a schedule by the workers that declare it.
///
/// ```
/// use std::time::Duration;
/// use duraq_core::{EnqueueOptions, JobArgs, PeriodicJob};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Cleanup {
///     older_than_days: u32,
/// }
/// impl JobArgs for Cleanup {
///     const NAME: &'static str = "app.cleanup";
///     fn options() -> EnqueueOptions {
///         EnqueueOptions::new().queue("maintenance")
///     }
/// }
///
/// // Typed: the job name, args and default options come from `Cleanup`.
/// let cleanup = PeriodicJob::every_job("cleanup", Duration::from_secs(3600), &Cleanup { older_than_days: 30 })
///     .unwrap();
/// assert_eq!(cleanup.job_name(), "app.cleanup");
/// let tick = cleanup.tick_job(3_600_000).unwrap();
/// assert_eq!(tick.queue().as_str(), "maintenance");
///
/// // Untyped: a job name and JSON args.
/// let nightly = PeriodicJob::cron("nightly-report", "0 3 * * *", "app.report")
///     .unwrap()
///     .utc_offset_minutes(60)
///     .options(EnqueueOptions::new().queue("reports").max_retries(2));
/// assert_eq!(nightly.name(), "nightly-report");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PeriodicJob {
    name: String,
    schedule: PeriodicSchedule,
    job_name: String,
    args: Value,
    /// The job type's defaults (typed constructors), under `options`.
    defaults: EnqueueOptions,
    options: EnqueueOptions,
}

impl PeriodicJob {
    /// Fires every `period` (at least 1 ms) under the schedule name `name`.
    pub fn every(name: &str, period: Duration, job_name: &str) -> Result<Self, WorkerError> {
        if period < Duration::from_millis(1) {
            return Err(WorkerError::InvalidConfig(
                "a periodic job's period must be at least 1 ms".into(),
            ));
        }
        Self::new(name, PeriodicSchedule::Every(period), job_name)
    }

    /// Fires on a five-field cron expression, in UTC unless the expression
    /// starts with `CRON_TZ=<zone>`, or [`PeriodicJob::in_time_zone`] or
    /// [`PeriodicJob::utc_offset_minutes`] says otherwise.
    pub fn cron(name: &str, expr: &str, job_name: &str) -> Result<Self, WorkerError> {
        Self::new(
            name,
            PeriodicSchedule::Cron(CronSchedule::parse(expr)?),
            job_name,
        )
    }

    /// Fires every `period` (at least 1 ms) under the schedule name `name`,
    /// enqueuing `args` with its type's name and default options (which
    /// [`PeriodicJob::options`] overrides field by field).
    ///
    /// Errors: as [`PeriodicJob::every`], and `invalid-args` if `args` does not
    /// serialize.
    pub fn every_job<A: JobArgs>(
        name: &str,
        period: Duration,
        args: &A,
    ) -> Result<Self, WorkerError> {
        Ok(Self::every(name, period, A::NAME)?.typed(args)?)
    }

    /// Fires on a five-field cron expression (see [`PeriodicJob::cron`]),
    /// enqueuing `args` as [`PeriodicJob::every_job`] does.
    pub fn cron_job<A: JobArgs>(name: &str, expr: &str, args: &A) -> Result<Self, WorkerError> {
        Ok(Self::cron(name, expr, A::NAME)?.typed(args)?)
    }

    fn typed<A: JobArgs>(mut self, args: &A) -> crate::error::Result<Self> {
        self.args = args_json(args)?;
        self.defaults = A::options();
        Ok(self)
    }

    fn new(name: &str, schedule: PeriodicSchedule, job_name: &str) -> Result<Self, WorkerError> {
        let name = name.trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(WorkerError::InvalidConfig(
                "a periodic job needs a name".into(),
            ));
        }
        let job_name = JobName::new(job_name)?.as_str().to_owned();
        Ok(Self {
            name: name.to_owned(),
            schedule,
            job_name,
            args: Value::Array(Vec::new()),
            defaults: EnqueueOptions::new(),
            options: EnqueueOptions::new(),
        })
    }

    /// The args of every tick's job (default `[]`).
    pub fn args(mut self, args: Value) -> Self {
        self.args = args;
        self
    }

    /// Queue, retries, timeout, concurrency of every tick's job (over a typed
    /// job's defaults, field by field). The idempotency key and scheduled time
    /// are set per tick; dedupe is not used.
    pub fn options(mut self, options: EnqueueOptions) -> Self {
        self.options = options;
        self
    }

    /// Evaluates a cron schedule at a fixed offset from UTC (no effect on `every`).
    pub fn utc_offset_minutes(mut self, offset: i32) -> Self {
        if let PeriodicSchedule::Cron(c) = self.schedule {
            self.schedule = PeriodicSchedule::Cron(c.with_utc_offset_minutes(offset));
        }
        self
    }

    /// Evaluates a cron schedule on the wall clock of the IANA zone `zone` (see
    /// [`CronSchedule::in_time_zone`] for the daylight-saving rules); the same
    /// as a `CRON_TZ=<zone>` prefix. No effect on `every`, whose ticks are
    /// multiples of the period since the epoch, but the name is checked all the
    /// same.
    ///
    /// Errors: `invalid-time-zone` if the zone is unknown.
    ///
    /// ```
    /// use duraq_core::{ErrorCode, PeriodicJob};
    /// let standup = PeriodicJob::cron("standup", "0 9 * * mon-fri", "app.standup")
    ///     .unwrap()
    ///     .in_time_zone("Europe/Oslo")
    ///     .unwrap();
    /// assert_eq!(standup.schedule().to_string(), "0 9 * * mon-fri (Europe/Oslo)");
    /// let err = PeriodicJob::cron("x", "0 9 * * *", "app.x").unwrap().in_time_zone("Oslo");
    /// assert_eq!(err.unwrap_err().code(), ErrorCode::InvalidTimeZone);
    /// ```
    pub fn in_time_zone(mut self, zone: &str) -> Result<Self, WorkerError> {
        self.schedule = match self.schedule {
            PeriodicSchedule::Cron(c) => PeriodicSchedule::Cron(c.in_time_zone(zone)?),
            PeriodicSchedule::Every(period) => {
                Zone::named(zone)?;
                PeriodicSchedule::Every(period)
            }
        };
        Ok(self)
    }

    /// The schedule's name (part of each tick's idempotency key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The job name each tick enqueues.
    pub fn job_name(&self) -> &str {
        &self.job_name
    }

    /// The schedule.
    pub fn schedule(&self) -> &PeriodicSchedule {
        &self.schedule
    }

    /// The idempotency key of the tick at `tick_ms`.
    pub fn tick_key(&self, tick_ms: i64) -> String {
        format!("periodic:{}:{tick_ms}", self.name)
    }

    /// The job of the tick at `tick_ms`.
    pub fn tick_job(&self, tick_ms: i64) -> Result<NewJob, WorkerError> {
        let mut opts = self.options.clone().or_defaults(self.defaults.clone());
        opts.idempotency_key = Some(self.tick_key(tick_ms));
        opts.scheduled_at_ms = Some(tick_ms);
        opts.run_in_ms = None;
        opts.deduplicate_while_queued = false;
        Ok(NewJob::new(&self.job_name, self.args.clone(), opts)?)
    }
}

/// Keeps the next tick of `job` enqueued until `stopping` turns true.
pub(crate) async fn run_periodic(
    job: PeriodicJob,
    store: Arc<dyn Producer>,
    clock: Arc<dyn Clock>,
    telemetry: Arc<Telemetry>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut after = clock.now_ms() - 1;
    while let Some(tick) = job.schedule.next_after_ms(after) {
        // Enqueue the tick ahead of time, retrying store errors.
        let mut retry = Duration::from_millis(200);
        loop {
            match enqueue_tick(&job, tick, store.as_ref(), &telemetry).await {
                Ok(()) => break,
                Err(e) if e.code() == ErrorCode::IdempotencyConflict => {
                    tracing::warn!(periodic = %job.name, schedule = %job.schedule, tick_ms = tick, "periodic tick conflicts with another process's definition: {e}");
                    break;
                }
                Err(e) => {
                    tracing::warn!(periodic = %job.name, schedule = %job.schedule, tick_ms = tick, "enqueueing periodic tick failed: {e}")
                }
            }
            if wait_or_stop(&mut stopping, retry).await {
                return;
            }
            retry = (retry * 2).min(Duration::from_secs(10));
        }
        // Wait until the tick is due, then enqueue the one after it.
        loop {
            let now = clock.now_ms();
            if now >= tick {
                break;
            }
            let wait = Duration::from_millis((tick - now) as u64);
            if wait_or_stop(&mut stopping, wait).await {
                return;
            }
        }
        // Skip ticks missed while this process was suspended.
        after = tick.max(clock.now_ms() - 1);
    }
    tracing::warn!(periodic = %job.name, schedule = %job.schedule, "periodic schedule has no further ticks");
}

async fn enqueue_tick(
    job: &PeriodicJob,
    tick: i64,
    store: &dyn Producer,
    telemetry: &Telemetry,
) -> Result<(), WorkerError> {
    let outcome = store.enqueue(job.tick_job(tick)?).await?;
    let created = matches!(outcome, EnqueueOutcome::Created(_));
    if created {
        Telemetry::add(&telemetry.periodic_enqueued, 1);
        tracing::debug!(periodic = %job.name, schedule = %job.schedule, tick_ms = tick, job_id = outcome.job_id(), "periodic tick enqueued");
    }
    telemetry.emit(WorkerEvent::PeriodicEnqueued {
        name: job.name.clone(),
        tick_ms: tick,
        job_id: outcome.job_id().to_owned(),
        created,
    });
    Ok(())
}

/// Sleeps for `d`; true if `stopping` turned true (or its sender went away) first.
pub(crate) async fn wait_or_stop(stopping: &mut watch::Receiver<bool>, d: Duration) -> bool {
    let woke = tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = stopping.wait_for(|s| *s) => true,
    };
    woke || *stopping.borrow()
}
