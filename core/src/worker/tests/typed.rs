//! Typed jobs end to end: a `JobArgs` type's defaults and backoff reach the
//! store and the worker; args that no longer decode fail once, without retries;
//! the `Duration`/`SystemTime` builders map onto the wire form's checks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::running::fast;
use super::*;
use crate::{
    async_trait, Clock, EnqueueOptions, ErrorCode, JobArgs, JobContext, JobError, JobHandler,
    JobResult, JobStatus, Outcome, PeriodicJob, Registry,
};

#[derive(Debug, Serialize, Deserialize)]
struct SendWelcome {
    user_id: i64,
}

impl JobArgs for SendWelcome {
    const NAME: &'static str = "send_welcome";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new()
            .queue("mail")
            .max_retries(2)
            .timeout(Duration::from_secs(30))
            .priority(20)
            .rate_limit("smtp", 10, Duration::from_secs(1))
    }
    fn backoff(attempt: u32) -> Option<Duration> {
        Some(Duration::from_millis(7 * u64::from(attempt)))
    }
}

/// Fails attempt 1 of user 13, completes everything else.
struct Welcomer;

#[async_trait]
impl JobHandler for Welcomer {
    type Args = SendWelcome;
    async fn perform(&self, ctx: &JobContext, args: SendWelcome) -> Result<JobResult, JobError> {
        if args.user_id == 13 && ctx.attempt() == 1 {
            return Err(JobError::new("unlucky"));
        }
        Ok(JobResult::Completed)
    }
}

async fn insert(store: &Arc<dyn Store>, job: crate::NewJob) -> String {
    store.enqueue(job).await.unwrap().job_id().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_jobs_run_with_the_types_defaults_and_the_callers_overrides() {
    let store = store();
    let plain = insert(&store, SendWelcome { user_id: 1 }.job().unwrap()).await;
    let urgent = SendWelcome { user_id: 2 }
        .job_with(EnqueueOptions::new().queue("urgent").max_retries(0))
        .unwrap();
    let urgent = insert(&store, urgent).await;

    let row = job(&store, &plain).await;
    assert_eq!(
        (row.job_name.as_str(), row.queue.as_str()),
        ("send_welcome", "mail")
    );
    assert_eq!((row.max_retries, row.timeout_ms), (2, Some(30_000)));
    assert_eq!(row.args, json!({"user_id": 1}));
    let row = job(&store, &urgent).await;
    assert_eq!((row.queue.as_str(), row.max_retries), ("urgent", 0));
    assert_eq!(row.timeout(), Some(Duration::from_secs(30)));

    let registry = Registry::new().register(Welcomer).unwrap();
    assert_eq!(registry.names(), ["send_welcome"]);
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let done = finished(&mut events, 2).await;
    handle.shutdown_and_join().await.unwrap();
    assert!(done.iter().all(|f| f.outcome == Outcome::Completed));
    for id in [&plain, &urgent] {
        let row = job(&store, id).await;
        assert_eq!((row.status, row.attempts), (JobStatus::Completed, 1));
    }
}

#[tokio::test]
async fn the_types_backoff_spaces_its_retries() {
    let (store, clock) = manual_store();
    let id = insert(&store, SendWelcome { user_id: 13 }.job().unwrap()).await;
    let worker = fast(store.clone(), Registry::new().register(Welcomer).unwrap())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let first = next_finished(&mut events).await;
    assert!(matches!(
        first.outcome,
        Outcome::Failed {
            retry_in_ms: Some(7),
            discard: false,
            ..
        }
    ));
    let row = job(&store, &id).await;
    assert_eq!(row.status, JobStatus::Queued);
    assert_eq!(row.scheduled_at_ms, clock.now_ms() + 7);
    clock.advance(7);
    let second = next_finished(&mut events).await;
    assert_eq!((second.attempt, second.outcome), (2, Outcome::Completed));
    handle.shutdown_and_join().await.unwrap();
}

#[tokio::test]
async fn args_that_no_longer_decode_fail_once_without_retries() {
    let store = store();
    // Written before `user_id` existed (or by a producer with another shape).
    let old = enqueue(
        &store,
        "send_welcome",
        json!({"userId": 42}),
        EnqueueOptions::new().max_retries(5),
    )
    .await;
    let worker = fast(store.clone(), Registry::new().register(Welcomer).unwrap())
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let done = next_finished(&mut events).await;
    handle.shutdown_and_join().await.unwrap();
    assert!(matches!(
        done.outcome,
        Outcome::Failed { discard: true, .. }
    ));
    let row = job(&store, &old).await;
    assert_eq!((row.status, row.attempts), (JobStatus::Failed, 1));
    let error = row.last_error.unwrap();
    assert!(
        error.starts_with(ErrorCode::InvalidArgs.as_str()),
        "{error}"
    );
    assert!(error.contains("send_welcome"), "{error}");
    assert!(error.contains("user_id"), "{error}");
}

#[test]
fn typed_periodic_ticks_carry_the_types_name_args_and_defaults() {
    let every = PeriodicJob::every_job(
        "welcome",
        Duration::from_secs(60),
        &SendWelcome { user_id: 5 },
    )
    .unwrap()
    .options(EnqueueOptions::new().max_retries(9));
    let tick = every.tick_job(120_000).unwrap();
    assert_eq!(tick.job_name().as_str(), "send_welcome");
    assert_eq!(tick.args(), &json!({"user_id": 5}));
    assert_eq!((tick.queue().as_str(), tick.max_retries()), ("mail", 9));
    assert_eq!(
        tick.scheduled_at(),
        Some(UNIX_EPOCH + Duration::from_secs(120))
    );
    let cron = PeriodicJob::cron_job("nightly", "0 3 * * *", &SendWelcome { user_id: 6 }).unwrap();
    assert_eq!(cron.job_name(), "send_welcome");
    assert_eq!(
        cron.tick_job(0).unwrap().timeout(),
        Some(Duration::from_secs(30))
    );
}

#[test]
fn a_types_priority_and_rate_limit_are_defaults_the_caller_overrides() {
    let job = SendWelcome { user_id: 1 }.job().unwrap();
    assert_eq!(job.priority(), 20);
    let limit = job.rate_limit().unwrap();
    assert_eq!(
        (limit.key.as_str(), limit.max, limit.period_ms),
        ("smtp", 10, 1_000)
    );
    let urgent = SendWelcome { user_id: 2 }
        .job_with(EnqueueOptions::new().priority(-1).rate_limit(
            "smtp-eu",
            5,
            Duration::from_secs(2),
        ))
        .unwrap();
    assert_eq!(urgent.priority(), -1);
    assert_eq!(urgent.rate_limit().unwrap().key, "smtp-eu");
}

fn code_of(opts: EnqueueOptions) -> Option<ErrorCode> {
    crate::NewJob::new("j", json!([]), opts)
        .err()
        .map(|e| e.code())
}

#[test]
fn time_builders_map_onto_the_wire_form_and_its_checks() {
    let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    let job = crate::NewJob::new("j", json!([]), EnqueueOptions::new().run_at(at)).unwrap();
    assert_eq!(
        (job.scheduled_at_ms(), job.scheduled_at()),
        (Some(1_700_000_000_123), Some(at))
    );
    let job = crate::NewJob::new(
        "j",
        json!([]),
        EnqueueOptions::new().run_in(Duration::from_secs(600)),
    )
    .unwrap();
    assert_eq!(job.run_in(), Some(Duration::from_secs(600)));
    // The later of run_at/run_in wins; they never combine.
    let opts = EnqueueOptions::new()
        .run_in(Duration::from_secs(1))
        .run_at(at);
    assert_eq!(
        (opts.scheduled_at_ms, opts.run_in_ms),
        (Some(1_700_000_000_123), None)
    );
    // A sub-millisecond timeout rounds up rather than to an invalid zero.
    let opts = EnqueueOptions::new().timeout(Duration::from_micros(1));
    assert_eq!(opts.timeout_ms, Some(1));

    let before_epoch = UNIX_EPOCH - Duration::from_secs(1);
    assert_eq!(
        code_of(EnqueueOptions::new().run_at(before_epoch)),
        Some(ErrorCode::InvalidScheduledAt)
    );
    if let Some(far) = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(u64::MAX / 4)) {
        assert_eq!(
            code_of(EnqueueOptions::new().run_at(far)),
            Some(ErrorCode::InvalidScheduledAt)
        );
    }
    assert_eq!(
        code_of(EnqueueOptions::new().run_in(Duration::MAX)),
        Some(ErrorCode::InvalidScheduledAt)
    );
    assert_eq!(
        code_of(EnqueueOptions::new().run_in(Duration::from_millis(
            crate::limits::MAX_RUN_IN_MS as u64 + 1
        ))),
        Some(ErrorCode::InvalidScheduledAt)
    );
    assert_eq!(
        code_of(EnqueueOptions::new().timeout(Duration::ZERO)),
        Some(ErrorCode::InvalidTimeout)
    );
    assert_eq!(
        code_of(EnqueueOptions::new().timeout(Duration::MAX)),
        Some(ErrorCode::InvalidTimeout)
    );
    assert_eq!(
        code_of(EnqueueOptions::new().concurrency("k", 0)),
        Some(ErrorCode::InvalidConcurrency)
    );
    assert_eq!(code_of(EnqueueOptions::new().max_retries(u32::MAX)), None);
}

#[test]
fn caller_options_override_the_types_defaults_field_by_field() {
    let defaults = EnqueueOptions::new()
        .queue("mail")
        .max_retries(2)
        .run_in(Duration::from_secs(5))
        .concurrency("tenant", 3);
    let caller = EnqueueOptions::new()
        .run_at(UNIX_EPOCH)
        .timeout(Duration::from_secs(1));
    let merged = caller.or_defaults(defaults);
    assert_eq!(merged.queue.as_deref(), Some("mail"));
    assert_eq!(merged.max_retries, Some(2));
    // The run time is one field: the caller's absolute time replaces the delay.
    assert_eq!((merged.scheduled_at_ms, merged.run_in_ms), (Some(0), None));
    assert_eq!(
        (merged.concurrency_key.as_deref(), merged.max_concurrency),
        (Some("tenant"), Some(3))
    );
    assert_eq!(merged.timeout_ms, Some(1_000));
}
