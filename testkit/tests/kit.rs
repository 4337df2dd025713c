//! The kit's collecting mode, drains, time and `perform`, each case written
//! once over a kit constructor and run on `MemoryStore` and on a temporary
//! SQLite file (`both!`, in `jobs/mod.rs`). Inline mode: `inline.rs`.

#[macro_use]
mod jobs;

use std::sync::Arc;
use std::time::Duration;

use duraq_core::{EnqueueOptions, JobArgs, JobStatus, NewJob, Outcome, Registry};
use duraq_testkit::{TestKit, TestKitBuilder};
use jobs::{kit, seen, Explode, Flaky, Forever, MakeKit, SendWelcome, Unhandled, FLAKY_BACKOFF};

/// Collecting mode: the application's enqueues are stored, typed, in order,
/// and nothing runs until a drain.
async fn collecting_stores_and_runs_nothing(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    let store = kit.store();
    for user_id in [3, 1, 2] {
        store
            .enqueue(SendWelcome { user_id }.job().unwrap())
            .await
            .unwrap();
    }
    let ids: Vec<i64> = kit
        .enqueued::<SendWelcome>()
        .await
        .unwrap()
        .iter()
        .map(|a| a.user_id)
        .collect();
    assert_eq!(ids, [3, 1, 2]);
    kit.assert_enqueued::<SendWelcome>(|a| a.user_id == 1).await;
    kit.assert_enqueued_job::<SendWelcome>(|e| e.job.queue == "mail" && e.job.attempts == 0)
        .await;
    kit.assert_not_enqueued::<Flaky>().await;
    assert!(seen(&seen_by).is_empty(), "collecting mode ran a handler");
    assert!(kit.attempts().is_empty());
}

/// `drain` runs every due job through the handlers and leaves none queued.
async fn drain_runs_every_due_job(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    let a = kit.enqueue(SendWelcome { user_id: 1 }).await.unwrap();
    kit.enqueue(SendWelcome { user_id: 2 }).await.unwrap();
    let report = kit.drain().await.unwrap();
    assert_eq!(
        (
            report.completed,
            report.retried,
            report.failed,
            report.ran()
        ),
        (1 + 1, 0, 0, 2)
    );
    assert_eq!(
        seen(&seen_by),
        [("send_welcome", 1, 1), ("send_welcome", 2, 1)]
    );
    assert_eq!(kit.job(&a).await.unwrap().status, JobStatus::Completed);
    kit.assert_not_enqueued::<SendWelcome>().await;
    assert_eq!(
        kit.drain().await.unwrap().ran(),
        0,
        "a second drain finds nothing"
    );
}

/// A job that snoozes by zero forever: the drain gives up with its code.
async fn a_drain_that_never_settles_fails(make: MakeKit) {
    let (kit, _seen) = kit(make);
    kit.enqueue(Forever).await.unwrap();
    let err = kit.drain().await.unwrap_err();
    assert_eq!(err.code(), "drain-unsettled");
}

/// `advance` moves the clock: a job scheduled in an hour runs only then.
async fn advance_makes_a_scheduled_job_due(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    kit.inline();
    let later = SendWelcome { user_id: 9 }
        .job_with(EnqueueOptions::new().run_in(Duration::from_secs(3600)));
    kit.store().enqueue(later.unwrap()).await.unwrap();
    assert!(
        seen(&seen_by).is_empty(),
        "inline ran a job scheduled for later"
    );
    kit.advance(Duration::from_secs(3599));
    assert_eq!(kit.drain().await.unwrap().ran(), 0);
    kit.advance(Duration::from_secs(1));
    assert_eq!(kit.drain().await.unwrap().completed, 1);
    assert_eq!(seen(&seen_by), [("send_welcome", 9, 1)]);
}

/// A retry waits for its backoff: each drain runs one attempt, `advance`
/// between them; `drain_scheduled` moves the clock itself.
async fn drain_with_retries(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    let id = kit.enqueue(Flaky { fails: 2 }).await.unwrap();
    let first = kit.drain().await.unwrap();
    assert_eq!((first.retried, first.completed), (1, 0));
    assert_eq!(
        kit.drain().await.unwrap().ran(),
        0,
        "the retry is not due yet"
    );
    kit.advance(FLAKY_BACKOFF);
    assert_eq!(kit.drain().await.unwrap().retried, 1);
    kit.advance(FLAKY_BACKOFF);
    assert_eq!(kit.drain().await.unwrap().completed, 1);
    let attempts: Vec<u32> = seen(&seen_by).iter().map(|s| s.2).collect();
    assert_eq!(attempts, [1, 2, 3]);
    assert_eq!(kit.job(&id).await.unwrap().status, JobStatus::Completed);

    let id = kit.enqueue(Flaky { fails: 3 }).await.unwrap();
    let report = kit.drain_scheduled().await.unwrap();
    assert_eq!((report.retried, report.completed, report.failed), (3, 1, 0));
    assert_eq!(report.advanced, FLAKY_BACKOFF * 3);
    assert_eq!(kit.job(&id).await.unwrap().attempts, 4);
}

/// `perform` runs one job in either mode and answers its attempt.
async fn perform_runs_one_job(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    let done = kit.perform(SendWelcome { user_id: 4 }).await.unwrap();
    assert_eq!((done.outcome, done.attempt), (Outcome::Completed, 1));
    let failed = kit.perform(Flaky { fails: 1 }).await.unwrap();
    assert!(matches!(
        failed.outcome,
        Outcome::Failed { discard: false, .. }
    ));
    let panicked = kit.perform(Explode).await.unwrap();
    assert!(matches!(panicked.outcome, Outcome::Failed { .. }));
    assert_eq!(
        kit.job(&panicked.job_id).await.unwrap().status,
        JobStatus::Failed
    );
    assert_eq!(seen(&seen_by).len(), 2);

    let err = kit.perform(Unhandled).await.unwrap_err();
    assert_eq!(err.code(), "job-not-run");
}

/// Rows that no longer decode into the type: `enqueued` says `invalid-args`,
/// and a drain fails the job without retries, as a worker would.
async fn undecodable_args_are_invalid_args(make: MakeKit) {
    let (kit, _seen) = kit(make);
    let stale = NewJob::new(
        SendWelcome::NAME,
        serde_json::json!({"user": 1}),
        EnqueueOptions::new(),
    );
    let id = kit
        .store()
        .enqueue(stale.unwrap())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let err = kit.enqueued::<SendWelcome>().await.unwrap_err();
    assert_eq!(err.code(), "invalid-args");
    assert_eq!(kit.drain().await.unwrap().failed, 1);
    let job = kit.job(&id).await.unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Failed, 1));
    assert!(job.last_error.unwrap().starts_with("invalid-args:"));
}

/// The assertions panic, and their message shows what was enqueued.
async fn failed_assertions_list_what_was_enqueued(make: MakeKit) {
    let (kit, _seen) = kit(make);
    kit.enqueue(SendWelcome { user_id: 77 }).await.unwrap();
    kit.enqueue(Flaky { fails: 0 }).await.unwrap();
    let kit = Arc::new(kit);
    let k = kit.clone();
    let message =
        panic_of(async move { k.assert_enqueued::<SendWelcome>(|a| a.user_id == 78).await }).await;
    assert!(message.contains(r#"{"user_id":77}"#), "{message}");
    assert!(message.contains("queue=mail"), "{message}");
    assert!(message.contains("flaky ×1"), "{message}");
    let k = kit.clone();
    let message = panic_of(async move { k.assert_not_enqueued::<Flaky>().await }).await;
    assert!(message.contains(r#"{"fails":0}"#), "{message}");
    // A failed assertion points at the test's line, not at the kit's.
    let k = kit.clone();
    let line = line!() + 2;
    let message = panic_of(async move {
        k.assert_enqueued_job::<SendWelcome>(|e| e.args.user_id == 78)
            .await
    })
    .await;
    let at = format!("{}:{line}:", file!());
    assert!(message.starts_with(&at), "{at} in {message}");
}

/// Runs `f` on a task of its own; the text it panicked with.
async fn panic_of(f: impl std::future::Future<Output = ()> + Send + 'static) -> String {
    let err = tokio::spawn(f).await.expect_err("the assertion passed");
    let payload = err.into_panic();
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// A kit whose worker serves only `mail` runs only `mail`'s jobs, and
/// `drain_scheduled` does not move the clock for another queue's job.
async fn a_worker_serving_some_queues_leaves_the_others(build: BuildKit) {
    let seen_by = jobs::Seen::default();
    let builder = TestKit::builder(jobs::registry(&seen_by)).worker(|w| w.queues(["mail"]));
    let kit = build(builder).unwrap();
    let later = EnqueueOptions::new().run_in(Duration::from_secs(60));
    let flaky = kit
        .store()
        .enqueue(Flaky { fails: 0 }.job_with(later).unwrap())
        .await
        .unwrap();
    kit.enqueue(SendWelcome { user_id: 1 }).await.unwrap();
    let report = kit.drain_scheduled().await.unwrap();
    assert_eq!((report.completed, report.advanced), (1, Duration::ZERO));
    assert_eq!(seen(&seen_by), [("send_welcome", 1, 1)]);
    let err = kit.perform(Flaky { fails: 0 }).await.unwrap_err();
    assert_eq!(err.code(), "job-not-run");
    assert_eq!(
        kit.job(flaky.job_id()).await.unwrap().status,
        JobStatus::Queued
    );
}

/// A builder's store: `TestKitBuilder::memory` or `sqlite_temp`.
type BuildKit = fn(TestKitBuilder) -> Result<TestKit, duraq_testkit::Error>;

#[tokio::test]
async fn memory_worker_serving_some_queues() {
    a_worker_serving_some_queues_leaves_the_others(TestKitBuilder::memory).await;
}

#[tokio::test]
async fn sqlite_worker_serving_some_queues() {
    a_worker_serving_some_queues_leaves_the_others(TestKitBuilder::sqlite_temp).await;
}

/// A registry the kit's builder refuses: the worker's own error and code.
#[test]
fn a_bad_worker_configuration_is_refused() {
    let registry = Registry::new();
    let err = TestKit::builder(registry)
        .worker(|w| w.concurrency(0))
        .memory()
        .unwrap_err();
    assert_eq!(err.code(), "invalid-worker-config");
}

both!(
    collecting_stores_and_runs_nothing,
    drain_runs_every_due_job,
    a_drain_that_never_settles_fails,
    advance_makes_a_scheduled_job_due,
    drain_with_retries,
    perform_runs_one_job,
    undecodable_args_are_invalid_args,
    failed_assertions_list_what_was_enqueued,
);
