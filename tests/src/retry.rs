//! `docs/jobs.md` what a report does to the row: completion keeps the lease as
//! history, failed attempts follow the backoff table (10 s, 1 min, 10 min, 1 h,
//! then n − 3 h) until `maxRetries` is used up, `retry_in_ms` and `discard`
//! override it, and reschedule / return-to-queue end an attempt without using it.

use duraq_core::worker::retry_backoff_ms;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use serde_json::json;

use crate::harness::Harness;

pub async fn completed_keeps_lease_history(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("w", "j", &id).await;
    h.advance(250);
    assert!(h.report(&claimed, Outcome::Completed).await);
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.completed_at_ms, j.attempts),
        (JobStatus::Completed, Some(h.now()), 1)
    );
    assert_eq!(
        (j.worker_id, j.handoff_id),
        (claimed.worker_id, claimed.handoff_id)
    );
    assert_eq!(j.last_error, None);
}

pub async fn backoff_schedule(h: &Harness) {
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().max_retries(6))
        .await
        .job_id()
        .to_owned();
    let expected = [10_000, 60_000, 600_000, 3_600_000, 7_200_000, 10_800_000];
    for (n, delay) in expected.iter().enumerate() {
        let claimed = h.claim_id("w", "j", &id).await;
        assert_eq!(claimed.attempts, n as i64 + 1);
        assert!(
            h.report(&claimed, Outcome::failed(format!("fail {n}")))
                .await
        );
        let j = h.get(&id).await;
        assert_eq!(
            (j.status, j.scheduled_at_ms),
            (JobStatus::Queued, h.now() + delay),
            "after attempt {}",
            n + 1
        );
        assert_eq!((j.handoff_id, j.worker_id), (None, None));
        assert_eq!(j.last_error, Some(format!("fail {n}")));
        h.advance(delay - 1);
        assert!(
            h.claim("w", &["j"], 1).await.is_empty(),
            "not before the backoff"
        );
        h.advance(1);
    }
    let last = h.claim_id("w", "j", &id).await;
    assert_eq!(last.attempts, 7);
    assert!(h.report(&last, Outcome::failed("final")).await);
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.failed_at_ms, j.last_error.as_deref()),
        (JobStatus::Failed, Some(h.now()), Some("final"))
    );
}

pub async fn retry_override_and_discard(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("w", "j", &id).await;
    let quick = Outcome::Failed {
        error: "soon".into(),
        retry_in_ms: Some(1_500),
        discard: false,
    };
    assert!(h.report(&claimed, quick).await);
    assert_eq!(h.get(&id).await.scheduled_at_ms, h.now() + 1_500);
    h.advance(1_500);
    let claimed = h.claim_id("w", "j", &id).await;
    let discard = Outcome::Failed {
        error: "fatal".into(),
        retry_in_ms: None,
        discard: true,
    };
    assert!(h.report(&claimed, discard).await);
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.attempts, j.last_error.as_deref()),
        (JobStatus::Failed, 2, Some("fatal"))
    );
}

pub async fn exhausted_retries_fail(h: &Harness) {
    let none = h
        .enqueue_with("j", json!([0]), EnqueueOptions::new().max_retries(0))
        .await
        .job_id()
        .to_owned();
    let claimed = h.claim_id("w", "j", &none).await;
    assert!(h.report(&claimed, Outcome::failed("once")).await);
    assert_eq!(h.get(&none).await.status, JobStatus::Failed);
    let one = h
        .enqueue_with("j", json!([1]), EnqueueOptions::new().max_retries(1))
        .await
        .job_id()
        .to_owned();
    let claimed = h.claim_id("w", "j", &one).await;
    assert!(h.report(&claimed, Outcome::failed("first")).await);
    assert_eq!(
        h.get(&one).await.status,
        JobStatus::Queued,
        "one retry left"
    );
    h.advance(retry_backoff_ms(1));
    let claimed = h.claim_id("w", "j", &one).await;
    assert!(h.report(&claimed, Outcome::failed("second")).await);
    assert_eq!(h.get(&one).await.status, JobStatus::Failed);
}

pub async fn reschedule_uses_no_attempt(h: &Harness) {
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().max_retries(0))
        .await
        .job_id()
        .to_owned();
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(
        h.report(&claimed, Outcome::Reschedule { delay_ms: 30_000 })
            .await
    );
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.attempts, j.scheduled_at_ms),
        (JobStatus::Queued, 0, h.now() + 30_000)
    );
    assert_eq!((j.last_error, j.handoff_id), (None, None));
    h.advance(30_000);
    let claimed = h.claim_id("w", "j", &id).await;
    assert_eq!(claimed.attempts, 1);
    assert!(h.report(&claimed, Outcome::ReturnToQueue).await);
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.attempts, j.scheduled_at_ms),
        (JobStatus::Queued, 0, h.now())
    );
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(
        h.report(&claimed, Outcome::Completed).await,
        "maxRetries 0 still gets its one attempt"
    );
}

pub async fn reschedule_keeps_last_error(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(
        h.report(
            &claimed,
            Outcome::Failed {
                error: "e1".into(),
                retry_in_ms: Some(0),
                discard: false
            }
        )
        .await
    );
    let claimed = h.claim_id("w", "j", &id).await;
    assert!(
        h.report(&claimed, Outcome::Reschedule { delay_ms: 0 })
            .await
    );
    let j = h.get(&id).await;
    assert_eq!(
        (j.attempts, j.last_error.as_deref(), j.status),
        (1, Some("e1"), JobStatus::Queued)
    );
}
