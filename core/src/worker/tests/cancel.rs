//! Cancelling a running job: the context's future and flag, the grace-period
//! abort, the refused late report, and leases lost to recovery.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::running::fast;
use super::*;
use crate::driver::LeaseLoss;
use crate::{
    EnqueueOptions, JobContext, JobError, JobResult, JobStatus, Outcome, Registry, RunningOwner,
    ScheduleKey,
};

async fn next_lease_lost(rx: &mut broadcast::Receiver<WorkerEvent>) -> (String, LeaseLoss) {
    next_event(rx, |e| match e {
        WorkerEvent::LeaseLost { job_id, loss } => Some((job_id, loss)),
        _ => None,
    })
    .await
}

/// A handler that runs until its context says it was cancelled, then fails.
fn until_cancelled() -> Registry {
    Registry::new()
        .register_fn("long", |ctx: JobContext, _a| async move {
            ctx.cancelled().await;
            assert!(ctx.is_cancelled());
            Err::<JobResult, _>(JobError::new("stopped on cancel").discard())
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_cancelled_is_told_through_its_context_and_its_report_is_refused() {
    let store = store();
    let id = enqueue(&store, "long", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), until_cancelled())
        .cancel_grace(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;

    let cancelled = store.cancel_job(&id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(
        next_lease_lost(&mut events).await,
        (id.clone(), LeaseLoss::Cancelled)
    );
    let f = next_finished(&mut events).await;
    assert_eq!(f.job_id, id);
    assert!(!f.accepted, "the late report is refused");
    assert!(matches!(f.outcome, Outcome::Failed { .. }));

    let row = job(&store, &id).await;
    assert_eq!(row.status, JobStatus::Cancelled);
    assert_eq!(row.last_error, None, "the refused report changed nothing");
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(
        (report.cancelled, report.cancel_aborted, report.lost_leases),
        (1, 0, 0)
    );
    assert_eq!((report.failed, report.retried), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_turns_true_when_the_worker_learns() {
    let store = store();
    let gate = Arc::new(Notify::new());
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let g = gate.clone();
    let registry = Registry::new()
        .register_fn("long", move |ctx: JobContext, _a| {
            let (gate, seen) = (g.clone(), seen_tx.clone());
            async move {
                let _ = seen.send(ctx.is_cancelled());
                gate.notified().await;
                let _ = seen.send(ctx.is_cancelled());
                Ok(JobResult::Completed)
            }
        })
        .unwrap();
    let id = enqueue(&store, "long", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    // The handler has read the flag (the `Started` event comes before its
    // first poll, so cancelling after that event could win the race).
    assert_eq!(seen_rx.recv().await, Some(false));
    store.cancel_job(&id).await.unwrap();
    next_lease_lost(&mut events).await;
    gate.notify_one();
    assert_eq!(seen_rx.recv().await, Some(true));
    let f = next_finished(&mut events).await;
    assert_eq!((f.outcome, f.accepted), (Outcome::Completed, false));
    assert_eq!(job(&store, &id).await.status, JobStatus::Cancelled);
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.cancelled, report.completed), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_ignores_the_cancellation_is_aborted_after_the_grace_period() {
    let store = store();
    let dropped = Arc::new(Notify::new());
    let d = dropped.clone();
    let registry = Registry::new()
        .register_fn("stubborn", move |_ctx, _a| {
            let guard = NotifyOnDrop(d.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok(JobResult::Completed)
            }
        })
        .unwrap();
    let id = enqueue(&store, "stubborn", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .cancel_grace(Duration::from_millis(50))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    store.cancel_job(&id).await.unwrap();
    let f = next_finished(&mut events).await;
    assert_eq!(f.job_id, id);
    assert!(!f.accepted);
    // The handler's future was dropped (its task aborted).
    tokio::time::timeout(PATIENCE, dropped.notified())
        .await
        .expect("the handler was aborted");
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.cancelled, report.cancel_aborted), (1, 1));
    assert_eq!(job(&store, &id).await.status, JobStatus::Cancelled);
}

struct NotifyOnDrop(Arc<Notify>);
impl Drop for NotifyOnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_cancel_stops_the_running_owner_only_when_asked() {
    let store = store();
    let registry = until_cancelled()
        .register_fn("other", |_c, _a| async { Ok(()) })
        .unwrap();
    let key = ScheduleKey::new("report:daily").unwrap();
    store
        .replace_scheduled(
            &key,
            NewJob::new("long", json!([1]), EnqueueOptions::new()).unwrap(),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let worker = fast(store.clone(), registry)
        .cancel_grace(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    let started = next_started(&mut events).await;

    // Without Stop: only the ownership moves; the owner keeps running.
    let kept = store
        .replace_scheduled(
            &key,
            NewJob::new(
                "other",
                json!([2]),
                EnqueueOptions::new()
                    .run_at(std::time::SystemTime::now() + Duration::from_secs(86_400)),
            )
            .unwrap(),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_eq!(
        kept.previous_job_id.as_deref(),
        Some(started.job_id.as_str())
    );
    assert_eq!(kept.previous_status, Some(JobStatus::HandedOff));
    assert!(!kept.previous_stopped);
    assert_eq!(
        job(&store, &started.job_id).await.status,
        JobStatus::HandedOff
    );

    // A second running owner under a fresh key, stopped by the keyed cancel.
    let key2 = ScheduleKey::new("report:hourly").unwrap();
    store
        .replace_scheduled(
            &key2,
            NewJob::new("long", json!([3]), EnqueueOptions::new()).unwrap(),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let second = next_started(&mut events).await;
    let out = store
        .cancel_scheduled(&key2, RunningOwner::Stop)
        .await
        .unwrap();
    assert_eq!(out.outcome, crate::CancelOutcome::Stopped);
    assert_eq!(
        next_lease_lost(&mut events).await,
        (second.job_id.clone(), LeaseLoss::Cancelled)
    );
    let f = next_finished(&mut events).await;
    assert_eq!(
        (f.job_id.as_str(), f.accepted),
        (second.job_id.as_str(), false)
    );
    // The first owner still runs.
    assert_eq!(
        job(&store, &started.job_id).await.status,
        JobStatus::HandedOff
    );
    store.cancel_job(&started.job_id).await.unwrap();
    next_finished(&mut events).await;
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!(report.cancelled, 2);
}

#[tokio::test]
async fn a_lease_recovered_by_another_process_is_noticed_by_the_lease_check() {
    let (store, clock) = manual_store();
    let registry = until_cancelled();
    let id = enqueue(&store, "long", json!([]), EnqueueOptions::new()).await;
    let worker = fast(store.clone(), registry)
        .clock(Arc::new(clock.clone()))
        .stale_after(Duration::from_secs(3600)) // its own loops stay quiet
        .lease_check_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    next_started(&mut events).await;
    // Another process decides this worker is dead and recovers the lease: no
    // cancellation is announced, the periodic lease check finds it.
    clock.advance(7_200_000);
    assert_eq!(
        store.recover_stale(3_600_000).await.unwrap(),
        vec![id.clone()]
    );
    assert_eq!(
        next_lease_lost(&mut events).await,
        (id.clone(), LeaseLoss::Lost)
    );
    let f = next_finished(&mut events).await;
    assert!(!f.accepted);
    let report = handle.shutdown_and_join().await.unwrap();
    assert_eq!((report.lost_leases, report.cancelled), (1, 0));
}

#[tokio::test]
async fn a_cancel_grace_of_zero_and_a_zero_lease_check_are_checked() {
    let store = store();
    let zero_check = fast(store.clone(), Registry::new())
        .lease_check_interval(Duration::ZERO)
        .build();
    assert_eq!(
        zero_check.unwrap_err().code(),
        crate::ErrorCode::InvalidWorkerConfig
    );
    assert!(fast(store, Registry::new())
        .cancel_grace(Duration::ZERO)
        .build()
        .is_ok());
}
