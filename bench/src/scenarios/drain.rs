//! Worker-side throughput: (4) drain a table of no-op jobs with 1 or 4 worker
//! processes (C = 64 each), the same with a saturated rate key's backlog in the
//! way, an in-process worker with 10 or 64 slots (the shape of issue 18's peer
//! comparison; [`enqueue_and_drain_in_process`] is also the body of
//! `drain-retained` in `retained.rs`, as [`drain_with_workers`] is of the
//! drains in `fairness.rs`), and live end-to-end with a worker already
//! running while 8 producers enqueue one by one; (8) the worker processes' peak RSS.
//!
//! Workers are real processes running duraq's runtime ([`crate::worker`]). The
//! clock starts when the `go` lines are sent (stores already open) and stops when
//! this process's count snapshot shows every job completed, so the figure covers
//! claim → run → fenced report → commit, as a user would see it.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::worker::PrefetchPolicy;
use duraq_core::{EnqueueOptions, JobError, JobStatus, NewJob, Registry, Worker};
use serde_json::json;

use super::{rate, wait_completed, wait_drained, Figure, Sizes};
use crate::child::Child;
use crate::producer::{
    enqueue_batched, enqueue_batched_by, enqueue_batched_with, enqueue_one_by_one,
};
use crate::target::Target;

/// Slots per worker process.
const CONCURRENCY: usize = 64;
/// The longest a drain may take before the run is declared broken.
const LIMIT: Duration = Duration::from_secs(900);

/// Starts `n` worker processes on `target` and waits until each has its store open.
pub async fn start_workers(target: &Target, n: usize) -> Result<Vec<Child>> {
    let mut workers = Vec::new();
    for _ in 0..n {
        let mut args = vec!["worker".to_string()];
        args.extend(target.child_args());
        args.extend(["--concurrency".into(), CONCURRENCY.to_string()]);
        workers.push(Child::spawn(&args)?);
    }
    for w in &mut workers {
        w.expect("ready").await?;
    }
    Ok(workers)
}

/// Stops the workers gracefully; returns the jobs they completed in total.
pub async fn stop_workers(workers: Vec<Child>) -> Result<u64> {
    let mut completed = 0;
    for w in workers {
        let result = w.finish().await?;
        completed += result["completed"].as_u64().unwrap_or(0);
    }
    Ok(completed)
}

pub async fn drain(target: &Target, sizes: Sizes, n_workers: usize) -> Result<Vec<Figure>> {
    let timed =
        drain_with_workers(target, sizes.drain, n_workers, |_| EnqueueOptions::new()).await?;
    Ok(vec![
        Figure::new(
            format!("drain_{n_workers}w"),
            rate(sizes.drain, timed.elapsed),
            "jobs/s",
        ),
        Figure::new(
            format!("worker_peak_rss_{n_workers}w"),
            timed.peak_kib as f64 / 1024.0,
            "MiB",
        ),
    ])
}

/// What [`drain_with_workers`] measured.
pub struct WorkerDrain {
    /// From the `go` lines to the count snapshot showing every job completed.
    pub elapsed: Duration,
    /// The largest peak RSS of the worker processes, in KiB.
    pub peak_kib: u64,
}

/// The body of the worker-process drains: opens `target`, enqueues `jobs`
/// no-op jobs in batches of 1,000 (the `i`-th with `opts(i)`), starts
/// `n_workers` worker processes, times them draining the table and checks
/// they completed exactly `jobs`.
pub async fn drain_with_workers(
    target: &Target,
    jobs: usize,
    n_workers: usize,
    opts: impl Fn(usize) -> EnqueueOptions,
) -> Result<WorkerDrain> {
    let store = target.open().await?;
    enqueue_batched_by(&store, jobs, 1_000, opts).await?;
    let mut workers = start_workers(target, n_workers).await?;
    let started = Instant::now();
    for w in &mut workers {
        w.send("go")?;
    }
    let done = wait_completed(&store, jobs as i64, LIMIT).await?;
    let elapsed = done - started;
    let mut peak_kib = 0;
    for w in &workers {
        peak_kib = peak_kib.max(w.peak_rss_kib()?);
    }
    let completed = stop_workers(workers).await?;
    store.close().await?;
    ensure!(
        completed == jobs as u64,
        "workers completed {completed} of {jobs} jobs"
    );
    Ok(WorkerDrain { elapsed, peak_kib })
}

/// Drain with a saturated rate key: `drain` free jobs, enqueued after a backlog of
/// `drain / 5` jobs whose key allows one start per hour. The figure is the free
/// jobs' drain rate (compare `drain_1w`): what claiming costs while every claim
/// must step past, and postpone, the limited jobs.
pub async fn drain_saturated_key(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let limited = sizes.drain / 5;
    let opts = EnqueueOptions::new().rate_limit("bench:saturated", 1, Duration::from_secs(3_600));
    for chunk in (0..limited).collect::<Vec<_>>().chunks(1_000) {
        let jobs = chunk
            .iter()
            .map(|i| NewJob::new(crate::JOB, json!([i]), opts.clone()))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        store.enqueue_batch(jobs).await?;
    }
    enqueue_batched(&store, sizes.drain, 1_000).await?;
    let mut workers = start_workers(target, 1).await?;
    let started = Instant::now();
    workers[0].send("go")?;
    // Every free job and the one limited job the hour allows.
    let done = wait_completed(&store, sizes.drain as i64 + 1, LIMIT).await?;
    let elapsed = done - started;
    stop_workers(workers).await?;
    let snap = store.count_snapshot().await?;
    ensure!(
        snap.counts.get(JobStatus::Queued) == limited as i64 - 1,
        "the saturated key started more than one job"
    );
    Ok(vec![Figure::new(
        "drain_1w_saturated_key",
        rate(sizes.drain, elapsed),
        "jobs/s",
    )])
}

/// The prefetch of the `-prefetch` in-process scenarios (graphile-worker's
/// `local_queue` size in issue 18's peer comparison).
pub const PREFETCH: usize = 100;

/// In-process drain: one `Worker` with `slots` slots (and `prefetch`: `None`
/// for the builder's default, the adaptive prefetch) in this process (the
/// producer's, as an application embedding duraq runs it) drains 10,000 no-op
/// jobs (2,000 with `--quick`) enqueued in batches beforehand. The clock runs
/// from the worker's start to the count snapshot showing every job completed.
pub async fn drain_in_process(
    target: &Target,
    sizes: Sizes,
    slots: usize,
    prefetch: Option<PrefetchPolicy>,
) -> Result<Vec<Figure>> {
    let jobs = sizes.drain_in_process;
    let opts = EnqueueOptions::new();
    let timed = enqueue_and_drain_in_process(target, jobs, slots, prefetch, 0, &opts).await?;
    let name = match prefetch {
        None => format!("drain_inproc_{slots}slots"),
        Some(p) => format!("drain_inproc_{slots}slots_prefetch{}", p.max()),
    };
    Ok(vec![Figure::new(name, rate(jobs, timed.drain), "jobs/s")])
}

/// `drain-ephemeral`: the in-process drain of `drain-inproc-10` with every
/// job ephemeral (`keep_completed(false)`): each completion deletes its row,
/// as graphile-worker does with every job. The clock stops when no job is
/// queued or running, and the store must be empty then.
pub async fn drain_ephemeral(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let jobs = sizes.drain_in_process;
    let opts = EnqueueOptions::new().keep_completed(false);
    let timed = enqueue_and_drain_in_process(target, jobs, 10, None, 0, &opts).await?;
    let store = target.open().await?;
    let left: i64 = store.count_snapshot().await?.counts.as_array().iter().sum();
    store.close().await?;
    ensure!(left == 0, "{left} ephemeral jobs kept their rows");
    Ok(vec![Figure::new(
        "drain_inproc_10slots_ephemeral",
        rate(jobs, timed.drain),
        "jobs/s",
    )])
}

/// How long the two halves of [`enqueue_and_drain_in_process`] took.
pub struct InProcessDrain {
    /// The batched enqueue.
    pub enqueue: Duration,
    /// The worker's start to the count snapshot showing every job completed.
    pub drain: Duration,
}

/// The body of the in-process drains: opens `target`, enqueues `jobs` no-op jobs
/// in batches of 1,000, runs one in-process `Worker` (`slots`, `prefetch`, `None`
/// for the default) until
/// the count snapshot shows them all completed, stops it and closes the store.
/// `history` is how many completed jobs the store already holds (the snapshot
/// counts them too); the worker must complete exactly `jobs`, each enqueued
/// with `opts` (ephemeral ones leave no completed row: the clock then stops
/// when none is queued or running).
pub async fn enqueue_and_drain_in_process(
    target: &Target,
    jobs: usize,
    slots: usize,
    prefetch: Option<PrefetchPolicy>,
    history: usize,
    opts: &EnqueueOptions,
) -> Result<InProcessDrain> {
    let store = target.open().await?;
    let enqueue_started = Instant::now();
    enqueue_batched_with(&store, jobs, 1_000, opts).await?;
    let enqueue = enqueue_started.elapsed();
    let registry = Registry::new()
        .register_fn(crate::JOB, |_ctx, _args: serde_json::Value| async {
            Ok::<(), JobError>(())
        })?;
    let mut builder = Worker::builder(store.clone(), registry).concurrency(slots);
    if let Some(policy) = prefetch {
        builder = builder.prefetch_policy(policy);
    }
    let worker = builder.build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let running = tokio::spawn(worker.run(async {
        let _ = stop_rx.await;
    }));
    let done = match opts.keep_completed {
        Some(false) => wait_drained(&store, LIMIT).await?,
        _ => wait_completed(&store, (history + jobs) as i64, LIMIT).await?,
    };
    let drain = done - started;
    let _ = stop_tx.send(());
    let report = running.await??;
    store.close().await?;
    ensure!(
        report.completed == jobs as u64,
        "the worker completed {} of {jobs} jobs",
        report.completed
    );
    Ok(InProcessDrain { enqueue, drain })
}

pub async fn end_to_end(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let mut workers = start_workers(target, 1).await?;
    workers[0].send("go")?;
    // Let the worker finish its startup (reconcile, heartbeat, recovery) and go
    // idle, so the clock measures steady-state enqueue → completion.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    enqueue_one_by_one(&store, sizes.e2e, 8).await?;
    let done = wait_completed(&store, sizes.e2e as i64, LIMIT).await?;
    let elapsed = done - started;
    let completed = stop_workers(workers).await?;
    ensure!(
        completed == sizes.e2e as u64,
        "worker completed {completed} of {} jobs",
        sizes.e2e
    );
    Ok(vec![Figure::new(
        "e2e_8producers_1w",
        rate(sizes.e2e, elapsed),
        "jobs/s",
    )])
}
