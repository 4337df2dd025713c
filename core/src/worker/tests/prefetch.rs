//! Claiming ahead of the slots (`WorkerBuilder::prefetch`): never more attempts
//! than slots, never more jobs held than slots plus prefetch, the waiting jobs
//! given back unstarted at shutdown, and a waiting job whose lease is gone
//! never started.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::Semaphore;

use super::running::fast;
use super::*;
use crate::driver::LeaseLoss;
use crate::{EnqueueOptions, JobContext, JobStatus, Registry};

async fn counts(store: &Arc<dyn Store>) -> (i64, i64, i64) {
    let c = store.count_snapshot().await.unwrap().counts;
    (
        c.get(JobStatus::Queued),
        c.get(JobStatus::HandedOff),
        c.get(JobStatus::Completed),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_never_outnumber_slots_and_held_jobs_never_outnumber_slots_plus_prefetch() {
    let store = store();
    let gate = Arc::new(Semaphore::new(0));
    let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel();
    let (g, r, p) = (gate.clone(), running.clone(), peak.clone());
    let registry = Registry::new()
        .register_fn("gated", move |_ctx, _a| {
            let (gate, running, peak, entered) =
                (g.clone(), r.clone(), p.clone(), entered_tx.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                let _ = entered.send(());
                gate.acquire().await.unwrap().forget();
                running.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .unwrap();
    for i in 0..20 {
        enqueue(&store, "gated", json!([i]), EnqueueOptions::new()).await;
    }
    let worker = fast(store.clone(), registry)
        .concurrency(2)
        .prefetch(3)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    // Both slots busy (their handlers entered): one claim of slots + prefetch,
    // two run, three wait in the worker.
    entered.recv().await.unwrap();
    entered.recv().await.unwrap();
    assert_eq!(counts(&store).await, (15, 5, 0));
    gate.add_permits(20);
    for _ in 0..20 {
        next_finished(&mut events).await;
    }
    assert_eq!(counts(&store).await, (0, 0, 20));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "never more attempts than slots"
    );
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(
        (report.claimed, report.completed, report.returned_unstarted),
        (20, 20, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_claimed_ahead_go_back_unstarted_at_shutdown_without_using_an_attempt() {
    let store = store();
    let registry = Registry::new()
        .register_fn("until-shutdown", |ctx: JobContext, _a| async move {
            ctx.shutting_down().await;
            Ok(())
        })
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(enqueue(&store, "until-shutdown", json!([i]), EnqueueOptions::new()).await);
    }
    let worker = fast(store.clone(), registry)
        .concurrency(1)
        .prefetch(3)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let started = next_started(&mut events).await;
    assert_eq!(counts(&store).await, (2, 4, 0));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(
        (report.claimed, report.completed, report.returned_unstarted),
        (4, 1, 3)
    );
    assert_eq!(
        report.returned_to_queue, 0,
        "nothing reached the drain deadline"
    );
    assert_eq!(counts(&store).await, (5, 0, 1));
    for id in &ids {
        let row = job(&store, id).await;
        if *id == started.job_id {
            assert_eq!((row.status, row.attempts), (JobStatus::Completed, 1));
        } else {
            assert_eq!((row.status, row.attempts), (JobStatus::Queued, 0), "{id}");
            assert_eq!((row.worker_id, row.handoff_id), (None, None));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_job_whose_lease_is_gone_never_starts() {
    let store = store();
    let gate = Arc::new(Semaphore::new(0));
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("gated", move |_ctx, _a| {
            let gate = g.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                Ok(())
            }
        })
        .unwrap();
    let first = enqueue(&store, "gated", json!([1]), EnqueueOptions::new()).await;
    let second = enqueue(&store, "gated", json!([2]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .concurrency(1)
        .prefetch(1)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    assert_eq!(next_started(&mut events).await.job_id, first);
    assert_eq!(counts(&store).await, (0, 2, 0));
    store.cancel_job(&second).await.unwrap();
    let lost = next_event(&mut events, |e| match e {
        WorkerEvent::LeaseLost { job_id, loss } => Some((job_id, loss)),
        _ => None,
    })
    .await;
    assert_eq!(lost, (second.clone(), LeaseLoss::Cancelled));
    gate.add_permits(1);
    let f = next_finished(&mut events).await;
    assert_eq!((f.job_id, f.accepted), (first, true));
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.claimed, report.completed), (2, 1));
    assert_eq!((report.cancelled, report.returned_unstarted), (0, 0));
    assert_eq!(job(&store, &second).await.status, JobStatus::Cancelled);
    // It never started: no event names it.
    while let Ok(event) = events.try_recv() {
        if let WorkerEvent::Started(s) = event {
            assert_ne!(s.job_id, second);
        }
    }
}

/// The default, adaptive prefetch: a backlog of jobs that end one at a time
/// (long jobs) never makes the worker claim ahead; it holds its slots' worth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_long_jobs_are_never_claimed_ahead() {
    const SLOTS: usize = 8;
    let store = store();
    let gate = Arc::new(Semaphore::new(0));
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel();
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("long", move |_ctx, _a| {
            let (gate, entered) = (g.clone(), entered_tx.clone());
            async move {
                let _ = entered.send(());
                gate.acquire().await.unwrap().forget();
                Ok(())
            }
        })
        .unwrap();
    for i in 0..40 {
        enqueue(&store, "long", json!([i]), EnqueueOptions::new()).await;
    }
    let worker = fast(store.clone(), registry)
        .concurrency(SLOTS)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    for _ in 0..SLOTS {
        entered.recv().await.unwrap();
    }
    assert_eq!(counts(&store).await, (32, 8, 0));
    // One ends at a time; each time its report refills its slot, and the
    // full refills of a slowly turning backlog never grow an allowance.
    for done in 1..=12 {
        gate.add_permits(1);
        next_finished(&mut events).await;
        entered.recv().await.unwrap();
        assert_eq!(counts(&store).await, (32 - done, 8, done), "after {done}");
    }
    gate.add_permits(40);
    for _ in 12..40 {
        next_finished(&mut events).await;
    }
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.claimed, report.completed), (40, 40));
}
