//! `docs/jobs.md` recovery of dead workers: a lease whose worker's heartbeat is older than
//! the stale timeout is recovered as a failed attempt (`orphaned` when exhausted),
//! the old lease is fenced off, and live workers keep theirs.

use duraq_core::worker::retry_backoff_ms;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use serde_json::json;

use crate::harness::Harness;

pub async fn stale_worker_is_recovered(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("dead", "j", &id).await;
    h.advance(60_001);
    let r0 = h.revision().await;
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        std::slice::from_ref(&id)
    );
    assert_eq!(h.revision().await, r0 + 1);
    let j = h.get(&id).await;
    assert_eq!((j.status, j.attempts), (JobStatus::Queued, 1));
    assert_eq!(j.scheduled_at_ms, h.now() + retry_backoff_ms(1));
    assert!(
        j.last_error.as_deref().is_some_and(|e| !e.is_empty()),
        "lastError says the worker was lost"
    );
    assert_eq!((j.handoff_id, j.worker_id), (None, None));
    let before = h.state().await;
    assert!(
        !h.report(&claimed, Outcome::Completed).await,
        "the old lease is fenced"
    );
    h.assert_unchanged(&before, "a report from a recovered lease")
        .await;
}

pub async fn heartbeat_keeps_lease(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("alive", "j", &id).await;
    h.advance(50_000);
    h.store.heartbeat("alive").await.unwrap();
    h.advance(50_000);
    let before = h.state().await;
    assert!(h.store.recover_stale(60_000).await.unwrap().is_empty());
    h.assert_unchanged(&before, "recover_stale with only live workers")
        .await;
    assert!(h.report(&claimed, Outcome::Completed).await);
}

pub async fn stale_boundary_is_strict(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    h.claim_id("w", "j", &id).await;
    h.advance(60_000);
    assert!(
        h.store.recover_stale(60_000).await.unwrap().is_empty(),
        "exactly stale_after old is alive"
    );
    h.advance(1);
    assert_eq!(h.store.recover_stale(60_000).await.unwrap(), [id]);
}

pub async fn claim_counts_as_heartbeat(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    h.claim_id("w", "a", &a).await;
    h.advance(59_000);
    assert!(h.claim("w", &["nothing-by-this-name"], 1).await.is_empty());
    h.advance(59_000);
    // The claim at +59 s was a heartbeat even though it claimed nothing.
    assert!(h.store.recover_stale(60_000).await.unwrap().is_empty());
    h.advance(1_001);
    assert_eq!(h.store.recover_stale(60_000).await.unwrap(), [a]);
}

pub async fn exhausted_lease_is_orphaned(h: &Harness) {
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().max_retries(0))
        .await
        .job_id()
        .to_owned();
    h.claim_id("dead", "j", &id).await;
    h.advance(120_000);
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        std::slice::from_ref(&id)
    );
    let j = h.get(&id).await;
    assert_eq!(
        (j.status, j.orphaned_at_ms, j.attempts),
        (JobStatus::Orphaned, Some(h.now()), 1)
    );
    assert!(j.last_error.is_some());
    assert_eq!(h.snapshot().await.counts.orphaned, 1);
}

pub async fn only_stale_workers_and_sorted(h: &Harness) {
    let ids: Vec<String> = (0..4).map(|i| format!("job-{i}")).collect();
    for id in ids.iter().rev() {
        h.insert(crate::harness::job("j", json!([id]), EnqueueOptions::new()).with_id(id.clone()))
            .await;
    }
    let dead = h.claim("dead", &["j"], 3).await;
    assert_eq!(dead.len(), 3);
    h.advance(30_000);
    let alive = h.claim("alive", &["j"], 1).await;
    h.advance(30_001);
    h.enqueue("queued", json!([])).await;
    let recovered = h.store.recover_stale(60_000).await.unwrap();
    assert_eq!(
        recovered,
        ["job-0", "job-1", "job-2"],
        "the dead worker's leases, sorted"
    );
    assert_eq!(h.get(&alive[0].id).await.status, JobStatus::HandedOff);
    assert!(
        h.store.recover_stale(60_000).await.unwrap().is_empty(),
        "nothing left to recover"
    );
}

pub async fn recovered_job_runs_again(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let first = h.claim_id("dead", "j", &id).await;
    h.advance(60_001);
    h.store.recover_stale(60_000).await.unwrap();
    h.advance(retry_backoff_ms(1));
    let second = h.claim_id("alive", "j", &id).await;
    assert_eq!(second.attempts, 2);
    assert!(
        !h.report(&first, Outcome::Completed).await,
        "the first lease lost"
    );
    assert!(h.report(&second, Outcome::Completed).await);
    assert_eq!(h.get(&id).await.status, JobStatus::Completed);
}
