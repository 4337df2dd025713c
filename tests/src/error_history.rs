//! The error history (`docs/retries.md`): every failed attempt (a failed
//! report, retry or terminal, and a recovered lease) appends `{attempt, atMs,
//! error, workerId}` to the job's `errors`, newest 20 kept; reschedules,
//! returns to the queue, stale reports and operator actions append nothing.

use duraq_core::{AttemptError, EnqueueOptions, JobStatus, Outcome};
use serde_json::json;

use crate::harness::Harness;

fn entry(attempt: i64, at_ms: i64, error: &str, worker: &str) -> AttemptError {
    AttemptError {
        attempt,
        at_ms,
        error: error.to_owned(),
        worker_id: Some(worker.to_owned()),
    }
}

/// A failure retried at once (so the next claim needs no clock jump).
fn fail_now(error: String) -> Outcome {
    Outcome::Failed {
        error,
        retry_in_ms: Some(0),
        discard: false,
    }
}

async fn enqueue_retrying(h: &Harness, max_retries: u32) -> String {
    h.enqueue_with(
        "j",
        json!([]),
        EnqueueOptions::new().max_retries(max_retries),
    )
    .await
    .job_id()
    .to_owned()
}

pub async fn failed_attempts_are_listed_in_order(h: &Harness) {
    let id = enqueue_retrying(h, 3).await;
    assert_eq!(h.get(&id).await.errors, [], "a fresh job has no history");
    let mut expected = Vec::new();
    for n in 1..=3 {
        let worker = format!("w{n}");
        let claimed = h.claim_id(&worker, "j", &id).await;
        h.advance(100 * n);
        assert!(
            h.report(&claimed, Outcome::failed(format!("fail {n}")))
                .await
        );
        expected.push(entry(n, h.now(), &format!("fail {n}"), &worker));
        let j = h.get(&id).await;
        assert_eq!(j.errors, expected, "after attempt {n}");
        assert_eq!(j.last_error, Some(format!("fail {n}")));
        h.advance(j.scheduled_at_ms - h.now());
    }
    let claimed = h.claim_id("w4", "j", &id).await;
    assert!(h.report(&claimed, Outcome::Completed).await);
    let j = h.get(&id).await;
    assert_eq!(j.status, JobStatus::Completed);
    assert_eq!(j.errors, expected, "success appends nothing");
    assert_eq!(j.last_error.as_deref(), Some("fail 3"), "lastError stays");
}

pub async fn history_keeps_the_newest_twenty(h: &Harness) {
    let id = enqueue_retrying(h, 30).await;
    for n in 1..=25 {
        let claimed = h.claim_id(&format!("w{n}"), "j", &id).await;
        h.advance(1);
        assert!(h.report(&claimed, fail_now(format!("fail {n}"))).await);
    }
    let j = h.get(&id).await;
    assert_eq!(
        j.errors.len(),
        duraq_core::driver::transitions::MAX_ERROR_HISTORY
    );
    let attempts: Vec<i64> = j.errors.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, (6..=25).collect::<Vec<_>>(), "oldest dropped");
    assert_eq!(j.errors[19], entry(25, h.now(), "fail 25", "w25"));
    assert_eq!(j.errors[0], entry(6, h.now() - 19, "fail 6", "w6"));
    // A terminal failure appends (and still drops the oldest).
    let mut terminal = j.clone();
    for n in 26..=31 {
        let claimed = h.claim_id("last", "j", &id).await;
        assert!(h.report(&claimed, fail_now(format!("fail {n}"))).await);
        terminal = h.get(&id).await;
    }
    assert_eq!(terminal.status, JobStatus::Failed);
    assert_eq!(terminal.errors.len(), 20);
    assert_eq!(terminal.errors[0].attempt, 12);
    assert_eq!(terminal.errors[19], entry(31, h.now(), "fail 31", "last"));
}

pub async fn recovered_lease_appends_with_the_dead_worker(h: &Harness) {
    let id = enqueue_retrying(h, 1).await;
    let claimed = h.claim_id("dead", "j", &id).await;
    h.advance(60_001);
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        std::slice::from_ref(&id)
    );
    let j = h.get(&id).await;
    let error = j.last_error.clone().expect("recovery sets lastError");
    assert!(error.contains("dead"), "{error}");
    assert_eq!(j.errors, [entry(1, h.now(), &error, "dead")]);
    assert_eq!(
        j.worker_id, None,
        "the row's lease is cleared, the entry keeps it"
    );

    // The late report of the lost lease is fenced: nothing appended.
    let before = h.state().await;
    assert!(!h.report(&claimed, Outcome::failed("late")).await);
    h.assert_unchanged(&before, "a late report from a lost lease")
        .await;

    // Exhausted: orphaned, and the recovery appends again.
    h.advance(j.scheduled_at_ms - h.now());
    h.claim_id("dead2", "j", &id).await;
    h.advance(60_001);
    h.store.recover_stale(60_000).await.unwrap();
    let j = h.get(&id).await;
    assert_eq!(j.status, JobStatus::Orphaned);
    assert_eq!(j.errors.len(), 2);
    assert_eq!(
        (j.errors[1].attempt, j.errors[1].worker_id.as_deref()),
        (2, Some("dead2"))
    );
}

pub async fn reschedule_and_return_append_nothing(h: &Harness) {
    let id = enqueue_retrying(h, 3).await;
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(h.report(&claimed, fail_now("once".into())).await);
    let kept = h.get(&id).await.errors;
    assert_eq!(kept.len(), 1);
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(
        h.report(&claimed, Outcome::Reschedule { delay_ms: 0 })
            .await
    );
    assert_eq!(h.get(&id).await.errors, kept, "reschedule");
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(h.report(&claimed, Outcome::ReturnToQueue).await);
    assert_eq!(h.get(&id).await.errors, kept, "return to queue");
}

pub async fn stale_report_appends_nothing(h: &Harness) {
    let id = enqueue_retrying(h, 3).await;
    let first = h.claim_id("w1", "j", &id).await;
    assert!(h.report(&first, fail_now("first".into())).await);
    let second = h.claim_id("w2", "j", &id).await;
    let before = h.state().await;
    assert!(!h.report(&first, Outcome::failed("stale")).await);
    h.assert_unchanged(&before, "a report under a superseded lease")
        .await;
    assert!(h.report(&second, Outcome::Completed).await);
    assert_eq!(h.get(&id).await.errors.len(), 1);
}

pub async fn operator_retry_keeps_the_history(h: &Harness) {
    let id = enqueue_retrying(h, 0).await;
    let claimed = h.claim_id("w1", "j", &id).await;
    assert!(h.report(&claimed, Outcome::failed("boom")).await);
    let failed = h.get(&id).await;
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.errors, [entry(1, h.now(), "boom", "w1")]);
    h.advance(5);
    let retried = h.store.retry_job(&id).await.unwrap();
    assert_eq!(retried.errors, failed.errors, "retry keeps the history");
    assert_eq!(h.get(&id).await.errors, failed.errors);
    let claimed = h.claim_id("w2", "j", &id).await;
    h.advance(5);
    assert!(h.report(&claimed, Outcome::failed("again")).await);
    let j = h.get(&id).await;
    assert_eq!(
        j.errors,
        [
            entry(1, h.now() - 10, "boom", "w1"),
            entry(1, h.now(), "again", "w2"),
        ],
        "the attempt count restarts after an operator retry"
    );
    h.store.retry_job(&id).await.unwrap();
    let cancelled = h.store.cancel_job(&id).await.unwrap();
    assert_eq!(cancelled.errors, j.errors, "cancel appends nothing");
}
