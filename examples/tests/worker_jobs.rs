//! The worker example's jobs, tested as an application tests its own: with
//! `duraq-testkit` (`docs/testing.md`), no running worker and no sleeps to wait
//! for it. The types and handlers are the example's own file.

#[path = "../examples/jobs/worker_jobs.rs"]
mod worker_jobs;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use duraq_core::{JobStatus, Outcome, QueueConfig, Registry};
use duraq_testkit::TestKit;
use worker_jobs::{
    ChargeCard, Charger, Cleaner, Cleanup, ExportWatcher, ResizeImage, Resizer, WaitForExport,
};

/// The example's registry, and the resizer's (running, peak) counters.
fn registry() -> (Registry, Arc<AtomicUsize>) {
    let peak = Arc::new(AtomicUsize::new(0));
    let registry = Registry::new()
        .register(Resizer {
            running: Arc::new(AtomicUsize::new(0)),
            peak: peak.clone(),
        })
        .unwrap()
        .register(Charger)
        .unwrap()
        .register(ExportWatcher {
            checks: AtomicUsize::new(0),
        })
        .unwrap()
        .register(Cleaner)
        .unwrap();
    (registry, peak)
}

/// The charge fails twice and succeeds on its third attempt, its retries
/// spaced by the type's backoff (100 ms, then 200 ms), on the manual clock.
#[tokio::test]
async fn a_charge_is_retried_with_its_backoff_until_it_succeeds() {
    let kit = TestKit::sqlite_temp(registry().0).unwrap();
    let id = kit.enqueue(ChargeCard { order_id: 42 }).await.unwrap();
    kit.assert_enqueued::<ChargeCard>(|c| c.order_id == 42)
        .await;

    assert_eq!(kit.drain().await.unwrap().retried, 1);
    kit.advance(Duration::from_millis(99));
    assert_eq!(
        kit.drain().await.unwrap().ran(),
        0,
        "the backoff has not passed"
    );
    kit.advance(Duration::from_millis(1));
    assert_eq!(kit.drain().await.unwrap().retried, 1);
    let report = kit.drain_scheduled().await.unwrap();
    assert_eq!(
        (report.completed, report.advanced),
        (1, Duration::from_millis(200))
    );
    let job = kit.job(&id).await.unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Completed, 3));
    assert_eq!(job.errors.len(), 2, "each failed attempt is in the history");
}

/// The export watcher snoozes twice (no attempt used) before it completes.
#[tokio::test]
async fn waiting_for_an_export_snoozes_without_using_attempts() {
    let kit = TestKit::memory(registry().0).unwrap();
    let id = kit.enqueue(WaitForExport { export_id: 7 }).await.unwrap();
    let report = kit.drain_scheduled().await.unwrap();
    assert_eq!((report.rescheduled, report.completed), (2, 1));
    assert_eq!(report.advanced, Duration::from_millis(300));
    assert_eq!(kit.job(&id).await.unwrap().attempts, 1);
}

/// Six resizes on a worker configured as the example's: the `images` queue
/// cap of two holds in every round, and all six complete.
#[tokio::test]
async fn resizes_respect_the_images_cap() {
    let (registry, peak) = registry();
    let kit = TestKit::builder(registry)
        .worker(|w| {
            w.concurrency(8).queue(
                "images",
                QueueConfig {
                    max_concurrent: Some(2),
                    priority: 0,
                },
            )
        })
        .sqlite_temp()
        .unwrap();
    for image_id in 1..=6 {
        kit.enqueue(ResizeImage { image_id }).await.unwrap();
    }
    let ids: Vec<u32> = kit
        .enqueued::<ResizeImage>()
        .await
        .unwrap()
        .iter()
        .map(|r| r.image_id)
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    assert_eq!(kit.drain().await.unwrap().completed, 6);
    assert!(peak.load(SeqCst) <= 2, "the images cap was exceeded");
    kit.assert_not_enqueued::<ResizeImage>().await;
}

/// Inline mode: the cleanup runs as it is enqueued; `perform` answers the
/// attempt of one job.
#[tokio::test]
async fn cleanup_runs_inline() {
    let kit = TestKit::memory(registry().0).unwrap();
    kit.inline();
    let id = kit.enqueue(Cleanup { older_than_days: 7 }).await.unwrap();
    assert_eq!(kit.job(&id).await.unwrap().status, JobStatus::Completed);
    kit.assert_not_enqueued::<Cleanup>().await;
    let attempt = kit
        .perform(Cleanup {
            older_than_days: 30,
        })
        .await
        .unwrap();
    assert_eq!(attempt.outcome, Outcome::Completed);
    assert_eq!(attempt.queue, "maintenance");
}
