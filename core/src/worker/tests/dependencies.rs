//! Dependencies through the runtime: a batch's callback runs once, after every
//! job of the batch finished whatever its outcome, and reads how they ended and
//! what they returned from its context.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::Mutex;

use super::running::fast;
use super::*;
use crate::inspect::StatusCounts;
use crate::{enqueue_workflow, JobError, JobResult, JobStatus, Registry, Workflow};

/// What the callback read: its dependencies' counts and their outputs.
type Seen = (StatusCounts, Vec<serde_json::Value>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_callback_sees_every_outcome_and_output() {
    let store = store();
    let seen: Arc<Mutex<Option<Seen>>> = Arc::default();
    let seen_by_callback = seen.clone();
    let registry = Registry::new()
        .register_fn("part", |_ctx, args: serde_json::Value| async move {
            match args[0].as_i64() {
                Some(n) if n % 2 == 0 => Ok(JobResult::Output(json!({ "part": n }))),
                _ => Err(JobError::new("odd part").discard()),
            }
        })
        .unwrap()
        .register_fn("sum", move |ctx, _args| {
            let seen = seen_by_callback.clone();
            async move {
                let counts = ctx.dependency_counts().await.map_err(JobError::new)?;
                let outputs = (ctx.dependencies().await.map_err(JobError::new)?)
                    .into_iter()
                    .filter_map(|j| j.output)
                    .collect();
                *seen.lock().await = Some((counts, outputs));
                Ok::<_, JobError>(JobResult::Completed)
            }
        })
        .unwrap();
    let part = |n: i64| NewJob::new("part", json!([n]), EnqueueOptions::new()).unwrap();
    let callback = NewJob::new("sum", json!([]), EnqueueOptions::new()).unwrap();
    let batch = Workflow::batch("parts", (0..4).map(part), callback);
    let outcome = enqueue_workflow(store.as_ref(), batch).await.unwrap();
    let callback_id = outcome.jobs[crate::driver::BATCH_CALLBACK].clone();
    assert_eq!(job(&store, &callback_id).await.status, JobStatus::Pending);

    let worker = fast(store.clone(), registry)
        .concurrency(2)
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_event(&mut events, |e| match e {
        WorkerEvent::Finished(f) if f.job_id == callback_id => Some(()),
        _ => None,
    })
    .await;
    handle.shutdown_and_join().await.unwrap();

    let (counts, mut outputs) = seen.lock().await.take().expect("the callback ran");
    assert_eq!((counts.completed, counts.failed, counts.all), (2, 2, 4));
    outputs.sort_by_key(|o| o["part"].as_i64());
    assert_eq!(outputs, [json!({"part": 0}), json!({"part": 2})]);
    assert_eq!(job(&store, &callback_id).await.status, JobStatus::Completed);
}

/// A round of `run_due` that finishes a fan-out wider than the bound also
/// continues the release backlog it left, so the next round claims it all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_due_round_drains_the_release_backlog_it_left() {
    let store = store();
    let root = enqueue(&store, "root", json!([]), EnqueueOptions::new()).await;
    let width = crate::rules::RELEASE_BATCH + 5;
    let leaves = (0..width)
        .map(|i| NewJob::new("leaf", json!([i]), EnqueueOptions::new().after(&root)).unwrap())
        .collect();
    store.enqueue_batch(leaves).await.unwrap();
    let registry = Registry::new()
        .register_fn("root", |_ctx, _args| async { Ok(()) })
        .unwrap();
    let worker = fast(store.clone(), registry).build().unwrap();
    let round = worker.run_due(10).await.unwrap();
    assert_eq!(round.totals.claimed, 1);
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!(
        (counts.queued, counts.pending),
        (width as i64, 0),
        "every dependent released within the round"
    );
    assert_eq!(store.settle_release_backlog(10).await.unwrap().steps, 0);
}

/// A worker's own report that leaves a release backlog is continued at once,
/// on the store's backlog signal: with the periodic pass an hour away (and its
/// first run, at startup, over before the fan-out exists), only the signal can
/// release the dependents beyond the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_continues_the_backlog_its_report_left_at_once() {
    let store = store();
    let warm = enqueue(&store, "warm", json!([]), EnqueueOptions::new()).await;
    let registry = Registry::new()
        .register_fn("warm", |_ctx, _args| async { Ok(()) })
        .unwrap()
        .register_fn("root", |_ctx, _args| async { Ok(()) })
        .unwrap()
        .register_fn("leaf", |_ctx, _args| async { Ok(()) })
        .unwrap();
    let worker = fast(store.clone(), registry)
        .concurrency(8)
        .recovery_interval(Duration::from_secs(3_600))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_event(&mut events, |e| match e {
        WorkerEvent::Finished(f) if f.job_id == warm => Some(()),
        _ => None,
    })
    .await;

    // The root and its dependents in one batch: the running worker must not
    // finish the root before its dependents exist.
    let root = NewJob::new("root", json!([]), EnqueueOptions::new()).unwrap();
    let width = crate::rules::RELEASE_BATCH + 5;
    let leaves = (0..width)
        .map(|i| NewJob::new("leaf", json!([i]), EnqueueOptions::new().after(root.id())).unwrap());
    let graph: Vec<NewJob> = std::iter::once(root.clone()).chain(leaves).collect();
    store.enqueue_batch(graph).await.unwrap();
    let mut finished = 0;
    while finished <= width {
        next_event(&mut events, |e| {
            matches!(e, WorkerEvent::Finished(_)).then_some(())
        })
        .await;
        finished += 1;
    }
    handle.shutdown_and_join().await.unwrap();
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!((counts.completed, counts.pending), (width as i64 + 2, 0));
}
