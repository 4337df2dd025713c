//! Counts per queue: `queue_snapshot` is exact per (queue, status) after
//! every kind of transition, shares the global snapshot's revision, leaves out
//! queues without jobs, is untouched by rolled-back calls, and reports each
//! queue's latency (the age of its oldest due queued job).

use std::collections::BTreeMap;
use std::time::Duration;

use duraq_core::driver::ClaimRequest;
use duraq_core::inspect::{PruneRequest, QueueSnapshot, StatusCounts};
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, Outcome};
use serde_json::json;

use crate::harness::{claim_req, expect_err, job, key, lease, next_delta, Harness, WireOptions};

async fn queue_snapshot(h: &Harness) -> QueueSnapshot {
    h.store.queue_snapshot().await.expect("queue_snapshot")
}

/// The queue snapshot agrees with the rows, queue by queue, and with the global
/// snapshot (same counts, same revision).
async fn assert_exact(h: &Harness, what: &str) -> QueueSnapshot {
    let snap = queue_snapshot(h).await;
    let global = h.snapshot().await;
    assert_eq!(snap.count_snapshot(), global, "global part after {what}");
    let mut expected: BTreeMap<String, [i64; duraq_core::driver::STATUS_COUNT]> = BTreeMap::new();
    for j in h.jobs().await {
        expected.entry(j.queue.clone()).or_default()[j.status.index()] += 1;
    }
    let expected: Vec<(String, StatusCounts)> = expected
        .into_iter()
        .map(|(q, c)| (q, StatusCounts::from_array(c)))
        .collect();
    let actual: Vec<(String, StatusCounts)> = snap
        .queues
        .iter()
        .map(|q| (q.queue.clone(), q.counts))
        .collect();
    assert_eq!(actual, expected, "per-queue counts after {what}");
    assert_eq!(snap.at_ms, h.now(), "at_ms after {what}");
    snap
}

fn in_queue(queue: &str) -> EnqueueOptions {
    EnqueueOptions::new().queue(queue)
}

fn claim_in(worker: &str, name: &str, queue: &str, limit: usize) -> ClaimRequest {
    ClaimRequest {
        queues: Some(vec![queue.to_owned()]),
        ..claim_req(worker, &[name], limit)
    }
}

pub async fn per_queue_counts_follow_every_transition(h: &Harness) {
    assert!(assert_exact(h, "nothing").await.queues.is_empty());
    for (i, queue) in ["mail", "mail", "mail", "video", "video"]
        .into_iter()
        .enumerate()
    {
        h.enqueue_with("j", json!([i]), in_queue(queue).max_retries(1))
            .await;
    }
    let r0 = assert_exact(h, "enqueue").await.revision;
    let mail = h.claim_with(&claim_in("w", "j", "mail", 3)).await;
    assert_eq!(mail.len(), 3);
    let snap = assert_exact(h, "claim").await;
    assert_eq!(snap.revision, r0 + 1);
    assert_eq!(snap.queue("mail").unwrap().counts.handed_off, 3);
    assert_eq!(snap.queue("video").unwrap().counts.queued, 2);

    assert!(h.report(&mail[0], Outcome::Completed).await);
    assert_exact(h, "complete").await;
    assert!(h.report(&mail[1], Outcome::failed("x")).await);
    let snap = assert_exact(h, "failure with a retry left").await;
    assert_eq!(snap.queue("mail").unwrap().counts.queued, 1);
    h.store.cancel_job(&mail[2].id).await.unwrap();
    assert_exact(h, "cancel of a running job").await;

    // Orphan recovery: the retried mail job (its last retry) claimed by a worker
    // that dies.
    h.advance(3_600_000);
    let claimed = h.claim_with(&claim_in("dead", "j", "mail", 1)).await;
    assert_eq!(claimed.len(), 1);
    h.advance(60_001);
    assert_eq!(h.store.recover_stale(60_000).await.unwrap().len(), 1);
    let snap = assert_exact(h, "orphaning recovery").await;
    assert_eq!(snap.queue("mail").unwrap().counts.orphaned, 1);

    h.store.retry_job(&mail[2].id).await.unwrap();
    let snap = assert_exact(h, "retry_job").await;
    let counts = snap.queue("mail").unwrap().counts;
    assert_eq!((counts.queued, counts.cancelled), (1, 0));

    // Replace moves a keyed job from one queue to another: the old owner is
    // cancelled in its queue, the new one queued in its own.
    h.store
        .replace_scheduled(
            &key("k"),
            job("k", json!([1]), in_queue("reports")),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_exact(h, "replace without owner").await;
    h.store
        .replace_scheduled(
            &key("k"),
            job("k", json!([2]), in_queue("digest")),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let snap = assert_exact(h, "replace").await;
    assert_eq!(snap.queue("reports").unwrap().counts.cancelled, 1);
    assert_eq!(snap.queue("digest").unwrap().counts.queued, 1);

    // Pruning every terminal job of "reports" leaves the queue out.
    h.advance(10);
    let req = PruneRequest {
        completed_older_than: Some(Duration::ZERO),
        failed_older_than: Some(Duration::ZERO),
        cancelled_older_than: Some(Duration::ZERO),
        batch_size: 1,
    };
    let report = h.store.prune(&req).await.unwrap();
    assert!(report.deleted >= 3, "{report:?}");
    let snap = assert_exact(h, "prune").await;
    assert!(snap.queue("reports").is_none(), "{snap:?}");
    assert_eq!(snap.queue("mail").unwrap().counts.completed, 0);
}

pub async fn revision_is_shared_and_rollbacks_change_nothing(h: &Harness) {
    h.enqueue_with("j", json!([1]), in_queue("a").idempotency_key("i"))
        .await;
    let before = assert_exact(h, "enqueue").await;
    // A batch whose last job conflicts: nothing of it is committed.
    let batch = vec![
        job("j", json!([2]), in_queue("b")),
        job("j", json!([3]), in_queue("a").idempotency_key("i")),
    ];
    expect_err(
        h.store.enqueue_batch(batch).await,
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(queue_snapshot(h).await, before, "after a rolled-back batch");
    let id = h.jobs().await[0].id.clone();
    expect_err(h.store.retry_job(&id).await, ErrorCode::InvalidJobState);
    h.store.wake_scheduled(&key("none")).await.unwrap();
    assert_eq!(queue_snapshot(h).await, before, "after failed calls");
    h.enqueue_with("j", json!([4]), in_queue("b")).await;
    let after = assert_exact(h, "second enqueue").await;
    assert_eq!(after.revision, before.revision + 1);
}

/// A report that puts a job of one queue back and a claim of another queue's job,
/// in one mutation, leave the global counts as they were but not the per-queue
/// ones: the revision moves once, with an all-zero global delta.
pub async fn cross_queue_net_zero_moves_the_revision(h: &Harness) {
    h.enqueue_with("j", json!([1]), in_queue("a")).await;
    let a = h.claim_with(&claim_in("w", "j", "a", 1)).await;
    h.enqueue_with("j", json!([2]), in_queue("b")).await;
    let before = assert_exact(h, "setup").await;
    let mut rx = h.store.subscribe_counts();
    let done = h
        .store
        .report_and_claim(
            vec![(lease(&a[0]), Outcome::ReturnToQueue)],
            &claim_in("w", "j", "b", 1),
        )
        .await
        .unwrap();
    assert_eq!((done.reported, done.claimed.len()), (vec![true], 1));
    let after = assert_exact(h, "report_and_claim").await;
    assert_eq!(after.counts, before.counts, "global counts net out");
    if after.revision == before.revision + 2 {
        // The default report_and_claim: two mutations (report, then claim).
        return;
    }
    assert_eq!(after.revision, before.revision + 1);
    let delta = next_delta(&mut rx, "report_and_claim").await;
    assert_eq!(
        (delta.revision, delta.deltas.is_zero()),
        (after.revision, true)
    );
}

pub async fn latency_is_the_age_of_the_oldest_due_job(h: &Harness) {
    let t0 = h.now();
    h.enqueue_with("j", json!([1]), in_queue("due")).await;
    h.enqueue_with("j", json!([2]), in_queue("due").scheduled_at_ms(t0 - 5_000))
        .await;
    h.enqueue_with(
        "j",
        json!([3]),
        in_queue("later").scheduled_at_ms(t0 + 60_000),
    )
    .await;
    let done = h.enqueue_with("d", json!([4]), in_queue("done")).await;
    h.drive_to(done.job_id(), "d", JobStatus::Completed).await;
    h.advance(3_000);
    let snap = assert_exact(h, "setup").await;
    assert_eq!(snap.queue("due").unwrap().latency_ms, Some(8_000));
    assert_eq!(snap.queue("later").unwrap().latency_ms, None, "not due yet");
    assert_eq!(
        snap.queue("done").unwrap().latency_ms,
        None,
        "no queued job"
    );
    assert!(snap.queue("empty").is_none());
    // Due exactly now: latency 0, not "none".
    h.advance(57_000);
    let snap = queue_snapshot(h).await;
    assert_eq!(snap.queue("later").unwrap().latency_ms, Some(0));
    // Claiming the oldest moves the latency to the next one.
    let claimed = h.claim_with(&claim_in("w", "j", "due", 1)).await;
    assert_eq!(claimed[0].scheduled_at_ms, t0 - 5_000);
    let snap = queue_snapshot(h).await;
    assert_eq!(
        snap.queue("due").unwrap().latency_ms,
        Some(h.now() - t0),
        "the remaining job's age"
    );
}
