//! Signals (`docs/durable.md`). Store level: a signal is kept once per job
//! and name (the same payload replays, even once the job has finished;
//! another is `signal-conflict`), a finished job takes no new one
//! (`job-finished`), no job is `job-not-found`, bad
//! input is `invalid-signal`, and a refused delivery changes nothing; a wait
//! reported after its signal arrived runs again at once. Through the
//! worker's attempt path ([`Worker::run_due`] on the case's clock): a wait
//! leaves the job `pending` with no slot and no retry until the signal wakes
//! it; a signal sent before the wait is read at once; a wait that times out
//! stays timed out.

use std::time::Duration;

use duraq_core::inspect::SignalRecord;
use duraq_core::{
    EnqueueOptions, ErrorCode, JobContext, JobResult, JobStatus, Outcome, Registry, Signalled,
    Worker,
};
use serde_json::{json, Value};

use crate::harness::{expect_conflict, expect_invalid, expect_not_found, Harness};

async fn signal(
    h: &Harness,
    id: &str,
    name: &str,
    payload: Value,
) -> duraq_core::Result<Signalled> {
    h.store.signal(id, name, payload).await
}

async fn signals(h: &Harness, id: &str) -> Vec<(String, Value)> {
    let all: Vec<SignalRecord> = h.store.job_signals(id).await.expect("job_signals");
    all.into_iter().map(|s| (s.name, s.payload)).collect()
}

const DELIVERED: Signalled = Signalled {
    replayed: false,
    woke: false,
};

pub async fn a_signal_is_kept_once_per_job_and_name(h: &Harness) {
    let id = h.enqueue("s-once", json!([])).await;
    assert_eq!(
        signal(h, &id, "shipped", json!({"t": "1Z"})).await.unwrap(),
        DELIVERED
    );
    let before = h.state().await;
    let again = signal(h, &id, "shipped", json!({"t": "1Z"})).await.unwrap();
    assert_eq!(
        again,
        Signalled {
            replayed: true,
            woke: false
        }
    );
    expect_conflict(
        signal(h, &id, "shipped", json!({"t": "2Z"})).await,
        ErrorCode::SignalConflict,
    );
    expect_not_found(
        signal(h, "no-such-job", "shipped", json!(1)).await,
        ErrorCode::JobNotFound,
    );
    expect_invalid(signal(h, &id, "", json!(1)).await, ErrorCode::InvalidSignal);
    expect_invalid(
        signal(h, &id, "a\u{7}b", json!(1)).await,
        ErrorCode::InvalidSignal,
    );
    let big = json!("x".repeat(duraq_core::limits::MAX_OUTPUT_BYTES));
    expect_invalid(signal(h, &id, "big", big).await, ErrorCode::InvalidSignal);
    h.assert_unchanged(&before, "refused or replayed signals")
        .await;
    assert_eq!(
        signals(h, &id).await,
        [("shipped".to_owned(), json!({"t": "1Z"}))]
    );
    assert_eq!(
        signal(h, &id, "paid", json!(null)).await.unwrap(),
        DELIVERED
    );
    assert_eq!(signals(h, &id).await.len(), 2);
    let done = h.drive_to(&id, "s-once", JobStatus::Completed).await;
    expect_conflict(
        signal(h, &done.id, "late", json!(1)).await,
        ErrorCode::JobFinished,
    );
    assert_eq!(signals(h, &id).await.len(), 2);
}

pub async fn a_wait_reported_after_its_signal_arrived_runs_again(h: &Harness) {
    let id = h.enqueue("s-race", json!([])).await;
    let running = h.claim_id("w", "s-race", &id).await;
    // Delivered while the attempt runs, before it reports its wait.
    assert_eq!(signal(h, &id, "go", json!(1)).await.unwrap(), DELIVERED);
    let wait = Outcome::AwaitSignal {
        name: "go".into(),
        until_ms: h.now() + 60_000,
    };
    assert!(h.report(&running, wait).await);
    let job = h.get(&id).await;
    assert_eq!(
        (
            job.status,
            job.scheduled_at_ms,
            job.awaiting_signal,
            job.attempts
        ),
        (JobStatus::Queued, h.now(), None, 0)
    );
    // A wait for another signal pends; its signal wakes it.
    let running = h.claim_id("w", "s-race", &id).await;
    let wait = Outcome::AwaitSignal {
        name: "later".into(),
        until_ms: h.now() + 60_000,
    };
    assert!(h.report(&running, wait).await);
    let job = h.get(&id).await;
    assert_eq!(
        (job.status, job.awaiting_signal.as_deref()),
        (JobStatus::Pending, Some("later"))
    );
    assert_eq!(h.snapshot().await.counts.pending, 1);
    h.advance(5);
    let woke = signal(h, &id, "later", json!(2)).await.unwrap();
    assert_eq!(
        woke,
        Signalled {
            replayed: false,
            woke: true
        }
    );
    let job = h.get(&id).await;
    assert_eq!(
        (job.status, job.scheduled_at_ms, job.awaiting_signal),
        (JobStatus::Queued, h.now(), None)
    );
    assert_eq!(h.snapshot().await.counts.pending, 0);
}

/// A worker on the case's store and clock whose `ship` handler waits for
/// `shipped` (a 1-hour timeout) and completes with its payload, or with
/// `"timed out"`.
fn shipper(h: &Harness) -> Worker {
    let registry = Registry::new()
        .register_fn("ship", |ctx: JobContext, _args| async move {
            let hour = Duration::from_secs(3_600);
            match ctx.wait_for_signal::<Value>("shipped", hour).await? {
                Some(payload) => JobResult::output(&payload),
                None => JobResult::output(&"timed out"),
            }
        })
        .unwrap();
    h.worker(registry)
}

pub async fn a_wait_pends_until_its_signal_wakes_it(h: &Harness) {
    let w = shipper(h);
    let id = h
        .enqueue_with("ship", json!([]), EnqueueOptions::new())
        .await;
    let id = id.job_id().to_owned();
    assert_eq!(w.run_due(10).await.unwrap().totals.rescheduled, 1);
    let waiting = h.get(&id).await;
    assert_eq!(
        (
            waiting.status,
            waiting.attempts,
            waiting.awaiting_signal.as_deref()
        ),
        (JobStatus::Pending, 0, Some("shipped"))
    );
    assert_eq!(waiting.scheduled_at_ms, h.now() + 3_600_000, "the timeout");
    assert_eq!(
        w.run_due(10).await.unwrap().totals.claimed,
        0,
        "not claimable"
    );
    h.advance(1_000);
    let woke = signal(h, &id, "shipped", json!({"t": "1Z"})).await.unwrap();
    assert!(woke.woke);
    assert_eq!(w.run_due(10).await.unwrap().totals.completed, 1);
    let done = h.get(&id).await;
    assert_eq!(
        (done.status, done.output, done.last_error),
        (JobStatus::Completed, Some(json!({"t": "1Z"})), None)
    );
    let steps: Vec<String> = (h.store.job_steps(&id).await.unwrap())
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(steps, ["duraq.wait.shipped", "duraq.signal.shipped"]);
}

pub async fn a_signal_sent_before_the_wait_is_read_at_once(h: &Harness) {
    let w = shipper(h);
    let id = h.enqueue("ship", json!([])).await;
    assert_eq!(
        signal(h, &id, "shipped", json!(7)).await.unwrap(),
        DELIVERED
    );
    let round = w.run_due(10).await.unwrap();
    assert_eq!((round.totals.claimed, round.totals.completed), (1, 1));
    assert_eq!(h.get(&id).await.output, Some(json!(7)));
}

pub async fn a_wait_that_timed_out_stays_timed_out(h: &Harness) {
    let w = shipper(h);
    let id = h.enqueue("ship", json!([])).await;
    assert_eq!(w.run_due(10).await.unwrap().totals.rescheduled, 1);
    h.advance(3_600_000 - 1);
    assert_eq!(
        h.store.end_timed_out_waits(10).await.unwrap(),
        Vec::<String>::new()
    );
    h.advance(1);
    // The round ends the wait whose time is up, then runs the job.
    assert_eq!(w.run_due(10).await.unwrap().totals.completed, 1);
    let done = h.get(&id).await;
    assert_eq!(
        (done.status, done.output, done.attempts),
        (JobStatus::Completed, Some(json!("timed out")), 1)
    );
    expect_conflict(
        signal(h, &id, "shipped", json!(1)).await,
        ErrorCode::JobFinished,
    );
}
