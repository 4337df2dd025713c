//! `soak`: does a steady load decay? (issue 32.) Every other scenario
//! is a sprint on a fresh database; a production queue runs for weeks at a
//! steady rate with retention deleting its history, and what can go wrong there
//! is slow: dead row versions autovacuum does not keep up with, a file that only
//! grows, a worker whose memory creeps.
//!
//! A producer task in this process enqueues at a fixed rate (`--rate`, 500 jobs/s
//! by default, in small batches every 20 ms, well below what one worker
//! drains); one worker *process* (10 slots) runs the jobs, with retention on:
//! completed jobs older than a fifteenth of the run are pruned (2 minutes of a
//! 30-minute run), swept four times per keep. The run lasts `--minutes`
//! (30 by default, 1 under `--quick`) and is sampled every minute (every
//! fifteenth of the run when it is shorter than 15 minutes): jobs completed,
//! the backlog, the database's size (PostgreSQL: `pg_total_relation_size` and
//! `pg_indexes_size` of the run's schema's tables, with their dead tuples and
//! autovacuum runs; SQLite: the file plus its WAL, the pages in use, and index
//! pages when `dbstat` is compiled in), and the worker's `VmRSS`. Each sample is
//! its own JSON line (`"series": "soak"`), so RESULTS.md can draw the curve;
//! the summary figures compare the last five samples with the first five
//! (the last and first 5 minutes of a 30-minute run) and the end with the middle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Store};
use serde_json::{json, Value};
use tokio::time::MissedTickBehavior;

use super::soak_size::{DbSize, Sizer};
use super::{Figure, Sizes};
use crate::child::Child;
use crate::target::Target;

/// Samples in the first and in the last window the throughput compares.
const WINDOW: usize = 5;
/// How often the producer enqueues what the rate says is due.
const TICK: Duration = Duration::from_millis(20);
/// Worker slots (the `drain-inproc-10` shape).
const SLOTS: usize = 10;

/// The soak's timing, all derived from its length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub duration: Duration,
    pub sample: Duration,
    /// Completed jobs older than this are pruned.
    pub keep: Duration,
    /// The retention sweep interval.
    pub sweep: Duration,
    /// Jobs enqueued per second.
    pub rate: u64,
}

impl Plan {
    pub fn new(minutes: f64, rate: u64) -> Result<Self> {
        ensure!(
            minutes.is_finite() && minutes > 0.0,
            "--minutes must be > 0"
        );
        ensure!(rate > 0, "--rate must be > 0");
        let duration = Duration::from_secs_f64(minutes * 60.0);
        let sample = if minutes >= 15.0 {
            Duration::from_secs(60)
        } else {
            duration / 15
        };
        let keep = duration / 15;
        let sweep = (keep / 4).max(Duration::from_secs(1));
        Ok(Self {
            duration,
            sample,
            keep,
            sweep,
            rate,
        })
    }

    pub fn samples(&self) -> usize {
        (self.duration.as_secs_f64() / self.sample.as_secs_f64()).round() as usize
    }
}

/// One sample of the run.
struct Sample {
    t_s: f64,
    completed: u64,
    backlog: i64,
    size: DbSize,
    rss_kib: u64,
}

/// Runs the soak; returns the summary figures and the per-sample lines.
pub async fn soak(target: &Target, sizes: Sizes) -> Result<(Vec<Figure>, Vec<Value>)> {
    let plan = Plan::new(sizes.soak_minutes, sizes.soak_rate)?;
    let store = target.open_producer().await?;
    let sizer = Sizer::new(target).await?;
    let mut args = vec!["worker".to_string()];
    args.extend(target.child_args());
    args.extend([
        "--concurrency".into(),
        SLOTS.to_string(),
        "--keep-ms".into(),
        plan.keep.as_millis().to_string(),
        "--sweep-ms".into(),
        plan.sweep.as_millis().to_string(),
    ]);
    let mut worker = Child::spawn(&args)?;
    worker.expect("ready").await?;
    worker.send("go")?;

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let enqueued = Arc::new(AtomicU64::new(0));
    let producer = tokio::spawn(produce(
        store.clone(),
        plan.rate,
        started,
        stop.clone(),
        enqueued.clone(),
    ));
    let mut samples: Vec<Sample> = Vec::new();
    let mut series = Vec::new();
    for k in 1..=plan.samples() as u32 {
        tokio::time::sleep_until((started + plan.sample * k).into()).await;
        if producer.is_finished() {
            break; // its error surfaces below
        }
        let s = sample(&store, &sizer, &worker, &enqueued, started).await?;
        let previous = samples.last().map_or((0.0, 0), |p| (p.t_s, p.completed));
        let jobs_s = s.completed.saturating_sub(previous.1) as f64 / (s.t_s - previous.0);
        let line = json!({
            "series": "soak", "t_s": s.t_s, "minute": s.t_s / 60.0,
            "completed": s.completed, "jobs_s": jobs_s, "backlog": s.backlog,
            "db_bytes": s.size.total_bytes, "index_bytes": s.size.index_bytes,
            "used_bytes": s.size.used_bytes, "dead_tuples": s.size.dead_tuples,
            "autovacuums": s.size.autovacuums, "worker_rss_kib": s.rss_kib,
        });
        eprintln!("soak {}: {line}", target.kind.name());
        series.push(line);
        samples.push(s);
    }
    stop.store(true, Ordering::Relaxed);
    let produced = producer.await??;
    let result = worker.finish().await?;
    store.close().await?;
    ensure!(
        samples.len() == plan.samples(),
        "the soak stopped after {} of {} samples",
        samples.len(),
        plan.samples()
    );
    let mut figures = summary(&samples);
    figures.push(Figure::new("soak_enqueued", produced as f64, "jobs"));
    let completed = result["completed"].as_f64().unwrap_or(f64::NAN);
    figures.push(Figure::new("soak_completed", completed, "jobs"));
    Ok((figures, series))
}

/// Enqueues what `rate` says is due every [`TICK`], as one batch (at most 1,000),
/// until `stop`; returns how many it enqueued.
async fn produce(
    store: Arc<dyn Store>,
    rate: u64,
    started: Instant,
    stop: Arc<AtomicBool>,
    enqueued: Arc<AtomicU64>,
) -> Result<u64> {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        let n = due.saturating_sub(done).min(1_000);
        if n == 0 {
            continue;
        }
        let jobs = (done..done + n)
            .map(|i| NewJob::new(crate::JOB, json!([i]), EnqueueOptions::new()))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        store.enqueue_batch(jobs).await?;
        done += n;
        enqueued.store(done, Ordering::Relaxed);
    }
    Ok(done)
}

/// Completed jobs are those enqueued and no longer live (retention deletes
/// them, so the completed count itself does not say).
async fn sample(
    store: &Arc<dyn Store>,
    sizer: &Sizer,
    worker: &Child,
    enqueued: &AtomicU64,
    started: Instant,
) -> Result<Sample> {
    let t_s = started.elapsed().as_secs_f64();
    let enqueued = enqueued.load(Ordering::Relaxed);
    let snap = store.count_snapshot().await?;
    let live = snap.counts.get(JobStatus::Queued) + snap.counts.get(JobStatus::HandedOff);
    Ok(Sample {
        t_s,
        completed: enqueued.saturating_sub(live.max(0) as u64),
        backlog: snap.counts.get(JobStatus::Queued),
        size: sizer.measure().await?,
        rss_kib: worker.rss_kib()?,
    })
}

/// Throughput of the last [`WINDOW`] samples over the first, the database size
/// and the worker's RSS at the end over the middle, and the end values.
fn summary(s: &[Sample]) -> Vec<Figure> {
    let n = s.len();
    let first = s[WINDOW - 1].completed as f64 / s[WINDOW - 1].t_s;
    let last = s[n - 1]
        .completed
        .saturating_sub(s[n - 1 - WINDOW].completed) as f64
        / (s[n - 1].t_s - s[n - 1 - WINDOW].t_s);
    let (mid, end) = (&s[n / 2 - 1], &s[n - 1]);
    let mut out = vec![
        Figure::new("soak_jobs_s_first", first, "jobs/s"),
        Figure::new("soak_jobs_s_last", last, "jobs/s"),
        Figure::new("soak_last_vs_first", last / first, "x"),
        Figure::new(
            "soak_db_growth_2nd_half",
            end.size.total_bytes as f64 / mid.size.total_bytes as f64,
            "x",
        ),
        Figure::new(
            "soak_db_end",
            end.size.total_bytes as f64 / 1_048_576.0,
            "MiB",
        ),
    ];
    if let (Some(m), Some(e)) = (mid.size.used_bytes, end.size.used_bytes) {
        // SQLite: the pages in use, without the WAL's ups and downs.
        out.push(Figure::new(
            "soak_used_growth_2nd_half",
            e as f64 / m as f64,
            "x",
        ));
    }
    if let (Some(m), Some(e)) = (mid.size.index_bytes, end.size.index_bytes) {
        out.push(Figure::new(
            "soak_index_growth_2nd_half",
            e as f64 / m as f64,
            "x",
        ));
    }
    out.extend([
        Figure::new(
            "soak_rss_growth_2nd_half",
            end.rss_kib as f64 / mid.rss_kib as f64,
            "x",
        ),
        Figure::new("soak_worker_rss_end", end.rss_kib as f64 / 1024.0, "MiB"),
        Figure::new("soak_backlog_end", end.backlog as f64, "jobs"),
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_sample_every_minute_or_fifteen_times() {
        let long = Plan::new(30.0, 500).unwrap();
        assert_eq!(long.samples(), 30);
        assert_eq!(long.sample, Duration::from_secs(60));
        assert_eq!(long.keep, Duration::from_secs(120));
        assert_eq!(long.sweep, Duration::from_secs(30));
        let quick = Plan::new(1.0, 500).unwrap();
        assert_eq!(quick.samples(), 15);
        assert_eq!(quick.sample, Duration::from_secs(4));
        assert_eq!(quick.sweep, Duration::from_secs(1));
        assert!(quick.samples() >= 2 * WINDOW);
        assert!(Plan::new(0.0, 500).is_err());
        assert!(Plan::new(1.0, 0).is_err());
    }
}
