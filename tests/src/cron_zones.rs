//! Time zones on every store's periodic path (`docs/periodic.md`): a
//! worker declaring a cron job in an IANA zone enqueues each tick once, keyed
//! `periodic:<name>:<tick ms>` and scheduled at the zone's wall-clock instant,
//! across a spring-forward gap (the skipped time fires once, at the end of the
//! gap) and a fall-back repeat (the repeated time fires once, at its first
//! occurrence). The worker reads the harness's `ManualClock`; each step starts
//! workers at a chosen instant, waits for their `PeriodicEnqueued` events, and
//! checks that the job is not claimable a millisecond before its tick and is at it.

use std::sync::Arc;
use std::time::Duration;

use duraq_core::worker::{WorkerEvent, WorkerHandle};
use duraq_core::{Clock, JobStatus, Outcome, PeriodicJob, Registry, Worker};

use crate::harness::Harness;

const NAME: &str = "oslo-0230";
const JOB: &str = "app.night";
/// Turns a hang into a failure; a correct run never waits this long.
const PATIENCE: Duration = Duration::from_secs(20);

/// A worker on the harness's store and clock declaring `30 2 * * *` in Oslo.
fn worker(h: &Harness) -> (WorkerHandle, tokio::sync::broadcast::Receiver<WorkerEvent>) {
    let registry = Registry::new()
        .register_fn(JOB, |_ctx, _args| async { Ok(()) })
        .expect("registry");
    let nightly =
        PeriodicJob::cron(NAME, "CRON_TZ=Europe/Oslo 30 2 * * *", JOB).expect("zoned cron job");
    let clock: Arc<dyn Clock> = Arc::new(h.clock.clone());
    let worker = Worker::builder(h.store.clone(), registry)
        .clock(clock)
        .periodic(nightly)
        .build()
        .expect("worker");
    let events = worker.subscribe();
    (worker.spawn(), events)
}

/// The first tick the worker enqueued: (tick ms, job id, created).
async fn first_tick(
    events: &mut tokio::sync::broadcast::Receiver<WorkerEvent>,
) -> (i64, String, bool) {
    loop {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("a periodic tick within the patience")
            .expect("worker events");
        if let WorkerEvent::PeriodicEnqueued {
            name,
            tick_ms,
            job_id,
            created,
        } = event
        {
            assert_eq!(name, NAME);
            return (tick_ms, job_id, created);
        }
    }
}

/// Starts two workers at `now`, checks that they enqueue one job for `expected`,
/// and that the job becomes claimable exactly at its tick.
async fn step(h: &Harness, now: i64, expected: i64, what: &str) {
    h.clock.set(now);
    let (a, mut a_events) = worker(h);
    let (tick, id, created) = first_tick(&mut a_events).await;
    a.shutdown_and_join().await.expect("worker a");
    assert_eq!(tick, expected, "{what}: tick");
    assert!(created, "{what}: the first worker creates the tick");
    // A second process replays the same tick.
    let (b, mut b_events) = worker(h);
    let (tick_b, id_b, created_b) = first_tick(&mut b_events).await;
    b.shutdown_and_join().await.expect("worker b");
    assert_eq!(
        (tick_b, id_b.as_str(), created_b),
        (expected, id.as_str(), false),
        "{what}: replay"
    );

    let job = h.get(&id).await;
    assert_eq!(job.status, JobStatus::Queued, "{what}");
    assert_eq!(job.scheduled_at_ms, expected, "{what}: scheduledAtMs");
    let key = job.idempotency_key.clone().expect("tick key");
    assert_eq!(key, format!("periodic:{NAME}:{expected}"), "{what}: key");
    h.clock.set(expected - 1);
    assert!(
        h.claim("w", &[JOB], 10).await.is_empty(),
        "{what}: due early"
    );
    h.clock.set(expected);
    let claimed = h.claim("w", &[JOB], 10).await;
    assert_eq!(claimed.len(), 1, "{what}: due at its tick");
    assert_eq!(claimed[0].id, id, "{what}");
    assert!(
        h.report(&claimed[0], Outcome::Completed).await,
        "{what}: report"
    );
}

pub async fn zoned_ticks_follow_the_wall_clock_across_dst(h: &Harness) {
    // 2026-03-28T12:00Z → 02:30 on the 29th does not exist in Oslo: 03:00 CEST
    // (01:00Z).
    step(h, 1_774_699_200_000, 1_774_746_000_000, "spring gap").await;
    // Just after it, the next is 02:30 CEST on the 30th (00:30Z): once.
    step(h, 1_774_746_000_001, 1_774_830_600_000, "after the gap").await;
    // 2026-10-24T12:00Z → 02:30 CEST on the 25th (00:30Z), the first pass.
    step(h, 1_792_843_200_000, 1_792_888_200_000, "autumn first pass").await;
    // Just after it, 02:30 CET an hour later (01:30Z) is skipped: the 26th, 01:30Z.
    step(h, 1_792_888_200_001, 1_792_978_200_000, "autumn repeat").await;
    let jobs = h.jobs().await;
    assert_eq!(jobs.len(), 4, "one job per tick");
    assert!(jobs.iter().all(|j| j.status == JobStatus::Completed));
}
