//! `docs/workflows.md`, "Cost": a fan-out of one job to thousands of dependents
//! is released in bounded transactions. The transaction that finishes the job
//! walks at most [`RELEASE_BATCH`] of its edges and leaves a release backlog
//! entry; [`WorkerStore::settle_release_backlog`] continues it, a bounded
//! transaction per step, until nothing is left. Counts are exact after every
//! transaction; nothing is released twice, early or never; a cascade goes
//! through the same backlog; an operator retry drops the entry, a delete too;
//! and a running worker drains a wide fan-out on its own.
//!
//! [`WorkerStore::settle_release_backlog`]: duraq_core::WorkerStore::settle_release_backlog

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::driver::rules::RELEASE_BATCH;
use duraq_core::driver::BacklogProgress;
use duraq_core::inspect::BulkAction;
use duraq_core::worker::WorkerEvent;
use duraq_core::{Clock, DependencyFailure, EnqueueOptions, JobStatus, Registry, Worker};
use serde_json::json;

use crate::harness::{job, Harness};

/// Wider than two bounds, so the backlog takes two more steps.
const WIDTH: usize = 2 * RELEASE_BATCH + RELEASE_BATCH / 2;
const QUEUE: &str = "fan";
/// Turns a hang into a failure; a correct run never waits this long.
const PATIENCE: Duration = Duration::from_secs(120);

/// `n` dependents of `root` named `leaf`, in queue [`QUEUE`], enqueued in one batch.
async fn fan_out(h: &Harness, root: &str, n: usize, policy: DependencyFailure) -> Vec<String> {
    let jobs = (0..n)
        .map(|i| {
            let opts = EnqueueOptions::new()
                .queue(QUEUE)
                .after(root)
                .on_dependency_failure(policy);
            job("leaf", json!([i]), opts)
        })
        .collect();
    let outcomes = h.store.enqueue_batch(jobs).await.expect("enqueue_batch");
    outcomes.iter().map(|o| o.job_id().to_owned()).collect()
}

/// (queued, pending, cancelled) of [`QUEUE`], checked against the global
/// counts' share of the dependents.
async fn fan_counts(h: &Harness) -> (i64, i64, i64) {
    let snap = h.store.queue_snapshot().await.expect("queue_snapshot");
    let c = &snap.queue(QUEUE).expect("the fan queue").counts;
    (c.queued, c.pending, c.cancelled)
}

async fn settle(h: &Harness, max_steps: usize) -> BacklogProgress {
    h.store
        .settle_release_backlog(max_steps)
        .await
        .expect("settle_release_backlog")
}

/// Every dependent in `ids` has `status`.
async fn all_are(h: &Harness, ids: &[String], status: JobStatus) {
    for id in ids {
        assert_eq!(h.get(id).await.status, status, "dependent {id}");
    }
}

pub async fn a_wide_fan_out_is_released_in_bounded_steps(h: &Harness) {
    let root = h.enqueue("root", json!([])).await;
    let other = h.enqueue("other", json!([])).await;
    let leaves = fan_out(h, &root, WIDTH, DependencyFailure::Cancel).await;
    // One more dependent also waits for `other`: never released early.
    let opts = EnqueueOptions::new()
        .queue(QUEUE)
        .after(&root)
        .after(&other);
    let both = h.enqueue_with("leaf", json!(["both"]), opts).await;
    let both = both.job_id().to_owned();
    let total = WIDTH as i64 + 1;
    assert_eq!(fan_counts(h).await, (0, total, 0));

    let signal = h.store.release_backlog_signal();
    let before = h.revision().await;
    h.drive_to(&root, "root", JobStatus::Completed).await;
    assert!(h.revision().await > before);
    assert!(
        signal.has_changed().unwrap(),
        "the backlog entry is signalled"
    );
    let (queued, pending, _) = fan_counts(h).await;
    assert_eq!(
        queued + pending,
        total,
        "every dependent is queued or pending"
    );
    assert!(
        queued <= RELEASE_BATCH as i64 && queued >= RELEASE_BATCH as i64 - 1,
        "the finishing transaction released at most the bound: {queued}"
    );
    let snap = h.snapshot().await;
    assert_eq!(
        (snap.counts.queued, snap.counts.pending),
        (queued + 1, pending)
    );

    // One step at a time: each one mutation, exact counts, at most the bound.
    let mut released = queued;
    loop {
        let before = h.revision().await;
        let step = settle(h, 1).await;
        if step.steps == 0 {
            assert!(!step.more);
            assert_eq!(h.revision().await, before, "an empty call changes nothing");
            break;
        }
        assert_eq!(step.steps, 1);
        assert!(step.edges <= RELEASE_BATCH, "{step:?}");
        let (queued, pending, _) = fan_counts(h).await;
        assert_eq!(queued + pending, total);
        assert!(queued - released <= RELEASE_BATCH as i64);
        if queued > released {
            assert_eq!(h.revision().await, before + 1, "one mutation per step");
        }
        released = queued;
    }
    assert_eq!(fan_counts(h).await, (total - 1, 1, 0));
    all_are(h, &leaves, JobStatus::Queued).await;
    let waiting = h.get(&both).await;
    assert_eq!(
        (waiting.status, waiting.open_dependencies),
        (JobStatus::Pending, 1),
        "still waits for its other dependency"
    );
    let progress = settle(h, 10).await;
    assert_eq!(progress, BacklogProgress::default(), "nothing left");

    h.drive_to(&other, "other", JobStatus::Completed).await;
    assert_eq!(h.get(&both).await.status, JobStatus::Queued);
    let claimed = h.claim("w", &["leaf"], WIDTH + 10).await;
    let ids: HashSet<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids.len(), WIDTH + 1, "every dependent claimed once");
}

pub async fn a_failure_cascades_through_the_backlog(h: &Harness) {
    let root = h.enqueue("root", json!([])).await;
    let leaves = fan_out(h, &root, WIDTH, DependencyFailure::Cancel).await;
    // Grandchildren of one dependent: cancelled in turn, or run under `run`.
    let mid = &leaves[WIDTH / 2];
    let strict = EnqueueOptions::new().queue(QUEUE).after(mid);
    let strict = h.enqueue_with("grand", json!([1]), strict).await;
    let lenient = EnqueueOptions::new()
        .queue(QUEUE)
        .after(mid)
        .on_dependency_failure(DependencyFailure::Run);
    let lenient = h.enqueue_with("grand", json!([2]), lenient).await;
    let total = WIDTH as i64 + 2;

    h.drive_to(&root, "root", JobStatus::Failed).await;
    let (queued, pending, cancelled) = fan_counts(h).await;
    assert_eq!(queued + pending + cancelled, total);
    assert!(
        (1..=RELEASE_BATCH as i64).contains(&cancelled),
        "the first transaction cancels at most the bound: {cancelled}"
    );
    assert!(pending > 0, "the rest waits for the backlog");
    assert_eq!(h.snapshot().await.counts.cancelled, cancelled);

    let progress = settle(h, usize::MAX).await;
    assert!(progress.steps >= 2 && !progress.more, "{progress:?}");
    assert_eq!(fan_counts(h).await, (1, 0, total - 1));
    all_are(h, &leaves, JobStatus::Cancelled).await;
    let row = h.get(mid).await;
    assert!(
        row.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with(duraq_core::driver::rules::CANCELLED_BY_DEPENDENCY)),
        "{:?}",
        row.last_error
    );
    assert_eq!(h.get(strict.job_id()).await.status, JobStatus::Cancelled);
    assert_eq!(h.get(lenient.job_id()).await.status, JobStatus::Queued);
    assert_eq!(settle(h, 10).await.steps, 0);
}

pub async fn a_retry_mid_backlog_drops_the_entry_and_the_rest_waits(h: &Harness) {
    let root = h.enqueue("root", json!([])).await;
    let leaves = fan_out(h, &root, WIDTH, DependencyFailure::Cancel).await;
    h.drive_to(&root, "root", JobStatus::Failed).await;
    let (_, pending, cancelled) = fan_counts(h).await;
    assert!(cancelled > 0 && pending > 0, "mid-backlog");

    let before = h.revision().await;
    h.store.retry_job(&root).await.expect("retry_job");
    assert_eq!(h.revision().await, before + 1, "one mutation");
    assert_eq!(
        settle(h, 10).await.steps,
        0,
        "the entry went with the retry"
    );
    assert_eq!(fan_counts(h).await, (0, WIDTH as i64, 0));
    for id in &leaves {
        let row = h.get(id).await;
        assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    }

    h.drive_to(&root, "root", JobStatus::Completed).await;
    let progress = settle(h, usize::MAX).await;
    assert!(progress.steps >= 2 && !progress.more, "{progress:?}");
    assert_eq!(fan_counts(h).await, (WIDTH as i64, 0, 0));
    let claimed = h.claim("w", &["leaf"], WIDTH + 10).await;
    let ids: HashSet<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids.len(), WIDTH, "each released exactly once");
}

pub async fn deleting_a_job_drops_its_backlog_entry(h: &Harness) {
    let root = h.enqueue("root", json!([])).await;
    fan_out(h, &root, WIDTH, DependencyFailure::Cancel).await;
    h.drive_to(&root, "root", JobStatus::Completed).await;
    let (queued, pending, _) = fan_counts(h).await;
    let batch = h
        .store
        .act_on_jobs(BulkAction::Delete, std::slice::from_ref(&root))
        .await
        .expect("delete");
    assert_eq!(batch.changed, 1);
    let before = h.state().await;
    assert_eq!(settle(h, 10).await.steps, 0, "the entry went with its job");
    h.assert_unchanged(&before, "an empty backlog").await;
    assert_eq!(fan_counts(h).await, (queued, pending, 0));
}

pub async fn a_worker_drains_a_wide_fan_out(h: &Harness) {
    let root = h.enqueue("root", json!([])).await;
    let leaves = fan_out(h, &root, WIDTH, DependencyFailure::Cancel).await;
    let ran: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = ran.clone();
    let registry = Registry::new()
        .register_fn("root", |_ctx, _args| async { Ok(()) })
        .and_then(|r| {
            r.register_fn("leaf", move |ctx, _args| {
                seen.lock().unwrap().push(ctx.job_id().to_owned());
                async { Ok(()) }
            })
        })
        .expect("registry");
    let clock: Arc<dyn Clock> = Arc::new(h.clock.clone());
    let worker = Worker::builder(h.store.clone(), registry)
        .clock(clock)
        .concurrency(8)
        .build()
        .expect("worker");
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let mut finished = 0;
    while finished < WIDTH + 1 {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("the fan-out drains within the patience")
            .expect("worker events");
        if let WorkerEvent::Finished(done) = event {
            assert!(done.accepted, "{done:?}");
            finished += 1;
        }
    }
    handle.shutdown_and_join().await.expect("worker");
    let ran = ran.lock().unwrap().clone();
    let unique: HashSet<&String> = ran.iter().collect();
    assert_eq!((ran.len(), unique.len()), (WIDTH, WIDTH), "each ran once");
    assert_eq!(fan_counts(h).await, (0, 0, 0));
    assert_eq!(h.snapshot().await.counts.completed, WIDTH as i64 + 1);
    all_are(h, &leaves[..3], JobStatus::Completed).await;
    assert_eq!(settle(h, 10).await.steps, 0);
}
