//! A standalone worker process: typed handlers, retries spaced by the job type's
//! own backoff, a snooze, periodic jobs, a queue capped at two running jobs, and
//! a graceful shutdown once the work it enqueued is done.
//!
//! Run: `cargo run -p duraq-examples --example worker`

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use duraq_core::prelude::*;
use duraq_core::worker::WorkerEvent;
use duraq_core::{JobArgs, Outcome, PeriodicJob, QueueConfig, Registry, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use tokio::sync::broadcast::error::RecvError;
use tracing_subscriber::EnvFilter;

#[path = "jobs/worker_jobs.rs"]
mod worker_jobs;
use worker_jobs::{
    ChargeCard, Charger, Cleaner, Cleanup, ExportWatcher, ResizeImage, Resizer, WaitForExport,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr (`RUST_LOG` filters, `info` by default): each failed attempt is a warning with the job, the attempt and the error.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(
        dir.path().join("jobs.db"),
        SqliteOptions::default(),
    )?);

    // The work: six resizes, a charge that fails twice, an export to wait for.
    for image_id in 1..=6 {
        store.enqueue(ResizeImage { image_id }.job()?).await?;
    }
    store.enqueue(ChargeCard { order_id: 42 }.job()?).await?;
    store.enqueue(WaitForExport { export_id: 7 }.job()?).await?;

    let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let registry = Registry::new()
        .register(Resizer {
            running,
            peak: peak.clone(),
        })?
        .register(Charger)?
        .register(ExportWatcher {
            checks: AtomicUsize::new(0),
        })?
        .register(Cleaner)?;
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(8)
        .queue(
            "images",
            QueueConfig {
                max_concurrent: Some(2),
                priority: 0,
            },
        )
        .periodic(PeriodicJob::every_job(
            "cleanup-drafts",
            Duration::from_millis(300),
            &Cleanup { older_than_days: 7 },
        )?)
        .periodic(PeriodicJob::cron_job(
            "nightly-cleanup",
            "0 3 * * *",
            &Cleanup {
                older_than_days: 30,
            },
        )?)
        .build()?;
    let mut events = worker.subscribe(); // before spawning: see every event
    let handle = worker.spawn();

    // Follow the worker's events until our 8 jobs and 2 periodic ticks completed.
    let mut completed: HashMap<String, usize> = HashMap::new();
    let done = |c: &HashMap<String, usize>| {
        let n = |name: &str| c.get(name).copied().unwrap_or(0);
        n("resize_image") == 6
            && n("charge_card") == 1
            && n("wait_for_export") == 1
            && n("cleanup") >= 2
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done(&completed) {
            match events.recv().await {
                Ok(WorkerEvent::Finished(f)) if f.outcome == Outcome::Completed => {
                    *completed.entry(f.job_name).or_default() += 1;
                }
                Ok(WorkerEvent::PeriodicEnqueued {
                    name,
                    tick_ms,
                    created: true,
                    ..
                }) => {
                    println!(
                        "periodic {name}: next tick enqueued, due in {}",
                        until(tick_ms)
                    );
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(closed) => return Err(closed),
            }
        }
        Ok(())
    })
    .await??;

    // Graceful shutdown: stop claiming, let running jobs finish and report them.
    let report = handle.shutdown_and_join().await?;
    println!(
        "worker stopped: {} claimed, {} completed, {} retried, {} rescheduled, {} periodic ticks enqueued",
        report.claimed, report.completed, report.retried, report.rescheduled, report.periodic_enqueued
    );
    let peak = peak.load(SeqCst);
    assert!(peak <= 2, "the images cap was exceeded");
    println!("queue images: at most {peak} jobs ran at once (cap 2)");
    // What stays queued: the periodic jobs' next ticks, waiting for the next worker.
    let counts = store.count_snapshot().await?.counts;
    println!(
        "store: {} completed, {} failed, {} queued (next periodic ticks)",
        counts.completed, counts.failed, counts.queued
    );
    Ok(())
}

/// How far in the future `tick_ms` (ms since the epoch) is, rounded.
fn until(tick_ms: i64) -> String {
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let ms = (tick_ms - now_ms).max(0);
    if ms < 60_000 {
        format!("{ms}ms")
    } else {
        format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60)
    }
}
