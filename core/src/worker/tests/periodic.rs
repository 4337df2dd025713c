//! Periodic jobs: many workers, one job per tick.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::*;
use crate::inspect::JobFilter;
use crate::worker::{PeriodicSchedule, RetentionPolicy};
use crate::{EnqueueOptions, JobStatus, PeriodicJob, Registry, Worker};

#[test]
fn every_ticks_are_aligned_to_the_epoch() {
    let s = PeriodicSchedule::Every(Duration::from_secs(60));
    assert_eq!(s.next_after_ms(59_999), Some(60_000));
    assert_eq!(s.next_after_ms(60_000), Some(120_000));
    let job = PeriodicJob::every("sweep", Duration::from_secs(60), "app.sweep").unwrap();
    assert_eq!(job.tick_key(120_000), "periodic:sweep:120000");
    let new_job = job.tick_job(120_000).unwrap();
    assert_eq!(new_job.scheduled_at_ms(), Some(120_000));
    assert_eq!(
        new_job.idempotency_key().unwrap().as_str(),
        "periodic:sweep:120000"
    );
    assert_eq!(
        PeriodicJob::cron("x", "bad", "app").unwrap_err().code(),
        crate::ErrorCode::InvalidCron
    );
    assert_eq!(
        PeriodicJob::every("x", Duration::ZERO, "app")
            .unwrap_err()
            .code(),
        crate::ErrorCode::InvalidWorkerConfig
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_enqueue_each_tick_once() {
    let store = store();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let make = |tx: mpsc::UnboundedSender<i64>| {
        let registry = Registry::new()
            .register_fn("app.tick", move |ctx, _a| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(ctx.job().scheduled_at_ms);
                    Ok(())
                }
            })
            .unwrap();
        let every = PeriodicJob::every("tick", Duration::from_millis(40), "app.tick")
            .unwrap()
            .options(EnqueueOptions::new().queue("cron"));
        Worker::builder(store.clone(), registry)
            .poll_interval(Duration::from_millis(10))
            .periodic(every)
            .build()
            .unwrap()
            .spawn()
    };
    let (a, b) = (make(tx.clone()), make(tx));
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let tick = tokio::time::timeout(PATIENCE, rx.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(tick);
    }
    let (ra, rb) = (
        a.shutdown_and_join().await.unwrap(),
        b.shutdown_and_join().await.unwrap(),
    );
    let unique: BTreeSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a tick ran twice: {seen:?}");
    let jobs = store
        .search_jobs(&JobFilter {
            job_name: Some("app.tick".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .jobs;
    let ticks: BTreeSet<i64> = jobs.iter().map(|j| j.scheduled_at_ms).collect();
    assert_eq!(ticks.len(), jobs.len(), "one job per tick");
    assert!(jobs
        .iter()
        .all(|j| j.scheduled_at_ms % 40 == 0 && j.queue == "cron"));
    assert!(jobs
        .iter()
        .all(|j| j.idempotency_key == Some(format!("periodic:tick:{}", j.scheduled_at_ms))));
    assert_eq!(
        ra.periodic_enqueued + rb.periodic_enqueued,
        jobs.len() as u64
    );
}

#[tokio::test]
async fn retention_prunes_old_terminal_jobs() {
    let (store, clock) = manual_store();
    let registry = Registry::new()
        .register_fn("noop", |_c, _a| async { Ok(()) })
        .unwrap();
    let id = enqueue(&store, "noop", json!([]), EnqueueOptions::new()).await;
    let worker = Worker::builder(store.clone(), registry)
        .clock(std::sync::Arc::new(clock.clone()))
        .retention(
            RetentionPolicy::new(Duration::from_millis(10)).completed(Duration::from_secs(60)),
        )
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_finished(&mut events).await;
    assert_eq!(job(&store, &id).await.status, JobStatus::Completed);
    clock.advance(61_000);
    let deleted = next_event(&mut events, |e| match e {
        WorkerEvent::Pruned { deleted } => Some(deleted),
        _ => None,
    })
    .await;
    assert_eq!(deleted, 1);
    assert!(store.get_job(&id).await.unwrap().is_none());
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(report.pruned, 1);
}
