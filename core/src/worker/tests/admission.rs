//! Slot admission, queue caps, fencing and recovery.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, Notify};

use super::running::fast;
use super::*;
use crate::driver::ClaimRequest;
use crate::inspect::JobFilter;
use crate::{EnqueueOptions, JobStatus, Outcome, QueueConfig, Registry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_are_never_exceeded() {
    const SLOTS: usize = 3;
    let store = store();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let registry = Registry::new()
        .register_fn("work", move |ctx, _a| {
            let (running, peak) = (r.clone(), p.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // The store agrees: this worker never holds more than its slots.
                let filter = JobFilter {
                    statuses: vec![JobStatus::HandedOff],
                    ..Default::default()
                };
                let held = ctx.store().search_jobs(&filter).await.unwrap().jobs.len();
                assert!(held <= SLOTS, "{held} jobs handed off");
                tokio::task::yield_now().await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .unwrap();
    // `prefetch(0)`: the promise under test is holding no more than the slots.
    let worker = fast(store.clone(), registry)
        .concurrency(SLOTS)
        .prefetch(0)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    // Enqueue in bursts while the worker runs: many concurrent wake-ups.
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..15 {
                    enqueue(&store, "work", json!([p, i]), EnqueueOptions::new()).await;
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    let done = finished(&mut events, 60).await;
    let report = handle.shutdown_and_join().await.unwrap();
    assert!(done.iter().all(|f| f.outcome == Outcome::Completed));
    assert_eq!(report.completed, 60);
    let peak = peak.load(Ordering::SeqCst);
    assert!((1..=SLOTS).contains(&peak), "peak {peak}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_cap_is_respected_and_blocks_nothing_else() {
    let store = store();
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("mail", move |_c, _a| {
            let gate = g.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .unwrap()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let mut mail = Vec::new();
    for i in 0..3 {
        mail.push(
            enqueue(
                &store,
                "mail",
                json!([i]),
                EnqueueOptions::new().queue("mail"),
            )
            .await,
        );
    }
    let worker = fast(store.clone(), registry)
        .concurrency(8)
        .queue(
            "mail",
            QueueConfig {
                max_concurrent: Some(2),
                priority: 10,
            },
        )
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let started = [
        next_started(&mut events).await,
        next_started(&mut events).await,
    ];
    assert!(started.iter().all(|s| s.queue == "mail"));
    // With the cap full, another queue's job still runs.
    let other = enqueue(&store, "noop", json!([]), EnqueueOptions::new()).await;
    let f = next_finished(&mut events).await;
    assert_eq!(f.job_id, other);
    let queued: Vec<_> = {
        let mut q = Vec::new();
        for id in &mail {
            q.push(job(&store, id).await.status);
        }
        q
    };
    assert_eq!(
        queued
            .iter()
            .filter(|s| **s == JobStatus::HandedOff)
            .count(),
        2
    );
    assert_eq!(
        queued.iter().filter(|s| **s == JobStatus::Queued).count(),
        1
    );
    // Releasing one slot of the cap lets the third run.
    let mut remaining = 3;
    while remaining > 0 {
        gate.notify_one();
        let f = next_finished(&mut events).await;
        assert_eq!(f.queue, "mail");
        remaining -= 1;
    }
    handle.shutdown_and_join().await.unwrap();
    for id in &mail {
        assert_eq!(job(&store, id).await.status, JobStatus::Completed);
    }
}

#[tokio::test]
async fn a_late_report_after_recovery_changes_nothing() {
    let (store, clock) = manual_store();
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("long", move |_c, _a| {
            let gate = g.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .unwrap();
    let id = enqueue(&store, "long", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .stale_after(Duration::from_secs(3600)) // its own loops stay quiet
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    // Another process decides this worker is dead and recovers the lease.
    clock.advance(120_000);
    assert_eq!(store.recover_stale(60_000).await.unwrap(), vec![id.clone()]);
    gate.notify_one();
    let f = next_finished(&mut events).await;
    assert_eq!((f.outcome, f.accepted), (Outcome::Completed, false));
    let row = job(&store, &id).await;
    assert_eq!(
        row.status,
        JobStatus::Queued,
        "the late completion was fenced off"
    );
    assert!(row.last_error.unwrap().contains("stopped heartbeating"));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.lost_leases, report.completed), (1, 0));
}

#[tokio::test]
async fn startup_recovers_dead_workers_and_runs_their_jobs() {
    let (store, clock) = manual_store();
    let id = enqueue(&store, "orphan", json!([]), EnqueueOptions::new()).await;
    let req = ClaimRequest {
        worker_id: "ghost".into(),
        job_names: vec!["orphan".into()],
        limit: 1,
        ..Default::default()
    };
    assert_eq!(store.claim(&req).await.unwrap().len(), 1);
    clock.advance(61_000);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let registry = Registry::new()
        .register_fn("orphan", move |ctx, _a| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.attempt()).unwrap();
                Ok(())
            }
        })
        .unwrap();
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let recovered = next_event(&mut events, |e| match e {
        WorkerEvent::Recovered { job_ids } => Some(job_ids),
        _ => None,
    })
    .await;
    assert_eq!(recovered, vec![id.clone()]);
    clock.advance(10_000); // the recovery's retry backoff
    let attempt = tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(attempt, 2, "the lost attempt counted");
    next_finished(&mut events).await;
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.recovered, report.completed), (1, 1));
}

#[tokio::test]
async fn a_queue_filter_limits_what_is_claimed() {
    let store = store();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let mine = enqueue(&store, "noop", json!([1]), EnqueueOptions::new().queue("a")).await;
    let default = enqueue(&store, "noop", json!([2]), EnqueueOptions::new()).await;
    let other = enqueue(&store, "noop", json!([3]), EnqueueOptions::new().queue("b")).await;
    let worker = fast(store.clone(), registry)
        .queues([" a ", ""])
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let mut done: Vec<String> = finished(&mut events, 2)
        .await
        .into_iter()
        .map(|f| f.job_id)
        .collect();
    done.sort();
    let mut expected = vec![mine, default];
    expected.sort();
    assert_eq!(done, expected, "queue `a` and the normalized default queue");
    handle.shutdown_and_join().await.unwrap();
    assert_eq!(job(&store, &other).await.status, JobStatus::Queued);
}
