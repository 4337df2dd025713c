//! `fairness`: what fair turns (fairness keys, docs/queues.md "Fair turns")
//! cost a drain, and what they buy a small tenant stuck behind a big one.
//!
//! - Drain: `drain-1w`'s table (50,000 no-op jobs; 2,000 with `--quick`)
//!   spread round robin over [`KEYS`] fairness keys, drained by one worker
//!   process of 64 slots with `drain-1w`'s clock (the `go` line to the count
//!   snapshot showing every job completed), next to the same jobs without keys.
//!   Each drain has a fresh database, the keyed one right after the unkeyed one.
//!   Figures: `fair_drain_unkeyed` and `fair_drain_10keys` (jobs/s) and
//!   `fair_drain_10keys_ratio`, keyed / unkeyed: taking turns must cost a
//!   claim little (the goal is ≥ 0.9).
//! - Trickle: key [`TRICKLE_KEY`] gets [`TRICKLE`] jobs one at a time, one
//!   every [`SPACING`] (the cadence is the workload, as in `wakeup`), first on
//!   an idle queue (one idle worker process), then in a queue where one worker
//!   process is draining a backlog of `fair_backlog` jobs of key
//!   [`BACKLOG_KEY`] (1,000,000; 300,000 with `--quick`), enqueued beforehand
//!   in batches of 1,000 (the batched path `counts` fills its table with).
//!   Each phase has a fresh database. The trickle starts once the worker has
//!   completed [`WARM`] backlog jobs (a drain in full swing, past the worker's
//!   start-up), and the run fails unless backlog jobs were still queued when
//!   the last trickled job had completed, so every timed job met the backlog.
//!   A job's wait is the bench worker's handler start (`now_us()` taken in the
//!   handler, before its no-op body) minus `t0`, the wall clock stamped just
//!   before its enqueue call: the jobs are due at once, so this is due → start
//!   plus the enqueue's own commit, as `wakeup` measures. Figures: p50 and p99
//!   of both phases (`fair_trickle_idle_*`, `fair_trickle_behind_1m_*`) and
//!   the ratio of the p99s (behind the backlog / idle), and
//!   `fair_trickle_behind_1m_backlog_drain`, the backlog's jobs completed per
//!   second while the trickle was enqueued: what the turns left the big
//!   tenant (compare `fair_drain_unkeyed`). The worker stops once every
//!   trickled job has completed (polled by id), not after the backlog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use duraq_core::{EnqueueOptions, JobStatus, Store};

use super::drain::{drain_with_workers, start_workers};
use super::wakeup::{latencies_us, percentile, trickle};
use super::{rate, size_label, wait_completed, Figure, Sizes};
use crate::producer::enqueue_batched_with;
use crate::target::Target;

/// Fairness keys the keyed drain spreads its jobs over.
const KEYS: usize = 10;
/// Jobs the trickle times.
const TRICKLE: usize = 100;
/// One trickled job every this long.
const SPACING: Duration = Duration::from_millis(15);
/// The trickled jobs' key.
const TRICKLE_KEY: &str = "tenant:b";
/// The backlog's key.
const BACKLOG_KEY: &str = "tenant:a";
/// Backlog jobs the worker completes before the trickle starts.
const WARM: usize = 1_000;
/// How long the idle worker is left to go idle before the trickle.
const IDLE: Duration = Duration::from_millis(500);
/// The longest a drain or a trickle's completion may take.
const LIMIT: Duration = Duration::from_secs(900);

/// Runs both halves, each phase on a database of its own (siblings of
/// `target`, deleted afterwards).
pub async fn fairness(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let siblings = [target.sibling()?, target.sibling()?, target.sibling()?];
    let result = measure(target, &siblings, sizes).await;
    for sibling in &siblings {
        sibling.cleanup().await?;
    }
    result
}

async fn measure(target: &Target, siblings: &[Target; 3], sizes: Sizes) -> Result<Vec<Figure>> {
    let [keyed, idle, behind] = siblings;
    let n = sizes.drain;
    let plain = drain_with_workers(target, n, 1, |_| EnqueueOptions::new()).await?;
    let fair = drain_with_workers(keyed, n, 1, |i| {
        EnqueueOptions::new().fairness_key(format!("tenant:{}", i % KEYS))
    })
    .await?;
    let (plain, fair) = (rate(n, plain.elapsed), rate(n, fair.elapsed));

    let idle = trickle_waits(idle, 0).await?.waits;
    let behind = trickle_waits(behind, sizes.fair_backlog).await?;
    let (behind, backlog_jobs_s) = (behind.waits, behind.backlog_jobs_s);
    let ms = |waits: &[i64], p: f64| percentile(waits, p) as f64 / 1000.0;
    let label = format!("fair_trickle_behind_{}", size_label(sizes.fair_backlog));
    Ok(vec![
        Figure::new("fair_drain_unkeyed", plain, "jobs/s"),
        Figure::new(format!("fair_drain_{KEYS}keys"), fair, "jobs/s"),
        Figure::new(format!("fair_drain_{KEYS}keys_ratio"), fair / plain, "x"),
        Figure::new("fair_trickle_idle_p50", ms(&idle, 50.0), "ms"),
        Figure::new("fair_trickle_idle_p99", ms(&idle, 99.0), "ms"),
        Figure::new(format!("{label}_p50"), ms(&behind, 50.0), "ms"),
        Figure::new(format!("{label}_p99"), ms(&behind, 99.0), "ms"),
        Figure::new(
            format!("{label}_p99_ratio"),
            ms(&behind, 99.0) / ms(&idle, 99.0),
            "x",
        ),
        Figure::new(format!("{label}_backlog_drain"), backlog_jobs_s, "jobs/s"),
    ])
}

/// What one trickle phase measured.
struct Trickle {
    /// The trickled jobs' waits in µs, sorted.
    waits: Vec<i64>,
    /// The backlog's jobs completed per second while the trickle was
    /// enqueued (the snapshot's completed count before and after it).
    backlog_jobs_s: f64,
}

/// One trickle phase on `target`: `backlog` jobs of [`BACKLOG_KEY`] (0: an
/// idle queue), one worker process, then [`TRICKLE`] jobs of
/// [`TRICKLE_KEY`].
async fn trickle_waits(target: &Target, backlog: usize) -> Result<Trickle> {
    let store = target.open().await?;
    let big = EnqueueOptions::new().fairness_key(BACKLOG_KEY);
    enqueue_batched_with(&store, backlog, 1_000, &big).await?;
    let mut workers = start_workers(target, 1).await?;
    workers[0].send("go")?;
    if backlog == 0 {
        tokio::time::sleep(IDLE).await; // the workload: a worker gone idle
    } else {
        wait_completed(&store, WARM.min(backlog) as i64, LIMIT).await?;
    }
    let completed = || async {
        let snap = store.count_snapshot().await?;
        anyhow::Ok(snap.counts.get(JobStatus::Completed))
    };
    let (before, started) = (completed().await?, Instant::now());
    let small = EnqueueOptions::new().fairness_key(TRICKLE_KEY);
    let ids = trickle(&store, TRICKLE, SPACING, &small).await?;
    let (after, took) = (completed().await?, started.elapsed());
    wait_jobs_completed(&store, &ids, LIMIT).await?;
    let left = store.count_snapshot().await?.counts.get(JobStatus::Queued);
    let worker = workers.pop().context("one worker")?;
    let waits = latencies_us(&worker.finish().await?, TRICKLE)?;
    store.close().await?;
    ensure!(
        backlog == 0 || left > 0,
        "the backlog ran out before the trickle's last job completed"
    );
    // The trickled jobs completed meanwhile are not the backlog's.
    let trickled = ids.len() as i64;
    let backlog_jobs_s = (after - before - trickled).max(0) as f64 / took.as_secs_f64();
    Ok(Trickle {
        waits,
        backlog_jobs_s,
    })
}

/// Polls the jobs `ids` (by primary key) until every one is completed; the
/// count snapshot cannot tell them from the backlog's.
async fn wait_jobs_completed(
    store: &Arc<dyn Store>,
    ids: &[String],
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    let mut open: Vec<&str> = ids.iter().map(String::as_str).collect();
    loop {
        let mut still = Vec::new();
        for id in open {
            let job = store.get_job(id).await?.context("a timed job vanished")?;
            if job.status != JobStatus::Completed {
                still.push(id);
            }
        }
        open = still;
        if open.is_empty() {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "{} of {} timed jobs not completed within {limit:?}",
            open.len(),
            ids.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
