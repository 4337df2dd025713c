//! Retention (`prune`): only terminal jobs strictly older than each category's
//! age go, in batches; live jobs, idempotency ownership, operation rows and
//! schedule high-water marks are never touched.

use duraq_core::inspect::{PruneReport, PruneRequest};
use duraq_core::{EnqueueOptions, EnqueueOutcome, JobStatus, NewOperation};
use serde_json::json;
use std::time::Duration;

use crate::harness::{job, Harness};

fn req(completed: Option<u64>, failed: Option<u64>, cancelled: Option<u64>) -> PruneRequest {
    PruneRequest {
        completed_older_than: completed.map(Duration::from_millis),
        failed_older_than: failed.map(Duration::from_millis),
        cancelled_older_than: cancelled.map(Duration::from_millis),
        batch_size: 100,
    }
}

/// One job in each status, all terminal ones reaching it at the same instant.
async fn one_of_each(h: &Harness) -> Vec<(JobStatus, String)> {
    let mut out = Vec::new();
    let mut ids = Vec::new();
    // Pending jobs are never pruned (no age applies): `dependencies.rs`.
    let statuses = JobStatus::ALL
        .into_iter()
        .filter(|s| *s != JobStatus::Pending);
    for (i, status) in statuses.enumerate() {
        let name = format!("j{i}");
        ids.push(
            h.insert(job(&name, json!([]), EnqueueOptions::new().max_retries(0)))
                .await,
        );
        out.push((status, name));
    }
    // Claim the ones that need a lease, then finish them all at one instant.
    let mut leased = Vec::new();
    for (i, (status, name)) in out.iter().enumerate() {
        if !matches!(status, JobStatus::Queued | JobStatus::Cancelled) {
            leased.push((*status, h.claim_id(&format!("w{i}"), name, &ids[i]).await));
        }
    }
    h.advance(60_001);
    for (status, claimed) in &leased {
        match status {
            JobStatus::Completed => {
                assert!(h.report(claimed, duraq_core::Outcome::Completed).await)
            }
            JobStatus::Failed => assert!(h.report(claimed, duraq_core::Outcome::failed("x")).await),
            _ => {}
        }
    }
    h.store.heartbeat("w1").await.unwrap();
    let orphaned = h.store.recover_stale(60_000).await.unwrap();
    assert_eq!(orphaned, [ids[5].clone()]);
    h.store.cancel_job(&ids[4]).await.unwrap();
    for (i, (status, _)) in out.iter().enumerate() {
        assert_eq!(h.get(&ids[i]).await.status, *status);
    }
    out.into_iter().map(|(s, _)| s).zip(ids).collect()
}

pub async fn ages_are_strict_and_per_category(h: &Harness) {
    let jobs = one_of_each(h).await;
    h.advance(1_000);
    let before = h.state().await;
    assert_eq!(
        h.store
            .prune(&req(Some(1_000), Some(1_000), Some(1_000)))
            .await
            .unwrap(),
        PruneReport::default()
    );
    h.assert_unchanged(&before, "prune at exactly the age")
        .await;
    assert_eq!(
        h.store.prune(&req(None, None, None)).await.unwrap().deleted,
        0,
        "no ages, nothing goes"
    );
    h.advance(1);
    assert_eq!(
        h.store
            .prune(&req(Some(1_000), None, None))
            .await
            .unwrap()
            .deleted,
        1
    );
    assert_eq!(
        h.store
            .prune(&req(None, Some(1_000), None))
            .await
            .unwrap()
            .deleted,
        2,
        "failed and orphaned"
    );
    assert_eq!(
        h.store
            .prune(&req(None, None, Some(1_000)))
            .await
            .unwrap()
            .deleted,
        1
    );
    for (status, id) in jobs {
        let present = h.store.get_job(&id).await.unwrap().is_some();
        assert_eq!(present, !status.is_terminal(), "{status} job after prune");
    }
    let snap = h.snapshot().await;
    assert_eq!(
        (snap.counts.queued, snap.counts.handed_off, snap.total),
        (1, 1, 2)
    );
}

pub async fn live_jobs_never_pruned(h: &Harness) {
    let queued = h.enqueue("q", json!([])).await;
    let running = h.enqueue("r", json!([])).await;
    h.claim_id("w", "r", &running).await;
    h.advance(365 * 24 * 3_600_000);
    h.store.heartbeat("w").await.unwrap();
    let report = h
        .store
        .prune(&req(Some(0), Some(0), Some(0)))
        .await
        .unwrap();
    assert_eq!(report, PruneReport::default());
    assert_eq!(h.jobs().await.len(), 2);
    assert_eq!(h.get(&queued).await.status, JobStatus::Queued);
}

pub async fn batches_are_reported(h: &Harness) {
    for i in 0..7 {
        let id = h.enqueue("j", json!([i])).await;
        h.store.cancel_job(&id).await.unwrap();
    }
    h.advance(1);
    let three = PruneRequest {
        batch_size: 3,
        ..req(None, None, Some(0))
    };
    assert_eq!(
        h.store.prune(&three).await.unwrap(),
        PruneReport {
            deleted: 7,
            batches: 3
        }
    );
    assert!(h.jobs().await.is_empty());
    for i in 0..2 {
        let id = h.enqueue("j", json!([i])).await;
        h.store.cancel_job(&id).await.unwrap();
    }
    h.advance(1);
    let zero = PruneRequest {
        batch_size: 0,
        ..req(None, None, Some(0))
    };
    assert_eq!(
        h.store.prune(&zero).await.unwrap(),
        PruneReport {
            deleted: 2,
            batches: 2
        },
        "batch size min 1"
    );
}

pub async fn prune_keeps_ownership_and_operations(h: &Harness) {
    let opts = EnqueueOptions::new().idempotency_key("mail-1");
    let op = NewOperation {
        key: "op-1".into(),
        data: json!({"digest": "abc"}),
    };
    let new = job("mail", json!([1]), opts.clone())
        .with_operation(op.clone())
        .unwrap();
    let id = h.insert(new).await;
    h.drive_to(&id, "mail", JobStatus::Completed).await;
    let stored = h
        .store
        .get_operation("op-1")
        .await
        .unwrap()
        .expect("operation");
    h.advance(10);
    assert_eq!(
        h.store
            .prune(&req(Some(0), None, None))
            .await
            .unwrap()
            .deleted,
        1
    );
    assert_eq!(h.store.get_operation("op-1").await.unwrap(), Some(stored));
    let replay = job("mail", json!([1]), opts).with_operation(op).unwrap();
    assert_eq!(
        h.store.enqueue(replay).await.unwrap(),
        EnqueueOutcome::Replayed(id)
    );
    assert!(h.jobs().await.is_empty());
}
