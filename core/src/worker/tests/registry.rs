//! Registration rules and builder validation.

use std::time::Duration;

use crate::async_trait;
use serde::{Deserialize, Serialize};

use super::store;
use crate::{
    ErrorCode, JobArgs, JobContext, JobError, JobHandler, JobResult, QueueConfig, Registry, Worker,
};

#[derive(Serialize, Deserialize)]
struct Greet {
    name: String,
}

impl JobArgs for Greet {
    const NAME: &'static str = "greet";
}

struct GreetJob;

#[async_trait]
impl JobHandler for GreetJob {
    type Args = Greet;
    async fn perform(&self, _ctx: &JobContext, args: Greet) -> Result<JobResult, JobError> {
        if args.name.is_empty() {
            return Err(JobError::new("empty name"));
        }
        Ok(JobResult::Completed)
    }
    fn backoff(&self, attempt: u32) -> Option<Duration> {
        Some(Duration::from_millis(u64::from(attempt)))
    }
}

#[test]
fn duplicate_names_are_refused() {
    let registry = Registry::new().register(GreetJob).unwrap();
    let err = registry.clone().register(GreetJob).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DuplicateHandler);
    assert!(matches!(err, crate::WorkerError::DuplicateHandler(ref n) if n == "greet"));
    // The untyped forms share the namespace, and names are compared trimmed.
    let err = registry
        .clone()
        .register_fn(" greet ", |_c, _a| async { Ok(()) })
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::DuplicateHandler);
    let ok = registry
        .register_fn("other", |_c, _a| async { Ok(()) })
        .unwrap();
    assert_eq!(ok.names(), ["greet", "other"]);
    assert!(ok.contains("other"));
}

#[test]
fn bad_names_and_unknown_backoff_targets_are_refused() {
    let err = Registry::new()
        .register_fn("  ", |_c, _a| async { Ok(()) })
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidJobName);
    let err = Registry::new().backoff("missing", |_| None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidWorkerConfig);
}

#[test]
fn backoff_override_wins_over_the_handlers_own() {
    let registry = Registry::new().register(GreetJob).unwrap();
    assert_eq!(
        registry.get("greet").unwrap().backoff(3),
        Some(Duration::from_millis(3))
    );
    let registry = registry
        .backoff("greet", |_| Some(Duration::from_secs(1)))
        .unwrap();
    assert_eq!(
        registry.get("greet").unwrap().backoff(3),
        Some(Duration::from_secs(1))
    );
}

#[test]
fn builder_rejects_impossible_settings() {
    let cases: Vec<Box<dyn Fn(crate::worker::WorkerBuilder) -> crate::worker::WorkerBuilder>> = vec![
        Box::new(|b| b.concurrency(0)),
        Box::new(|b| {
            b.stale_after(Duration::from_secs(1))
                .heartbeat_interval(Duration::from_secs(2))
        }),
        Box::new(|b| b.poll_interval(Duration::ZERO)),
        Box::new(|b| {
            b.queue(
                "mail",
                QueueConfig {
                    max_concurrent: Some(0),
                    priority: 0,
                },
            )
        }),
        Box::new(|b| b.worker_id(" ")),
    ];
    for (i, case) in cases.iter().enumerate() {
        let err = case(Worker::builder(store(), Registry::new()))
            .build()
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidWorkerConfig, "case {i}");
    }
    let worker = Worker::builder(store(), Registry::new()).build().unwrap();
    assert_eq!(worker.concurrency(), crate::worker::DEFAULT_CONCURRENCY);
    assert_eq!(worker.id().len(), 36, "a UUID");
}
