//! `docs/queues.md` concurrency caps: explicit keys and queue-derived `queue:<name>` keys,
//! caps shared across workers, a saturated key never blocking unrelated jobs, the
//! reservation released on every exit path, and `reconcile_reservations`.

use std::collections::BTreeMap;

use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, JobStatus, Outcome, QueueConfig};
use serde_json::json;

use crate::harness::{claim_req, job, key, Harness};

fn capped(queue: &str, max: i64, priority: i64) -> BTreeMap<String, QueueConfig> {
    BTreeMap::from([(
        queue.to_owned(),
        QueueConfig {
            max_concurrent: Some(max),
            priority,
        },
    )])
}

fn ids(jobs: &[duraq_core::Job]) -> Vec<String> {
    jobs.iter().map(|j| j.id.clone()).collect()
}

pub async fn explicit_key_caps_across_workers(h: &Harness) {
    for i in 0..3 {
        h.insert(
            job("j", json!([i]), EnqueueOptions::new().concurrency("k", 2))
                .with_id(format!("k{i}")),
        )
        .await;
    }
    assert_eq!(ids(&h.claim("w1", &["j"], 1).await), ["k0"]);
    assert_eq!(
        ids(&h.claim("w2", &["j"], 10).await),
        ["k1"],
        "cap 2 shared by workers"
    );
    assert!(h.claim("w3", &["j"], 10).await.is_empty());
    let k0 = h.get("k0").await;
    assert!(h.report(&k0, Outcome::Completed).await);
    assert_eq!(ids(&h.claim("w3", &["j"], 10).await), ["k2"]);
}

pub async fn saturated_key_does_not_block_others(h: &Harness) {
    h.insert(job("j", json!([1]), EnqueueOptions::new().concurrency("k", 1)).with_id("a"))
        .await;
    h.insert(job("j", json!([2]), EnqueueOptions::new().concurrency("k", 1)).with_id("b"))
        .await;
    h.advance(1);
    h.insert(job("j", json!([3]), EnqueueOptions::new()).with_id("c"))
        .await;
    h.insert(
        job(
            "j",
            json!([4]),
            EnqueueOptions::new().concurrency("other", 1),
        )
        .with_id("d"),
    )
    .await;
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), ["a", "c", "d"]);
}

pub async fn queue_cap_from_claim_config(h: &Harness) {
    for i in 0..3 {
        h.insert(job("j", json!([i]), EnqueueOptions::new().queue("q")).with_id(format!("q{i}")))
            .await;
    }
    h.insert(
        job(
            "j",
            json!([9]),
            EnqueueOptions::new().queue("q").concurrency("own", 5),
        )
        .with_id("q9"),
    )
    .await;
    let req = ClaimRequest {
        queue_config: capped("q", 2, 0),
        ..claim_req("w", &["j"], 10)
    };
    // The explicit key wins over the queue's, so q9 does not count against `queue:q`.
    assert_eq!(ids(&h.claim_with(&req).await), ["q0", "q1", "q9"]);
    assert!(h.claim_with(&req).await.is_empty());
    assert_eq!(
        h.get("q0").await.concurrency_key,
        None,
        "the queue key is not written as the job's own"
    );
    let q1 = h.get("q1").await;
    assert!(h.report(&q1, Outcome::Completed).await);
    assert_eq!(ids(&h.claim_with(&req).await), ["q2"]);
}

pub async fn capped_queue_skipped_not_blocking(h: &Harness) {
    h.insert(job("j", json!([1]), EnqueueOptions::new().queue("hi")).with_id("h1"))
        .await;
    h.insert(job("j", json!([2]), EnqueueOptions::new().queue("hi")).with_id("h2"))
        .await;
    h.insert(job("j", json!([3]), EnqueueOptions::new().queue("lo")).with_id("l1"))
        .await;
    let mut config = capped("hi", 1, 10);
    config.insert(
        "lo".into(),
        QueueConfig {
            max_concurrent: None,
            priority: 0,
        },
    );
    let req = ClaimRequest {
        queue_config: config,
        ..claim_req("w", &["j"], 2)
    };
    assert_eq!(ids(&h.claim_with(&req).await), ["h1", "l1"]);
}

/// The ways a claimed job leaves `handed_off`.
#[derive(Clone, Copy, Debug)]
enum Exit {
    Completed,
    Retry,
    Failed,
    Reschedule,
    ReturnToQueue,
    Cancel,
    Recovered,
}

/// Claims the one due job of a fresh key (cap 1), makes it leave by `exit`, then
/// checks that the key's next job can be claimed: the reservation was released.
async fn released_after(h: &Harness, exit: Exit) {
    let tag = format!("{exit:?}");
    let name = format!("rel-{tag}");
    let opts = EnqueueOptions::new()
        .concurrency(format!("key-{tag}"), 1)
        .max_retries(1);
    let first = h.insert(job(&name, json!([1]), opts.clone())).await;
    let second = h.insert(job(&name, json!([2]), opts)).await;
    let claimed = h.claim_id("w", &name, &first).await;
    let other = format!("other-{tag}");
    assert!(
        h.claim(&other, &[&name], 10).await.is_empty(),
        "{tag}: cap holds"
    );
    let report = |outcome| h.report(&claimed, outcome);
    match exit {
        Exit::Completed => assert!(report(Outcome::Completed).await),
        Exit::Retry => assert!(report(Outcome::failed("x")).await),
        Exit::Failed => {
            let discard = Outcome::Failed {
                error: "x".into(),
                retry_in_ms: None,
                discard: true,
            };
            assert!(report(discard).await)
        }
        Exit::Reschedule => assert!(report(Outcome::Reschedule { delay_ms: 60_000 }).await),
        Exit::ReturnToQueue => {
            assert!(report(Outcome::ReturnToQueue).await);
            h.store.cancel_job(&first).await.unwrap();
        }
        Exit::Cancel => {
            h.store.cancel_job(&first).await.unwrap();
        }
        Exit::Recovered => {
            h.advance(60_001);
            h.store.heartbeat(&other).await.unwrap();
            assert_eq!(
                h.store.recover_stale(60_000).await.unwrap(),
                std::slice::from_ref(&first)
            );
        }
    }
    let next = h.claim(&other, &[&name], 1).await;
    assert_eq!(
        ids(&next),
        std::slice::from_ref(&second),
        "{tag}: reservation released"
    );
    h.store.cancel_job(&second).await.unwrap();
}

pub async fn reservation_released_on_every_exit(h: &Harness) {
    use Exit::*;
    for exit in [
        Completed,
        Retry,
        Failed,
        Reschedule,
        ReturnToQueue,
        Cancel,
        Recovered,
    ] {
        released_after(h, exit).await;
    }
    assert_eq!(
        h.store.reconcile_reservations().await.unwrap(),
        0,
        "nothing leaked"
    );
}

pub async fn keyed_cancel_of_running_owner_keeps_reservation(h: &Harness) {
    let opts = EnqueueOptions::new().concurrency("c", 1);
    let out = h
        .store
        .replace_scheduled(
            &key("k"),
            job("j", json!([1]), opts.clone()),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let running = h.claim_id("w", "j", &out.job_id).await;
    h.insert(job("j", json!([2]), opts.clone())).await;
    h.store
        .cancel_scheduled(&key("k"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    h.store
        .replace_scheduled(
            &key("k"),
            job("j", json!([3]), opts),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert!(
        h.claim("w2", &["j"], 10).await.is_empty(),
        "the run goes on and holds its slot"
    );
    assert!(h.report(&running, Outcome::Completed).await);
    assert_eq!(h.claim("w2", &["j"], 10).await.len(), 1);
}

pub async fn reconcile_is_a_no_op_when_consistent(h: &Harness) {
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
    for i in 0..4 {
        h.insert(job(
            "j",
            json!([i]),
            EnqueueOptions::new().concurrency("k", 3).queue("q"),
        ))
        .await;
        h.insert(job("j", json!([i]), EnqueueOptions::new().queue("q")))
            .await;
    }
    let req = ClaimRequest {
        queue_config: capped("q", 2, 0),
        ..claim_req("w", &["j"], 10)
    };
    let claimed = h.claim_with(&req).await;
    assert_eq!(claimed.len(), 5);
    let before = h.state().await;
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
    h.assert_unchanged(&before, "reconcile").await;
    assert!(
        h.claim_with(&req).await.is_empty(),
        "reconcile kept every reservation"
    );
    assert_eq!(h.snapshot().await.counts.get(JobStatus::HandedOff), 5);
}
