//! `docs/idempotency.md` timing as requested: a relative delay (`runInMs`) is resolved with the
//! store's clock when the job is persisted, and an idempotent request "in 10
//! minutes" replays when retried later instead of conflicting.
//!
//! Why: the CLI used to turn `--run-in 10m` into an absolute time on the
//! caller's clock, so the request digest held a different time on every retry
//! and a retried idempotent enqueue failed with `idempotency-conflict`. The
//! delay is now part of the request and the store resolves it
//! (`NewJob::due_at_ms`), so these cases advance the shared manual clock
//! between attempts and check the resolved `scheduledAtMs` against it.

use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, ScheduleKey};
use serde_json::json;

use crate::harness::{expect_conflict, job, Harness, WireOptions};

const TEN_MINUTES: i64 = 600_000;

fn keyed() -> EnqueueOptions {
    EnqueueOptions::new().idempotency_key("remind-42")
}

pub async fn run_in_resolves_with_the_store_clock(h: &Harness) {
    h.advance(12_345);
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().run_in_ms(TEN_MINUTES))
        .await
        .job_id()
        .to_owned();
    let job_row = h.get(&id).await;
    assert_eq!(job_row.scheduled_at_ms, h.now() + TEN_MINUTES);
    assert_eq!(job_row.created_at_ms, h.now());
    assert!(h.claim("w", &["j"], 5).await.is_empty(), "not due yet");
    let batch = vec![
        job("b", json!([1]), EnqueueOptions::new().run_in_ms(0)),
        job("b", json!([2]), EnqueueOptions::new().run_in_ms(5_000)),
    ];
    let ids: Vec<String> = h
        .store
        .enqueue_batch(batch)
        .await
        .unwrap()
        .iter()
        .map(|o| o.job_id().to_owned())
        .collect();
    assert_eq!(h.get(&ids[0]).await.scheduled_at_ms, h.now());
    assert_eq!(h.get(&ids[1]).await.scheduled_at_ms, h.now() + 5_000);
    let key = ScheduleKey::new("reminder").unwrap();
    let owner = h
        .store
        .replace_scheduled(
            &key,
            job("r", json!([]), EnqueueOptions::new().run_in_ms(7)),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_eq!(h.get(&owner.job_id).await.scheduled_at_ms, h.now() + 7);
    h.advance(TEN_MINUTES);
    let due = h.claim("w", &["j"], 5).await;
    assert_eq!(due.len(), 1, "due once the store clock reached it");
    assert_eq!(due[0].id, id);
}

pub async fn idempotent_run_in_replays_after_the_clock_moved(h: &Harness) {
    let first = h
        .store
        .enqueue(job("j", json!([1]), keyed().run_in_ms(TEN_MINUTES)))
        .await
        .unwrap();
    let EnqueueOutcome::Created(id) = first else {
        panic!("expected Created, got {first:?}")
    };
    let due = h.get(&id).await.scheduled_at_ms;
    h.advance(1_000);
    let before = h.state().await;
    let retry = h
        .store
        .enqueue(job("j", json!([1]), keyed().run_in_ms(TEN_MINUTES)))
        .await
        .unwrap();
    assert_eq!(retry, EnqueueOutcome::Replayed(id.clone()));
    h.assert_unchanged(&before, "a replayed delay").await;
    assert_eq!(
        h.get(&id).await.scheduled_at_ms,
        due,
        "the first time stands"
    );
    let others = [
        ("another delay", keyed().run_in_ms(TEN_MINUTES + 1)),
        ("immediate", keyed()),
        ("the resolved time, absolute", keyed().scheduled_at_ms(due)),
    ];
    for (what, opts) in others {
        let res = h.store.enqueue(job("j", json!([1]), opts)).await;
        expect_conflict(res, ErrorCode::IdempotencyConflict);
        h.assert_unchanged(&before, what).await;
    }
}

pub async fn absolute_and_immediate_keyed_requests_still_replay(h: &Harness) {
    let at = h.now() + 30_000;
    let timed = h
        .insert(job("t", json!([]), keyed().scheduled_at_ms(at)))
        .await;
    let now = h.insert(job("n", json!([]), keyed())).await;
    h.advance(1_000);
    let again = h
        .store
        .enqueue(job("t", json!([]), keyed().scheduled_at_ms(at)))
        .await
        .unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(timed));
    let again = h.store.enqueue(job("n", json!([]), keyed())).await.unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(now));
    let delayed = h
        .store
        .enqueue(job("n", json!([]), keyed().run_in_ms(0)))
        .await;
    expect_conflict(delayed, ErrorCode::IdempotencyConflict);
}
