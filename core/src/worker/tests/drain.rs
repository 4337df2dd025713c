//! Graceful shutdown: running jobs finish within the drain deadline and are
//! reported; past it they go back to the queue without using an attempt.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::*;
use crate::{EnqueueOptions, JobStatus, Outcome, Registry, Worker};

#[tokio::test]
async fn running_jobs_finish_during_the_drain() {
    let store = store();
    let registry = Registry::new()
        .register_fn("until-shutdown", |ctx, _a| async move {
            ctx.shutting_down().await;
            Ok(())
        })
        .unwrap();
    let id = enqueue(&store, "until-shutdown", json!([]), EnqueueOptions::new()).await;
    let worker = Worker::builder(store.clone(), registry)
        .drain_timeout(PATIENCE)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    handle.shutdown();
    let report = handle.join().await.unwrap();
    assert_eq!((report.completed, report.returned_to_queue), (1, 0));
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
}

#[tokio::test]
async fn no_new_claims_after_shutdown_begins() {
    let store = store();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    let registry = Registry::new()
        .register_fn("gated", move |ctx, _a| {
            let release = r.clone();
            async move {
                ctx.shutting_down().await;
                // Enqueued now, while the worker drains: it must stay queued.
                let late = NewJob::new("gated", json!("late"), EnqueueOptions::new()).unwrap();
                ctx.store().enqueue(late).await?;
                release.notified().await;
                Ok(())
            }
        })
        .unwrap();
    enqueue(&store, "gated", json!("first"), EnqueueOptions::new()).await;
    let worker = Worker::builder(store.clone(), registry)
        .poll_interval(Duration::from_millis(10))
        .drain_timeout(PATIENCE)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    handle.shutdown();
    release.notify_one();
    let report = handle.join().await.unwrap();
    assert_eq!((report.claimed, report.completed), (1, 1));
    let queued = store
        .search_jobs(&crate::inspect::JobFilter {
            statuses: vec![JobStatus::Queued],
            ..Default::default()
        })
        .await
        .unwrap()
        .jobs;
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].args, json!("late"));
}

#[tokio::test]
async fn jobs_past_the_deadline_return_to_the_queue() {
    let store = store();
    let registry = Registry::new()
        .register_fn("stuck", |_c, _a| async {
            std::future::pending::<()>().await;
            Ok(())
        })
        .unwrap()
        .register_fn("quick", |_c, _a| async { Ok(()) })
        .unwrap();
    let stuck = enqueue(&store, "stuck", json!([]), EnqueueOptions::new()).await;
    let worker = Worker::builder(store.clone(), registry)
        .drain_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    handle.shutdown();
    let f = next_finished(&mut events).await;
    assert_eq!((f.outcome, f.accepted), (Outcome::ReturnToQueue, true));
    let report = handle.join().await.unwrap();
    assert_eq!(
        (
            report.returned_to_queue,
            report.completed,
            report.unreported
        ),
        (1, 0, 0)
    );
    let row = job(&store, &stuck).await;
    assert_eq!(
        (row.status, row.attempts, row.last_error),
        (JobStatus::Queued, 0, None)
    );
}

#[tokio::test]
async fn run_takes_any_shutdown_future() {
    let store = store();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let id = enqueue(&store, "noop", json!([]), EnqueueOptions::new()).await;
    let worker = Worker::builder(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(worker.run(async {
        let _ = stopped.await;
    }));
    next_finished(&mut events).await;
    stop.send(()).unwrap();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.completed, 1);
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
    // Once the worker is gone, subscribers see the end of the stream.
    let closed = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Err(tokio::sync::broadcast::error::RecvError::Closed) = events.recv().await {
                break;
            }
        }
    });
    closed.await.expect("event stream closes after run returns");
}
