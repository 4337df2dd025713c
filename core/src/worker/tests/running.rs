//! Running and reporting: outcomes, retries, reschedules, timeouts, panics.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::Clock;
use crate::{EnqueueOptions, JobError, JobResult, JobStatus, Outcome, Registry, Worker};

pub(super) fn fast(store: Arc<dyn Store>, registry: Registry) -> crate::worker::WorkerBuilder {
    Worker::builder(store, registry).poll_interval(Duration::from_millis(20))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_complete_and_are_reported() {
    let store = store();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(enqueue(&store, "noop", json!([i]), EnqueueOptions::new()).await);
    }
    let other = enqueue(&store, "not-mine", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .concurrency(4)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let done = finished(&mut events, 25).await;
    assert!(done
        .iter()
        .all(|f| f.accepted && f.outcome == Outcome::Completed && f.attempt == 1));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(
        (report.claimed, report.completed, report.failed),
        (25, 25, 0)
    );
    for id in &ids {
        assert_eq!(job(&store, id).await.status, JobStatus::Completed);
    }
    // A job without a handler here is never claimed.
    assert_eq!(job(&store, &other).await.status, JobStatus::Queued);
}

#[tokio::test]
async fn failures_retry_with_the_default_backoff() {
    let (store, clock) = manual_store();
    let registry = Registry::new()
        .register_fn("flaky", |ctx, _a| async move {
            if ctx.attempt() < 2 {
                return Err(JobError::new(format!("boom {}", ctx.attempt())));
            }
            Ok(JobResult::Completed)
        })
        .unwrap();
    let id = enqueue(&store, "flaky", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();

    let first = next_finished(&mut events).await;
    assert_eq!(
        first.outcome,
        Outcome::Failed {
            error: "boom 1".into(),
            retry_in_ms: None,
            discard: false
        }
    );
    let row = job(&store, &id).await;
    assert_eq!(row.status, JobStatus::Queued);
    assert_eq!(row.last_error.as_deref(), Some("boom 1"));
    assert_eq!(
        row.scheduled_at_ms,
        clock.now_ms() + 10_000,
        "first retry after 10 s"
    );

    clock.advance(10_000); // the worker notices on its next poll
    let second = next_finished(&mut events).await;
    assert_eq!((second.attempt, second.outcome), (2, Outcome::Completed));
    let row = job(&store, &id).await;
    assert_eq!((row.status, row.attempts), (JobStatus::Completed, 2));
    let report = handle.shutdown_and_join().await.unwrap();
    // The failed first attempt was retried: not a failed job.
    assert_eq!((report.retried, report.failed, report.completed), (1, 0, 1));
}

#[tokio::test]
async fn backoff_override_discard_and_bad_args() {
    let store = store();
    let registry = Registry::new()
        .register_fn("retry-fast", |ctx, _a| async move {
            if ctx.attempt() < 3 {
                return Err(JobError::new("again"));
            }
            Ok(())
        })
        .unwrap()
        .backoff("retry-fast", |attempt| {
            Some(Duration::from_millis(u64::from(attempt)))
        })
        .unwrap()
        .register_fn("hopeless", |_c, _a| async {
            Err::<(), _>(JobError::new("no").discard())
        })
        .unwrap()
        .register(TypedEcho)
        .unwrap();
    let fast_id = enqueue(&store, "retry-fast", json!([]), EnqueueOptions::new()).await;
    let hopeless = enqueue(&store, "hopeless", json!([]), EnqueueOptions::new()).await;
    let bad_args = enqueue(
        &store,
        "echo",
        json!("not an object"),
        EnqueueOptions::new(),
    )
    .await;
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let done = finished(&mut events, 5).await; // 3 attempts + 1 + 1
    let handle_report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(handle_report.completed, 1);

    let retries: Vec<_> = done
        .iter()
        .filter(|f| f.job_id == fast_id)
        .map(|f| f.outcome.clone())
        .collect();
    assert_eq!(
        retries[..2],
        [
            Outcome::Failed {
                error: "again".into(),
                retry_in_ms: Some(1),
                discard: false
            },
            Outcome::Failed {
                error: "again".into(),
                retry_in_ms: Some(2),
                discard: false
            },
        ]
    );
    assert_eq!(job(&store, &fast_id).await.status, JobStatus::Completed);
    let row = job(&store, &hopeless).await;
    assert_eq!((row.status, row.attempts), (JobStatus::Failed, 1));
    let row = job(&store, &bad_args).await;
    assert_eq!(row.status, JobStatus::Failed);
    assert!(row.last_error.unwrap().starts_with("invalid-args: echo: "));
}

#[derive(serde::Serialize, serde::Deserialize)]
struct EchoArgs(std::collections::BTreeMap<String, String>);

impl crate::JobArgs for EchoArgs {
    const NAME: &'static str = "echo";
}

struct TypedEcho;

#[crate::async_trait]
impl crate::JobHandler for TypedEcho {
    type Args = EchoArgs;
    async fn perform(
        &self,
        _ctx: &crate::JobContext,
        _args: Self::Args,
    ) -> Result<JobResult, JobError> {
        Ok(JobResult::Completed)
    }
}

#[tokio::test]
async fn reschedule_uses_no_attempt() {
    let (store, clock) = manual_store();
    let registry = Registry::new()
        .register_fn("later", |ctx, _a| async move {
            if ctx.now_ms() < 1_700_000_060_000 {
                return Ok(ctx.reschedule_in(Duration::from_secs(60)));
            }
            Ok(JobResult::Completed)
        })
        .unwrap();
    let id = enqueue(&store, "later", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let first = next_finished(&mut events).await;
    assert_eq!(first.outcome, Outcome::Reschedule { delay_ms: 60_000 });
    let row = job(&store, &id).await;
    assert_eq!(
        (row.status, row.attempts, row.last_error),
        (JobStatus::Queued, 0, None)
    );
    assert_eq!(row.scheduled_at_ms, clock.now_ms() + 60_000);
    clock.advance(60_000);
    let second = next_finished(&mut events).await;
    assert_eq!((second.attempt, second.outcome), (1, Outcome::Completed));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.rescheduled, report.completed), (1, 1));
}

#[tokio::test]
async fn timeouts_fail_the_attempt() {
    let store = store();
    let registry = Registry::new()
        .register_fn("slow", |_c, _a| async {
            tokio::time::sleep(Duration::from_secs(3600)).await; // the behaviour under test
            Ok(())
        })
        .unwrap();
    let own = enqueue(
        &store,
        "slow",
        json!([]),
        EnqueueOptions::new()
            .timeout(Duration::from_millis(30))
            .max_retries(0),
    )
    .await;
    let default = enqueue(
        &store,
        "slow",
        json!([]),
        EnqueueOptions::new().max_retries(0),
    )
    .await;
    let worker = fast(store.clone(), registry)
        .job_timeout(Duration::from_millis(40))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    finished(&mut events, 2).await;
    handle.shutdown_and_join().await.unwrap();
    for (id, ms) in [(own, 30), (default, 40)] {
        let row = job(&store, &id).await;
        assert_eq!(row.status, JobStatus::Failed);
        assert_eq!(
            row.last_error.unwrap(),
            format!("timeout: attempt exceeded {ms} ms")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_is_a_failed_attempt() {
    let store = store();
    let registry = Registry::new()
        .register_fn("fragile", |_c, args| async move {
            if args == json!("boom") {
                panic!("handler exploded");
            }
            Ok(())
        })
        .unwrap();
    let bad = enqueue(
        &store,
        "fragile",
        json!("boom"),
        EnqueueOptions::new().max_retries(0),
    )
    .await;
    let worker = fast(store.clone(), registry)
        .concurrency(1)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    assert!(matches!(
        next_finished(&mut events).await.outcome,
        Outcome::Failed { .. }
    ));
    // The worker lives on and runs the next job.
    let good = enqueue(&store, "fragile", json!("fine"), EnqueueOptions::new()).await;
    assert_eq!(next_finished(&mut events).await.job_id, good);
    handle.shutdown_and_join().await.unwrap();
    let row = job(&store, &bad).await;
    assert_eq!(row.status, JobStatus::Failed);
    assert_eq!(row.last_error.as_deref(), Some("panic: handler exploded"));
    assert_eq!(job(&store, &good).await.status, JobStatus::Completed);
}

/// An error with a cause, as `thiserror`'s `#[source]` makes it.
#[derive(Debug, thiserror::Error)]
#[error("parsing the order id")]
struct BadOrderId(#[source] std::num::ParseIntError);

/// Displays only its context, and its whole chain in the alternate form
/// (`{:#}`), as `anyhow::Error` does.
struct WithContext(&'static str, String);

impl std::fmt::Display for WithContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if f.alternate() {
            write!(f, "{}: {}", self.0, self.1)
        } else {
            f.write_str(self.0)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_error_keeps_its_source_chain_in_last_error() {
    let store = store();
    let registry = Registry::new()
        .register_fn("charge", |_c, args| async move {
            let raw = args["order_id"].as_str().unwrap_or_default().to_owned();
            let _order_id: u64 = raw.parse().map_err(BadOrderId)?;
            Ok::<(), JobError>(())
        })
        .unwrap()
        .register_fn("ship", |_c, args| async move {
            let raw = args["order_id"].as_str().unwrap_or_default();
            let cause = raw.parse::<u64>().unwrap_err().to_string();
            Err::<(), _>(JobError::new(WithContext("parsing the order id", cause)))
        })
        .unwrap();
    let once = || EnqueueOptions::new().max_retries(0);
    let charge = enqueue(&store, "charge", json!({ "order_id": "4x2" }), once()).await;
    let ship = enqueue(&store, "ship", json!({ "order_id": "4x2" }), once()).await;
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    finished(&mut events, 2).await;
    handle.shutdown_and_join().await.unwrap();
    // `?` on a std error keeps its source; `JobError::new` keeps an
    // anyhow-like chain of contexts.
    for id in [&charge, &ship] {
        let row = job(&store, id).await;
        assert_eq!(row.status, JobStatus::Failed);
        assert_eq!(
            row.last_error.as_deref(),
            Some("parsing the order id: invalid digit found in string"),
            "{}",
            row.job_name
        );
    }
}
