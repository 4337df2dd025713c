//! Inline mode: an enqueue through the kit's store runs the new due job
//! before it returns. Each case runs on `MemoryStore` and on a temporary
//! SQLite file (`both!`, in `jobs/mod.rs`).

#[macro_use]
mod jobs;

use duraq_core::{JobArgs, JobStatus, Outcome};
use jobs::{kit, seen, Flaky, MakeKit, SendWelcome, SignUp, FLAKY_BACKOFF};

/// Inline mode: the enqueue has run the handler by the time it returns.
async fn inline_runs_before_the_enqueue_returns(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    kit.inline();
    let outcome = kit
        .store()
        .enqueue(SendWelcome { user_id: 5 }.job().unwrap())
        .await
        .unwrap();
    assert_eq!(seen(&seen_by), [("send_welcome", 5, 1)]);
    let job = kit.job(outcome.job_id()).await.unwrap();
    assert_eq!(job.status, JobStatus::Completed);
    assert_eq!(kit.attempts()[0].job_id, job.id);
    kit.assert_not_enqueued::<SendWelcome>().await;
    // Back to collecting: the next enqueue waits.
    kit.collect();
    kit.enqueue(SendWelcome { user_id: 6 }).await.unwrap();
    assert_eq!(seen(&seen_by).len(), 1);
    kit.assert_enqueued::<SendWelcome>(|a| a.user_id == 6).await;
}

/// A failing job in inline mode: the enqueue succeeds, and the row holds the
/// real outcome (a retry with the type's backoff, or a discard).
async fn inline_failure_is_the_real_outcome(make: MakeKit) {
    let (kit, _seen) = kit(make);
    kit.inline();
    let flaky = kit.enqueue(Flaky { fails: 10 }).await.unwrap();
    let job = kit.job(&flaky).await.unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Queued, 1));
    assert!(job.last_error.is_some());
    let backoff_ms = FLAKY_BACKOFF.as_millis() as i64;
    assert_eq!(
        job.scheduled_at_ms,
        duraq_core::Clock::now_ms(kit.clock()) + backoff_ms
    );
    assert!(matches!(
        kit.attempts()[0].outcome,
        Outcome::Failed { discard: false, .. }
    ));

    let nobody = kit.enqueue(SendWelcome { user_id: 0 }).await.unwrap();
    let job = kit.job(&nobody).await.unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Failed, 1));
}

/// Inline mode reaches jobs a handler enqueues through `ctx.store()`.
async fn inline_runs_jobs_enqueued_by_handlers(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    kit.inline();
    kit.enqueue(SignUp { user_id: 8 }).await.unwrap();
    assert_eq!(seen(&seen_by), [("sign_up", 8, 1), ("send_welcome", 8, 1)]);
    kit.assert_not_enqueued::<SendWelcome>().await;
}

/// Inline mode covers batches and schedule-key replacements, job by job.
async fn inline_runs_batches_and_replacements(make: MakeKit) {
    let (kit, seen_by) = kit(make);
    kit.inline();
    let batch = vec![
        SendWelcome { user_id: 1 }.job().unwrap(),
        SendWelcome { user_id: 2 }.job().unwrap(),
    ];
    kit.store().enqueue_batch(batch).await.unwrap();
    let key = duraq_core::ScheduleKey::new("user:3:welcome").unwrap();
    let job = SendWelcome { user_id: 3 }.job().unwrap();
    let replaced = kit
        .store()
        .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    let users: Vec<i64> = seen(&seen_by).iter().map(|s| s.1).collect();
    assert_eq!(users, [1, 2, 3]);
    let job = kit.job(&replaced.job_id).await.unwrap();
    assert_eq!(job.status, JobStatus::Completed);
}

both!(
    inline_runs_before_the_enqueue_returns,
    inline_failure_is_the_real_outcome,
    inline_runs_jobs_enqueued_by_handlers,
    inline_runs_batches_and_replacements,
);
