//! `docs/idempotency.md` durable idempotent enqueue: replays in every status and after prune,
//! which request differences conflict (and write nothing), and what the scope is
//! made of (job name and queue pick the scope; ids and wall-clock time do not count).

use duraq_core::inspect::PruneRequest;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus};
use serde_json::json;

use crate::harness::{expect_conflict, job, Harness, WireOptions};

fn keyed() -> EnqueueOptions {
    EnqueueOptions::new().idempotency_key("order-42")
}

pub async fn first_creates_then_replays(h: &Harness) {
    let first = job("j", json!({"b": 2, "a": 1}), keyed()).with_id("first");
    assert_eq!(
        h.store.enqueue(first).await.unwrap(),
        EnqueueOutcome::Created("first".into())
    );
    let before = h.state().await;
    let replay = job("j", json!({"a": 1, "b": 2}), keyed()).with_id("second");
    assert_eq!(
        h.store.enqueue(replay).await.unwrap(),
        EnqueueOutcome::Replayed("first".into())
    );
    h.assert_unchanged(&before, "a replay").await;
    assert_eq!(h.store.get_job("second").await.unwrap(), None);
}

pub async fn replay_in_every_status(h: &Harness) {
    // A pending job's replay: `dependencies::an_idempotent_dependent_replays…`.
    let statuses = JobStatus::ALL
        .into_iter()
        .filter(|s| *s != JobStatus::Pending);
    for (i, status) in statuses.enumerate() {
        let name = format!("job-{i}");
        let opts = keyed().max_retries(0);
        let id = h.insert(job(&name, json!([i]), opts.clone())).await;
        h.drive_to(&id, &name, status).await;
        let before = h.state().await;
        let out = h.store.enqueue(job(&name, json!([i]), opts)).await.unwrap();
        assert_eq!(
            out,
            EnqueueOutcome::Replayed(id.clone()),
            "replay while {status}"
        );
        h.assert_unchanged(&before, &format!("replay while {status}"))
            .await;
    }
}

pub async fn replay_after_prune(h: &Harness) {
    let id = h.insert(job("j", json!([1]), keyed())).await;
    h.drive_to(&id, "j", JobStatus::Completed).await;
    h.advance(1_000);
    let req = PruneRequest {
        completed_older_than: Some(std::time::Duration::from_millis(1)),
        ..PruneRequest::default()
    };
    assert_eq!(h.store.prune(&req).await.unwrap().deleted, 1);
    assert_eq!(h.store.get_job(&id).await.unwrap(), None);
    let before = h.state().await;
    let out = h
        .store
        .enqueue(job("j", json!([1]), keyed()))
        .await
        .unwrap();
    assert_eq!(
        out,
        EnqueueOutcome::Replayed(id),
        "ownership rows are never pruned"
    );
    h.assert_unchanged(&before, "replay after prune").await;
    let conflict = h.store.enqueue(job("j", json!([2]), keyed())).await;
    expect_conflict(conflict, ErrorCode::IdempotencyConflict);
}

pub async fn request_differences_conflict(h: &Harness) {
    let base = || {
        keyed()
            .queue("q")
            .max_retries(3)
            .concurrency("c", 2)
            .timeout_ms(500)
    };
    let id = h.insert(job("j", json!([1, {"x": true}]), base())).await;
    let later = h.now() + 60_000;
    let variants: Vec<(&str, serde_json::Value, EnqueueOptions)> = vec![
        ("args", json!([1, {"x": false}]), base()),
        ("args order", json!([{"x": true}, 1]), base()),
        ("maxRetries", json!([1, {"x": true}]), base().max_retries(4)),
        (
            "maxRetries default",
            json!([1, {"x": true}]),
            EnqueueOptions {
                max_retries: None,
                ..base()
            },
        ),
        (
            "concurrency cap",
            json!([1, {"x": true}]),
            base().concurrency("c", 3),
        ),
        (
            "concurrency key",
            json!([1, {"x": true}]),
            base().concurrency("d", 2),
        ),
        (
            "no concurrency",
            json!([1, {"x": true}]),
            EnqueueOptions {
                concurrency_key: None,
                max_concurrency: None,
                ..base()
            },
        ),
        ("timeout", json!([1, {"x": true}]), base().timeout_ms(501)),
        (
            "timeout absent",
            json!([1, {"x": true}]),
            EnqueueOptions {
                timeout_ms: None,
                ..base()
            },
        ),
        (
            "scheduled",
            json!([1, {"x": true}]),
            base().scheduled_at_ms(later),
        ),
        (
            "scheduled now",
            json!([1, {"x": true}]),
            base().scheduled_at_ms(h.now()),
        ),
    ];
    let before = h.state().await;
    for (what, args, opts) in variants {
        let res = h.store.enqueue(job("j", args, opts)).await;
        let err = crate::harness::expect_err(res, ErrorCode::IdempotencyConflict);
        assert!(
            matches!(err, duraq_core::Error::Conflict { .. }),
            "{what}: {err:?}"
        );
        h.assert_unchanged(&before, what).await;
    }
    h.advance(3_600_000);
    let replay = h
        .store
        .enqueue(job("j", json!([1, {"x": true}]), base().queue(" q ")))
        .await
        .unwrap();
    assert_eq!(
        replay,
        EnqueueOutcome::Replayed(id),
        "an immediate replay later is a replay"
    );
}

pub async fn timeout_presence_is_part_of_request(h: &Harness) {
    let id = h.insert(job("j", json!([]), keyed())).await;
    let res = h
        .store
        .enqueue(job("j", json!([]), keyed().timeout_ms(1_000)))
        .await;
    expect_conflict(res, ErrorCode::IdempotencyConflict);
    let again = h.store.enqueue(job("j", json!([]), keyed())).await.unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(id));
}

pub async fn scheduled_replay_matches_time(h: &Harness) {
    let at = h.now() + 10_000;
    let id = h
        .insert(job("j", json!([]), keyed().scheduled_at_ms(at)))
        .await;
    h.advance(20_000);
    let same = h
        .store
        .enqueue(job("j", json!([]), keyed().scheduled_at_ms(at)))
        .await
        .unwrap();
    assert_eq!(same, EnqueueOutcome::Replayed(id));
    let immediate = h.store.enqueue(job("j", json!([]), keyed())).await;
    expect_conflict(immediate, ErrorCode::IdempotencyConflict);
    let other_time = h
        .store
        .enqueue(job("j", json!([]), keyed().scheduled_at_ms(at + 1)))
        .await;
    expect_conflict(other_time, ErrorCode::IdempotencyConflict);
}

pub async fn scope_is_name_queue_and_key(h: &Harness) {
    let a = h.insert(job("j", json!([]), keyed())).await;
    let other_name = h.insert(job("k", json!([9]), keyed())).await;
    let other_queue = h.insert(job("j", json!([9]), keyed().queue("mail"))).await;
    let other_key = h
        .insert(job(
            "j",
            json!([9]),
            EnqueueOptions::new().idempotency_key("order-43"),
        ))
        .await;
    let unkeyed = h.insert(job("j", json!([]), EnqueueOptions::new())).await;
    let ids = [&a, &other_name, &other_queue, &other_key, &unkeyed];
    assert_eq!(
        ids.iter().collect::<std::collections::BTreeSet<_>>().len(),
        5
    );
    let blank_queue = job("j", json!([]), keyed().queue("  default "));
    assert_eq!(
        h.store.enqueue(blank_queue).await.unwrap(),
        EnqueueOutcome::Replayed(a)
    );
    assert_eq!(
        h.get(&other_key).await.idempotency_key.as_deref(),
        Some("order-43")
    );
}

pub async fn operator_retry_does_not_reopen_scope(h: &Harness) {
    let id = h.insert(job("j", json!([]), keyed().max_retries(0))).await;
    h.drive_to(&id, "j", JobStatus::Failed).await;
    h.store.retry_job(&id).await.unwrap();
    let out = h
        .store
        .enqueue(job("j", json!([]), keyed().max_retries(0)))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Replayed(id));
    assert_eq!(h.snapshot().await.counts.all, 1);
}
