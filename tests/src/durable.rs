//! Durable steps and sleeps (`docs/durable.md`). Store level: `record_step`
//! is fenced by the lease, keeps a name's first record and changes no job
//! and no count; a job's records and signals go with it (bulk delete,
//! prune, and an ephemeral job's completion). Through the worker's own attempt path
//! ([`duraq_core::Worker::run_due`] on the case's clock): a step's closure runs once
//! across a sleep and a retry, a sleep uses no retry and frees the slot, and
//! bad step names fail the job with their codes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::driver::StepWrite;
use duraq_core::inspect::{BulkAction, PruneRequest, StepRecord};
use duraq_core::{
    EnqueueOptions, ErrorCode, Job, JobContext, JobError, JobResult, JobStatus, Outcome, Registry,
};
use serde_json::{json, Value};

use crate::harness::{job, lease, Harness};

fn write(job: &Job, name: &str, output: Value) -> StepWrite {
    StepWrite {
        lease: lease(job),
        attempt: job.attempts,
        name: name.to_owned(),
        output,
        keep_completed: job.keep_completed,
    }
}

async fn record(h: &Harness, write: StepWrite) -> Option<StepRecord> {
    h.store.record_step(write).await.expect("record_step")
}

async fn steps(h: &Harness, id: &str) -> Vec<(String, Value)> {
    let records = h.store.job_steps(id).await.expect("job_steps");
    records.into_iter().map(|r| (r.name, r.output)).collect()
}

/// A running job named `name`.
async fn running(h: &Harness, name: &str, opts: EnqueueOptions) -> Job {
    let id = h.insert(job(name, json!([]), opts)).await;
    h.claim_id(&format!("w-{name}"), name, &id).await
}

pub async fn a_step_record_is_fenced_and_keeps_its_first_output(h: &Harness) {
    let j = running(h, "d-fence", EnqueueOptions::new()).await;
    assert_eq!(steps(h, &j.id).await, [], "nothing recorded yet");
    let before = h.state().await;
    let mut stale = write(&j, "charge", json!("x"));
    stale.lease.handoff_id = "not-the-lease".into();
    assert_eq!(
        record(h, stale).await,
        None,
        "a stale lease records nothing"
    );
    h.advance(3);
    let first = record(h, write(&j, "charge", json!({"id": "ch_1", "n": 1.50})))
        .await
        .expect("the holder records");
    assert_eq!(
        (first.name.as_str(), first.at_ms, first.attempt),
        ("charge", h.now(), 1)
    );
    let again = record(h, write(&j, "charge", json!("other"))).await;
    assert_eq!(again.map(|r| r.output), Some(first.output.clone()));
    h.assert_unchanged(&before, "record_step").await;
    assert_eq!(
        steps(h, &j.id).await,
        [("charge".to_owned(), first.output.clone())]
    );
    assert!(h.report(&j, Outcome::Completed).await);
    assert_eq!(record(h, write(&j, "late", json!(1))).await, None);
    let missing = Job {
        id: "no-such-job".into(),
        ..j.clone()
    };
    assert_eq!(record(h, write(&missing, "x", json!(1))).await, None);
    assert_eq!(steps(h, "no-such-job").await, []);
}

pub async fn a_jobs_steps_go_with_the_job(h: &Harness) {
    let kept = running(h, "d-kept", EnqueueOptions::new()).await;
    let deleted = running(h, "d-deleted", EnqueueOptions::new()).await;
    let ephemeral = running(h, "d-eph", EnqueueOptions::new().keep_completed(false)).await;
    let signals = |id: String| async move { h.store.job_signals(&id).await.unwrap().len() };
    for j in [&kept, &deleted, &ephemeral] {
        assert!(record(h, write(j, "s", json!(j.id))).await.is_some());
        h.store.signal(&j.id, "go", json!(1)).await.unwrap();
        assert!(h.report(j, Outcome::Completed).await);
    }
    assert_eq!(steps(h, &ephemeral.id).await, [], "deleted as it completed");
    assert_eq!(signals(ephemeral.id.clone()).await, 0);
    // Ephemeral jobs with only a signal and only a step, completed with one
    // that has neither (one batch of completions).
    let opts = || EnqueueOptions::new().keep_completed(false);
    let (signalled, stepped, plain) = (
        running(h, "d-eph2", opts()).await,
        running(h, "d-eph3", opts()).await,
        running(h, "d-eph4", opts()).await,
    );
    h.store.signal(&signalled.id, "go", json!(2)).await.unwrap();
    assert!(record(h, write(&stepped, "s", json!(3))).await.is_some());
    let three = [&signalled, &stepped, &plain].map(|j| (lease(j), Outcome::Completed));
    let reported = h.store.report_batch(three.to_vec()).await.unwrap();
    assert_eq!(reported, [true, true, true]);
    assert_eq!(
        signals(signalled.id.clone()).await,
        0,
        "deleted as it completed"
    );
    assert_eq!(steps(h, &stepped.id).await, [], "deleted as it completed");
    let batch = h
        .store
        .act_on_jobs(BulkAction::Delete, std::slice::from_ref(&deleted.id))
        .await
        .unwrap();
    assert_eq!(batch.changed, 1);
    assert_eq!(steps(h, &deleted.id).await, [], "deleted with its job");
    assert_eq!(signals(deleted.id.clone()).await, 0);
    assert_eq!(steps(h, &kept.id).await.len(), 1);
    assert_eq!(signals(kept.id.clone()).await, 1);
    h.advance(10);
    let prune = PruneRequest {
        completed_older_than: Some(Duration::from_millis(5)),
        failed_older_than: None,
        cancelled_older_than: None,
        batch_size: 100,
    };
    assert_eq!(h.store.prune(&prune).await.unwrap().deleted, 1);
    assert_eq!(steps(h, &kept.id).await, [], "pruned with its job");
    assert_eq!(signals(kept.id.clone()).await, 0);
}

/// How often each closure ran, counted outside the store.
#[derive(Default)]
struct Ran {
    charge: AtomicUsize,
    ship: AtomicUsize,
    failed_once: AtomicUsize,
}

pub async fn a_step_runs_once_across_a_sleep_and_a_retry(h: &Harness) {
    let ran = Arc::new(Ran::default());
    let seen = ran.clone();
    let registry = Registry::new()
        .register_fn("order", move |ctx: JobContext, _args| {
            let ran = seen.clone();
            async move {
                let charged: i64 = ctx
                    .step("charge", || async {
                        ran.charge.fetch_add(1, Ordering::SeqCst);
                        Ok(7)
                    })
                    .await?;
                ctx.sleep(Duration::from_secs(60)).await?;
                let shipped: i64 = ctx
                    .step("ship", || async {
                        ran.ship.fetch_add(1, Ordering::SeqCst);
                        Ok(charged * 2)
                    })
                    .await?;
                if ran.failed_once.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(JobError::new("flaky").retry_in(Duration::ZERO));
                }
                JobResult::output(&shipped)
            }
        })
        .unwrap();
    let w = h.worker(registry);
    let id = h
        .enqueue_with("order", json!([]), EnqueueOptions::new().max_retries(3))
        .await
        .job_id()
        .to_owned();
    let first = w.run_due(10).await.unwrap();
    assert_eq!(first.totals.rescheduled, 1, "the sleep ended the attempt");
    let slept = h.get(&id).await;
    assert_eq!(
        (slept.status, slept.attempts, slept.last_error.as_deref()),
        (JobStatus::Queued, 0, None),
        "no retry used, no error"
    );
    assert_eq!(slept.scheduled_at_ms, h.now() + 60_000);
    assert_eq!(w.run_due(10).await.unwrap().totals.claimed, 0, "asleep");
    h.advance(60_000);
    let second = w.run_due(10).await.unwrap();
    assert_eq!(second.totals.retried, 1);
    let third = w.run_due(10).await.unwrap();
    assert_eq!(third.totals.completed, 1);
    let done = h.get(&id).await;
    assert_eq!(
        (done.status, done.output),
        (JobStatus::Completed, Some(json!(14)))
    );
    assert_eq!(
        (
            ran.charge.load(Ordering::SeqCst),
            ran.ship.load(Ordering::SeqCst)
        ),
        (1, 1),
        "each closure ran once"
    );
    let names: Vec<String> = steps(h, &id).await.into_iter().map(|s| s.0).collect();
    assert_eq!(names, ["charge", "duraq.sleep.1", "ship"]);
    let records = h.store.job_steps(&id).await.unwrap();
    assert_eq!(records[1].output, json!({"untilMs": slept.scheduled_at_ms}));
}

pub async fn bad_step_names_fail_the_job_with_their_codes(h: &Harness) {
    let codes: Arc<Mutex<Vec<Option<ErrorCode>>>> = Arc::default();
    let seen = codes.clone();
    let registry = Registry::new()
        .register_fn("twice", move |ctx: JobContext, args: Value| {
            let seen = seen.clone();
            async move {
                let name = args[0].as_str().unwrap_or_default().to_owned();
                let first = ctx.step(&name, || async { Ok(1) }).await;
                let second: Result<i64, JobError> = ctx.step(&name, || async { Ok(2) }).await;
                let err = first.and(second).unwrap_err();
                seen.lock().unwrap().push(err.code());
                Err::<(), _>(err)
            }
        })
        .unwrap();
    let w = h.worker(registry);
    let opts = || EnqueueOptions::new().max_retries(5);
    let twice = h.enqueue_with("twice", json!(["a"]), opts()).await;
    let twice_id = twice.job_id().to_owned();
    let reserved = h
        .enqueue_with("twice", json!(["duraq.sleep.1"]), opts())
        .await;
    assert_eq!(w.run_due(10).await.unwrap().totals.failed, 2, "no retry");
    let mut codes = codes.lock().unwrap().clone();
    codes.sort_by_key(|c| c.map(|c| c.as_str()));
    assert_eq!(
        codes,
        [
            Some(ErrorCode::DuplicateStep),
            Some(ErrorCode::InvalidStepName)
        ]
    );
    for (outcome, code) in [(twice, "duplicate-step"), (reserved, "invalid-step-name")] {
        let failed = h.get(outcome.job_id()).await;
        assert_eq!(failed.status, JobStatus::Failed);
        let error = failed.last_error.unwrap_or_default();
        assert_eq!(error.split(':').next(), Some(code));
    }
    let kept = steps(h, &twice_id).await;
    assert_eq!(kept, [("a".to_owned(), json!(1))], "the first use ran");
}
