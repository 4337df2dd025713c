//! Durable execution (`docs/durable.md`): `steps` and `await`.
//!
//! `steps` runs programs of three steps two ways on one in-process worker
//! with 10 slots: as one job whose handler runs three `ctx.step`s (each a
//! record written with the job), and as three plain jobs chained by hand
//! (each hop's handler enqueues the next), the shape a queue without steps
//! forces. Figures: programs per second each way (`drain_in_process / 3`
//! programs).
//!
//! `await` times what a caller of `store.wait_for` sees: one worker process,
//! idle; this process enqueues a job and awaits its result, one at a time.
//! Figures: p50 and p99 of enqueue-to-result (on SQLite the worker's commit
//! is seen across processes by the wait's bounded polling; on PostgreSQL by
//! LISTEN/NOTIFY).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Result};
use duraq_core::inspect::Waited;
use duraq_core::{EnqueueOptions, JobContext, JobError, JobStatus, NewJob, Registry, Store};
use serde_json::{json, Value};

use super::drain::start_workers;
use super::wakeup::percentile;
use super::{rate, run_worker_until, wait_completed, Figure, Sizes};
use crate::target::Target;
use crate::JOB;

const SLOTS: usize = 10;
const LIMIT: Duration = Duration::from_secs(900);

/// `steps`: one three-step job against three jobs chained by hand.
pub async fn steps(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let programs = sizes.drain_in_process / 3;
    let store = target.open().await?;
    let durable = run_programs(&store, programs, "program", programs).await?;
    let chained = run_programs(&store, programs, "hop", 3 * programs).await?;
    store.close().await?;
    Ok(vec![
        Figure::new("steps_3step_job", rate(programs, durable), "programs/s"),
        Figure::new(
            "steps_3_chained_jobs",
            rate(programs, chained),
            "programs/s",
        ),
    ])
}

/// Enqueues `programs` jobs named `name` and drains them (and what they
/// enqueue) until `completed` more jobs completed; how long it took.
async fn run_programs(
    store: &Arc<dyn Store>,
    programs: usize,
    name: &str,
    completed: usize,
) -> Result<Duration> {
    let before = store.count_snapshot().await?.counts.completed;
    for chunk in (0..programs).collect::<Vec<_>>().chunks(1_000) {
        let jobs = (chunk.iter())
            .map(|i| NewJob::new(name, json!({"i": i, "left": 2}), EnqueueOptions::new()))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        store.enqueue_batch(jobs).await?;
    }
    let registry = Registry::new()
        .register_fn("program", |ctx: JobContext, _args: Value| async move {
            for step in ["one", "two", "three"] {
                ctx.step(step, || async { Ok(()) }).await?;
            }
            Ok::<(), JobError>(())
        })?
        .register_fn("hop", |ctx: JobContext, args: Value| async move {
            let left = args["left"].as_i64().unwrap_or(0);
            if left > 0 {
                let next = json!({"i": args["i"], "left": left - 1});
                let job = NewJob::new("hop", next, EnqueueOptions::new())?;
                ctx.store().enqueue(job).await?;
            }
            Ok::<(), JobError>(())
        })?;
    let completed = before + completed as i64;
    Ok(run_worker_until(store, registry, SLOTS, completed, LIMIT)
        .await?
        .0)
}

/// `await`: enqueue-to-awaited-result latency on an idle worker process.
pub async fn await_result(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let mut workers = start_workers(target, 1).await?;
    workers[0].send("go")?;
    let mut latencies = Vec::with_capacity(sizes.wakeups);
    for i in 0..sizes.wakeups {
        let started = Instant::now();
        let job = NewJob::new(JOB, json!({"t0": 0, "i": i}), EnqueueOptions::new())?;
        let id = store.enqueue(job).await?.job_id().to_owned();
        match store.wait_for(&id, Duration::from_secs(30)).await? {
            Waited::Finished(job) if job.status == JobStatus::Completed => {}
            other => bail!("job {id} did not complete: {other:?}"),
        }
        latencies.push(started.elapsed().as_micros() as i64);
    }
    wait_completed(&store, sizes.wakeups as i64, LIMIT).await?;
    for worker in workers {
        worker.finish().await?;
    }
    store.close().await?;
    latencies.sort_unstable();
    ensure!(latencies.len() == sizes.wakeups, "every wait answered");
    let ms = |p: f64| percentile(&latencies, p) as f64 / 1000.0;
    Ok(vec![
        Figure::new("await_p50", ms(50.0), "ms"),
        Figure::new("await_p99", ms(99.0), "ms"),
    ])
}
