//! Per-job priority (`docs/queues.md`): within one queue priority, a higher job
//! priority is claimed first, then the due time, creation and id; the queue's own
//! priority comes before it; future jobs of a high priority never stand in the way
//! of due jobs of a lower one, and the worker's timer sees every priority. A
//! priority is persisted, part of an idempotent request (unset apart from an
//! explicit 0), and a value outside −100…100 is `invalid-priority` without any write.

use std::collections::BTreeMap;

use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, NewJob, QueueConfig};
use serde_json::json;

use crate::harness::{claim_req, expect_conflict, expect_invalid, job, Harness, WireOptions};

fn ids(jobs: &[duraq_core::Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

fn at(ms: i64, priority: i8) -> EnqueueOptions {
    EnqueueOptions::new().scheduled_at_ms(ms).priority(priority)
}

pub async fn higher_priority_is_claimed_first(h: &Harness) {
    let t = h.now();
    h.insert(job("j", json!([]), at(t - 50, 0)).with_id("old-normal"))
        .await;
    h.insert(job("j", json!([]), at(t - 10, 10)).with_id("new-high"))
        .await;
    h.insert(job("j", json!([]), at(t - 90, -5)).with_id("oldest-low"))
        .await;
    h.insert(job("j", json!([]), at(t - 20, 10)).with_id("b-high"))
        .await;
    h.insert(job("j", json!([]), at(t - 20, 10)).with_id("a-high"))
        .await;
    h.insert(job("j", json!([]), at(t - 60, 100)).with_id("top"))
        .await;
    let claimed = h.claim("w", &["j"], 4).await;
    assert_eq!(ids(&claimed), ["top", "a-high", "b-high", "new-high"]);
    let rest = h.claim("w", &["j"], 4).await;
    assert_eq!(ids(&rest), ["old-normal", "oldest-low"]);
}

pub async fn queue_priority_comes_before_job_priority(h: &Harness) {
    let t = h.now();
    h.insert(job("j", json!([]), at(t - 5, 100)).with_id("default-top"))
        .await;
    h.insert(job("j", json!([]), at(t - 1, -100).queue("urgent")).with_id("urgent-last"))
        .await;
    h.insert(job("j", json!([]), at(t - 1, 50).queue("urgent")).with_id("urgent-mid"))
        .await;
    let req = ClaimRequest {
        queue_config: BTreeMap::from([(
            "urgent".to_owned(),
            QueueConfig {
                max_concurrent: None,
                priority: 1,
            },
        )]),
        ..claim_req("w", &["j"], 3)
    };
    let claimed = h.claim_with(&req).await;
    assert_eq!(ids(&claimed), ["urgent-mid", "urgent-last", "default-top"]);
}

pub async fn future_high_priority_jobs_do_not_hide_due_ones(h: &Harness) {
    let t = h.now();
    let future: Vec<NewJob> = (0..40)
        .map(|i| job("j", json!([i]), at(t + 10_000 + i, 100)))
        .collect();
    h.store.enqueue_batch(future).await.expect("batch");
    h.insert(job("j", json!([]), at(t - 1, -3)).with_id("due-low"))
        .await;
    let claimed = h.claim("w", &["j"], 5).await;
    assert_eq!(ids(&claimed), ["due-low"]);
    // The timer sees the earliest job of every priority.
    h.insert(job("j", json!([]), at(t + 500, -100)).with_id("soon-lowest"))
        .await;
    let names = vec!["j".to_owned()];
    let next = h.store.next_scheduled_at(&names, None).await.unwrap();
    assert_eq!(next, Some(t + 500));
    h.advance(10_001);
    let claimed = h.claim("w", &["j"], 2).await;
    assert_eq!(
        claimed.iter().map(|j| j.args.clone()).collect::<Vec<_>>(),
        [json!([0]), json!([1])],
        "due high-priority jobs come before the older low one"
    );
}

pub async fn priority_is_persisted_and_defaults_to_zero(h: &Harness) {
    let plain = h.enqueue("j", json!([])).await;
    assert_eq!(h.get(&plain).await.priority, 0);
    let low = h
        .insert(job("j", json!([]), EnqueueOptions::new().priority(-100)))
        .await;
    assert_eq!(h.get(&low).await.priority, -100);
    let batch = h
        .store
        .enqueue_batch(vec![job(
            "j",
            json!([1]),
            EnqueueOptions::new().priority(7),
        )])
        .await
        .unwrap();
    assert_eq!(h.get(batch[0].job_id()).await.priority, 7);
}

pub async fn invalid_priority_changes_nothing(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    for bad in [101, -101, i64::MAX, i64::MIN] {
        let opts = EnqueueOptions {
            priority: Some(bad),
            ..EnqueueOptions::new()
        };
        expect_invalid(
            NewJob::new("j", json!([]), opts),
            ErrorCode::InvalidPriority,
        );
    }
    h.assert_unchanged(&before, "invalid-priority").await;
}

pub async fn priority_is_part_of_an_idempotent_request(h: &Harness) {
    let keyed = || EnqueueOptions::new().idempotency_key("k");
    let id = h.insert(job("j", json!([]), keyed().priority(5))).await;
    let again = h
        .store
        .enqueue(job("j", json!([]), keyed().priority(5)))
        .await
        .unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(id));
    let other = h
        .store
        .enqueue(job("j", json!([]), keyed().priority(6)))
        .await;
    expect_conflict(other, ErrorCode::IdempotencyConflict);
    let unset = h.store.enqueue(job("j", json!([]), keyed())).await;
    expect_conflict(unset, ErrorCode::IdempotencyConflict);
    // Unset and an explicit 0 are different requests too.
    let plain_key = || EnqueueOptions::new().idempotency_key("plain");
    let plain = h.insert(job("j", json!([]), plain_key())).await;
    let zero = h
        .store
        .enqueue(job("j", json!([]), plain_key().priority(0)))
        .await;
    expect_conflict(zero, ErrorCode::IdempotencyConflict);
    let replay = h
        .store
        .enqueue(job("j", json!([]), plain_key()))
        .await
        .unwrap();
    assert_eq!(replay, EnqueueOutcome::Replayed(plain));
}
