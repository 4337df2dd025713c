//! `docs/schedule-keys.md` ownership over time: the `scheduleOrder` high-water mark is kept apart
//! from job rows (it survives owner release and prune), a retry keeps ownership,
//! and a superseded job, however it ends, never removes a newer owner.

use duraq_core::inspect::PruneRequest;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use serde_json::json;

use crate::harness::{job, key, Harness};

pub async fn superseded_job_never_removes_newer_owner(h: &Harness) {
    // Three superseded running jobs leave by failure, operator cancel and recovery.
    let mut running = Vec::new();
    for i in 0..3 {
        let new = job("j", json!([i]), EnqueueOptions::new().max_retries(0));
        let out = h
            .store
            .replace_scheduled(&key("k"), new, duraq_core::RunningOwner::KeepRunning)
            .await
            .unwrap();
        running.push(h.claim_id(&format!("w{i}"), "j", &out.job_id).await);
    }
    let owner = h.replace("k", "other", json!([])).await;
    assert!(h.report(&running[0], Outcome::failed("boom")).await);
    h.store.cancel_job(&running[1].id).await.unwrap();
    h.advance(60_001);
    h.store.heartbeat("w0").await.unwrap();
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        [running[2].id.clone()]
    );
    assert_eq!(h.get(&running[2].id).await.status, JobStatus::Orphaned);
    let got = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(got.current_job.map(|j| j.id), Some(owner.job_id));
}

pub async fn high_water_survives_release_and_prune(h: &Harness) {
    let first = h.replace("k", "j", json!([])).await;
    h.drive_to(&first.job_id, "j", JobStatus::Completed).await;
    let second = h.replace("k", "j", json!([])).await;
    assert_eq!(
        second.previous_job_id, None,
        "the completed owner released the key"
    );
    assert_eq!(h.get(&second.job_id).await.schedule_order, Some(2));
    h.store
        .cancel_scheduled(&key("k"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    h.advance(10);
    let req = PruneRequest {
        completed_older_than: Some(std::time::Duration::ZERO),
        cancelled_older_than: Some(std::time::Duration::ZERO),
        ..PruneRequest::default()
    };
    assert_eq!(h.store.prune(&req).await.unwrap().deleted, 2);
    assert!(h.jobs().await.is_empty());
    let third = h.replace("k", "j", json!([])).await;
    assert_eq!(h.get(&third.job_id).await.schedule_order, Some(3));
    let other = h.replace("other", "j", json!([])).await;
    assert_eq!(
        h.get(&other.job_id).await.schedule_order,
        Some(1),
        "orders are per key"
    );
}

pub async fn retry_keeps_ownership(h: &Harness) {
    let out = h.replace("k", "j", json!([])).await;
    let claimed = h.claim_id("w", "j", &out.job_id).await;
    assert!(h.report(&claimed, Outcome::failed("again")).await);
    let got = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(
        got.current_job.map(|j| (j.id, j.status)),
        Some((out.job_id.clone(), JobStatus::Queued))
    );
    let claimed = h.claim("w", &["j"], 1).await;
    assert!(claimed.is_empty(), "backoff pending");
    let next = h.replace("k", "j", json!([])).await;
    assert_eq!(
        (next.previous_job_id, next.previous_status),
        (Some(out.job_id), Some(JobStatus::Queued))
    );
}
