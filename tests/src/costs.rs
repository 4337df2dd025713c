//! Job costs (`docs/queues.md`): a job may take N units of its concurrency cap
//! and of its rate limit instead of one. A claim admits a job only when its
//! whole cost fits; every exit gives the whole cost back (a reconcile finds
//! nothing to fix); a job costing more than its queue's cap runs alone; a
//! cost that could never fit its own limits is `invalid-cost`, written
//! nowhere; and the cost is stored and part of an idempotent request.

use std::collections::BTreeMap;
use std::time::Duration;

use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, NewJob, Outcome, QueueConfig};
use serde_json::json;

use crate::harness::{claim_req, expect_conflict, expect_invalid, job, Harness};

fn ids(jobs: &[duraq_core::Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

fn capped(cost: u32) -> EnqueueOptions {
    EnqueueOptions::new().concurrency("api", 3).cost(cost)
}

/// A cap of 3 holds a job costing 2 and one costing 1; a second light job
/// waits until the heavy one ends, and then two light ones fit beside the
/// first.
pub async fn a_cost_takes_that_many_units_of_the_cap(h: &Harness) {
    h.insert(job("j", json!([0]), capped(2)).with_id("heavy"))
        .await;
    h.advance(1);
    for i in 1..=3 {
        h.insert(job("j", json!([i]), capped(1)).with_id(format!("light{i}")))
            .await;
        h.advance(1);
    }
    let first = h.claim("w1", &["j"], 10).await;
    assert_eq!(ids(&first), ["heavy", "light1"], "2 + 1 units of 3");
    assert_eq!(first[0].cost, 2);
    assert!(
        h.claim("w2", &["j"], 10).await.is_empty(),
        "the cap is full"
    );
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
    assert!(h.report(&first[0], Outcome::Completed).await);
    assert_eq!(
        ids(&h.claim("w2", &["j"], 10).await),
        ["light2", "light3"],
        "the heavy job gave back both units"
    );
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
}

/// A failed attempt, a lost worker and a cancel each give back the whole
/// cost: the key holds nothing after, and a job costing all of it starts.
pub async fn every_exit_gives_back_the_whole_cost(h: &Harness) {
    let full = || {
        EnqueueOptions::new()
            .concurrency("api", 3)
            .cost(3)
            .max_retries(1)
    };
    for (i, exit) in ["failed", "cancelled", "recovered"].into_iter().enumerate() {
        let id = h.insert(job("j", json!([i]), full())).await;
        let running = h.claim_id("w", "j", &id).await;
        let waiting = h.insert(job("j", json!([i, "next"]), full())).await;
        assert!(h.claim("w", &["j"], 10).await.is_empty(), "{exit}: full");
        match exit {
            "failed" => {
                let failed = Outcome::Failed {
                    error: "boom".into(),
                    retry_in_ms: Some(60_000),
                    discard: false,
                };
                assert!(h.report(&running, failed).await);
            }
            "cancelled" => {
                h.store.cancel_job(&id).await.unwrap();
            }
            _ => {
                h.advance(60_001);
                let lost = h.store.recover_stale(60_000).await.unwrap();
                assert_eq!(lost, std::slice::from_ref(&id));
            }
        }
        assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0, "{exit}");
        let next = h.claim_id("w", "j", &waiting).await;
        assert_eq!(
            next.status,
            JobStatus::HandedOff,
            "{exit}: the key was free"
        );
        h.store.cancel_job(&waiting).await.unwrap();
        if h.get(&id).await.status == JobStatus::Queued {
            h.store.cancel_job(&id).await.unwrap();
        }
    }
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
}

/// A job costing more than its queue's cap (a worker setting, unknown when
/// the job was enqueued) starts when the queue runs nothing else of the cap,
/// and nothing else of the queue starts beside it.
pub async fn a_job_costing_more_than_its_queue_cap_runs_alone(h: &Harness) {
    let queue = |cost| EnqueueOptions::new().queue("q").cost(cost);
    h.insert(job("j", json!([0]), queue(1)).with_id("small"))
        .await;
    h.advance(1);
    h.insert(job("j", json!([1]), queue(5)).with_id("big"))
        .await;
    h.advance(1);
    h.insert(job("j", json!([2]), queue(1)).with_id("after"))
        .await;
    let req = ClaimRequest {
        queue_config: BTreeMap::from([(
            "q".to_owned(),
            QueueConfig {
                max_concurrent: Some(2),
                priority: 0,
            },
        )]),
        ..claim_req("w", &["j"], 10)
    };
    let first = h.claim_with(&req).await;
    assert_eq!(
        ids(&first),
        ["small", "after"],
        "big does not fit beside small"
    );
    for j in &first {
        assert!(h.report(j, Outcome::Completed).await);
    }
    assert_eq!(ids(&h.claim_with(&req).await), ["big"], "alone, it starts");
    h.insert(job("j", json!([3]), queue(1))).await;
    assert!(
        h.claim_with(&req).await.is_empty(),
        "big holds the whole cap"
    );
}

/// A rate limit of 3 per second admits a job costing 3, then nothing until
/// its starts leave the window; the claim logs one start per unit.
pub async fn a_cost_takes_that_many_starts_of_the_rate(h: &Harness) {
    let limited = |cost| {
        EnqueueOptions::new()
            .rate_limit("api", 3, Duration::from_millis(1_000))
            .cost(cost)
    };
    h.insert(job("j", json!([0]), limited(3)).with_id("heavy"))
        .await;
    h.advance(1);
    h.insert(job("j", json!([1]), limited(1)).with_id("light"))
        .await;
    let start = h.now();
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), ["heavy"]);
    let light = h.get("light").await;
    assert_eq!(
        (light.status, light.scheduled_at_ms),
        (JobStatus::Queued, start + 1_000),
        "postponed until the three starts leave the window"
    );
    h.advance(1_000);
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), ["light"]);
}

/// A cost of 0, or above the job's own cap or rate limit, is `invalid-cost`
/// and writes nothing; a cost equal to them is fine.
pub async fn an_impossible_cost_is_refused(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    let rate = || EnqueueOptions::new().rate_limit("r", 2, Duration::from_secs(1));
    let wire = EnqueueOptions {
        cost: Some(-1),
        ..EnqueueOptions::new()
    };
    for opts in [
        EnqueueOptions::new().cost(0),
        wire,
        EnqueueOptions::new().concurrency("c", 2).cost(3),
        rate().cost(3),
        rate().concurrency("c", 5).cost(3),
    ] {
        expect_invalid(NewJob::new("j", json!([]), opts), ErrorCode::InvalidCost);
    }
    h.assert_unchanged(&before, "invalid-cost").await;
    let fits = rate().concurrency("c", 2).cost(2);
    let id = h.insert(job("j", json!([]), fits)).await;
    assert_eq!(h.get(&id).await.cost, 2);
    assert_eq!(h.get(&h.enqueue("j", json!([])).await).await.cost, 1);
}

/// The cost is part of an idempotent request: the same key with another
/// cost is a conflict, with the same cost a replay.
pub async fn the_cost_is_part_of_the_request(h: &Harness) {
    let keyed = |cost| EnqueueOptions::new().idempotency_key("once").cost(cost);
    let first = h
        .store
        .enqueue(job("j", json!([]), keyed(2)))
        .await
        .unwrap();
    let again = h
        .store
        .enqueue(job("j", json!([]), keyed(2)))
        .await
        .unwrap();
    assert_eq!(again.job_id(), first.job_id());
    expect_conflict(
        h.store.enqueue(job("j", json!([]), keyed(3))).await,
        ErrorCode::IdempotencyConflict,
    );
}
