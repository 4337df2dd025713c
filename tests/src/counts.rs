//! `docs/counts.md` counts and revisions: the snapshot is exact (it matches the rows), the
//! revision moves by exactly one per committed call that changes a count and not
//! at all otherwise (replays, dedupes, wakes, heartbeats, lost reports, failed
//! calls), and each revision step is published as one matching delta.

use duraq_core::driver::Lease;
use duraq_core::inspect::{CountDelta, CountSnapshot, PruneRequest};
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, Outcome};
use serde_json::json;
use std::time::Duration;
use tokio::sync::broadcast::Receiver;

use crate::harness::{claim_req, expect_err, job, key, next_delta, Harness, WireOptions};

/// Watches the snapshot and the delta stream across one call at a time.
struct Tracker {
    rx: Receiver<CountDelta>,
    last: CountSnapshot,
}

impl Tracker {
    async fn new(h: &Harness) -> Self {
        Self {
            rx: h.store.subscribe_counts(),
            last: h.snapshot().await,
        }
    }

    /// Asserts the call just made moved the revision by `bump` (0 or 1) and, when
    /// it moved, that exactly one delta equal to the snapshot difference arrived.
    async fn check(&mut self, h: &Harness, bump: i64, what: &str) {
        let now = h.snapshot().await;
        assert_eq!(
            now.revision,
            self.last.revision + bump,
            "revision after {what}"
        );
        assert_exact(h, &now).await;
        if bump == 1 {
            let delta = next_delta(&mut self.rx, what).await;
            assert_eq!(delta.revision, now.revision, "delta revision after {what}");
            let diff: Vec<i64> = (0..duraq_core::driver::STATUS_COUNT)
                .map(|i| now.counts.as_array()[i] - self.last.counts.as_array()[i])
                .collect();
            assert_eq!(delta.deltas.as_array().to_vec(), diff, "delta after {what}");
            assert_eq!(
                delta.deltas.all,
                now.counts.all - self.last.counts.all,
                "delta.all after {what}"
            );
        } else {
            assert_eq!(now, self.last, "snapshot after {what}");
        }
        assert!(self.rx.try_recv().is_err(), "extra delta after {what}");
        self.last = now;
    }
}

/// The snapshot agrees with the rows.
async fn assert_exact(h: &Harness, snap: &CountSnapshot) {
    let jobs = h.jobs().await;
    for status in JobStatus::ALL {
        let rows = jobs.iter().filter(|j| j.status == status).count() as i64;
        assert_eq!(snap.counts.get(status), rows, "{status} count");
    }
    assert_eq!(
        (snap.counts.all, snap.total),
        (jobs.len() as i64, jobs.len() as i64)
    );
}

pub async fn fresh_store_is_empty(h: &Harness) {
    let snap = h.snapshot().await;
    assert!(snap.counts.is_zero());
    assert_eq!((snap.total, snap.counts.all), (0, 0));
    assert_eq!(h.snapshot().await, snap, "snapshots are stable");
}

pub async fn revision_per_call(h: &Harness) {
    let mut t = Tracker::new(h).await;
    let a = h.enqueue("j", json!([1])).await;
    t.check(h, 1, "enqueue").await;
    let idem = || {
        job(
            "j",
            json!(["i"]),
            EnqueueOptions::new().idempotency_key("i"),
        )
    };
    h.store.enqueue(idem()).await.unwrap();
    t.check(h, 1, "first idempotent enqueue").await;
    h.store.enqueue(idem()).await.unwrap();
    t.check(h, 0, "idempotent replay").await;
    h.store
        .enqueue(job(
            "j",
            json!([1]),
            EnqueueOptions::new().deduplicate_while_queued(),
        ))
        .await
        .unwrap();
    t.check(h, 0, "dedupe").await;
    let conflict = h
        .store
        .enqueue(job(
            "j",
            json!(["other"]),
            EnqueueOptions::new().idempotency_key("i"),
        ))
        .await;
    expect_err(conflict, ErrorCode::IdempotencyConflict);
    t.check(h, 0, "failed enqueue").await;
    assert!(h.claim("w", &["none"], 5).await.is_empty());
    t.check(h, 0, "empty claim").await;
    let claimed = h.claim("w", &["j"], 5).await;
    assert_eq!(claimed.len(), 2);
    t.check(h, 1, "claim of two jobs").await;
    h.store.heartbeat("w").await.unwrap();
    t.check(h, 0, "heartbeat").await;
    let stale = Lease {
        job_id: a.clone(),
        handoff_id: "stale".into(),
    };
    assert!(!h.report_lease(&stale, Outcome::Completed).await);
    t.check(h, 0, "stale report").await;
    assert!(h.report(&claimed[0], Outcome::failed("x")).await);
    t.check(h, 1, "failed attempt back to queued").await;
    assert!(
        h.report(&claimed[1], Outcome::Reschedule { delay_ms: 5 })
            .await
    );
    t.check(h, 1, "reschedule").await;
    let at = h.now() + 60_000;
    h.store
        .replace_scheduled(
            &key("k"),
            job("k", json!([]), EnqueueOptions::new().scheduled_at_ms(at)),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    t.check(h, 1, "replace without owner").await;
    h.store.wake_scheduled(&key("k")).await.unwrap();
    t.check(h, 0, "wake").await;
    h.replace("k", "k", json!([2])).await;
    t.check(h, 1, "replace of a queued owner").await;
    let owner = h.claim("w", &["k"], 1).await;
    t.check(h, 1, "claim").await;
    h.store
        .cancel_scheduled(&key("k"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    t.check(h, 0, "keyed cancel of a running owner").await;
    h.store
        .cancel_scheduled(&key("k"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    t.check(h, 0, "keyed cancel without owner").await;
    h.store.get_scheduled(&key("k"), true).await.unwrap();
    t.check(h, 0, "get_scheduled").await;
    assert!(h.report(&owner[0], Outcome::ReturnToQueue).await);
    t.check(h, 1, "return to queue").await;
    h.store.cancel_job(&owner[0].id).await.unwrap();
    t.check(h, 1, "cancel_job").await;
    expect_err(
        h.store.cancel_job(&owner[0].id).await,
        ErrorCode::InvalidJobState,
    );
    t.check(h, 0, "failed cancel_job").await;
    h.store.retry_job(&owner[0].id).await.unwrap();
    t.check(h, 1, "retry_job").await;
    assert_eq!(h.store.reconcile_reservations().await.unwrap(), 0);
    t.check(h, 0, "reconcile").await;
}

pub async fn recovery_and_batch_are_one_mutation(h: &Harness) {
    let mut t = Tracker::new(h).await;
    let jobs = (0..3)
        .map(|i| job("j", json!([i]), EnqueueOptions::new().max_retries(i)))
        .collect();
    h.store.enqueue_batch(jobs).await.unwrap();
    t.check(h, 1, "enqueue_batch").await;
    assert_eq!(h.claim_with(&claim_req("dead", &["j"], 3)).await.len(), 3);
    t.check(h, 1, "claim").await;
    h.advance(60_001);
    assert!(h.store.recover_stale(600_000).await.unwrap().is_empty());
    t.check(h, 0, "recover_stale with nothing stale").await;
    assert_eq!(h.store.recover_stale(60_000).await.unwrap().len(), 3);
    t.check(h, 1, "recovery of three leases").await;
    assert_eq!(h.snapshot().await.counts.orphaned, 1);
}

pub async fn report_batch_is_one_mutation(h: &Harness) {
    for i in 0..3 {
        h.enqueue("j", json!([i])).await;
    }
    let claimed = h.claim("w", &["j"], 3).await;
    let mut t = Tracker::new(h).await;
    let stale = Lease {
        job_id: claimed[2].id.clone(),
        handoff_id: "stale".into(),
    };
    let none = vec![(stale.clone(), Outcome::Completed)];
    assert_eq!(h.store.report_batch(none).await.unwrap(), [false]);
    t.check(h, 0, "a batch of lost reports").await;
    let reports = vec![
        (crate::harness::lease(&claimed[0]), Outcome::Completed),
        (stale, Outcome::Completed),
        (crate::harness::lease(&claimed[1]), Outcome::failed("x")),
    ];
    assert_eq!(
        h.store.report_batch(reports).await.unwrap(),
        [true, false, true]
    );
    t.check(h, 1, "report_batch with two applied reports").await;
    assert!(h.store.report_batch(vec![]).await.unwrap().is_empty());
    t.check(h, 0, "an empty report_batch").await;
}

pub async fn prune_is_one_mutation_per_batch(h: &Harness) {
    for i in 0..5 {
        let id = h.enqueue(&format!("j{i}"), json!([])).await;
        h.drive_to(&id, &format!("j{i}"), JobStatus::Completed)
            .await;
    }
    h.advance(10);
    let mut t = Tracker::new(h).await;
    let empty = PruneRequest {
        failed_older_than: Some(Duration::ZERO),
        ..PruneRequest::default()
    };
    assert_eq!(
        h.store.prune(&empty).await.unwrap(),
        duraq_core::inspect::PruneReport {
            deleted: 0,
            batches: 0
        }
    );
    t.check(h, 0, "empty prune").await;
    let req = PruneRequest {
        completed_older_than: Some(Duration::ZERO),
        batch_size: 2,
        ..PruneRequest::default()
    };
    let report = h.store.prune(&req).await.unwrap();
    assert_eq!((report.deleted, report.batches), (5, 3));
    let now = h.snapshot().await;
    assert_eq!(now.revision, t.last.revision + 3, "one revision per batch");
    assert_eq!(now.counts.completed, 0);
    let mut deleted = 0;
    for _ in 0..3 {
        let delta = next_delta(&mut t.rx, "a prune batch").await;
        assert!(delta.deltas.completed < 0);
        deleted -= delta.deltas.completed;
    }
    assert_eq!(deleted, 5);
    assert!(t.rx.try_recv().is_err());
}
