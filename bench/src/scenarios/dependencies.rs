//! Jobs that wait for other jobs (`docs/workflows.md`): `fan-out`, one job
//! with 10,000 dependents (2,000 with `--quick`), and `fan-in`, 10,000 jobs with
//! one dependent that waits for all of them. Each is enqueued, then drained by
//! one in-process `Worker` with 10 slots, the shape of `drain-inproc-10`, so
//! the two drain figures read against that one: what the release costs per job.
//!
//! Figures: the enqueue of the graph (jobs/s; the fan-in's summary names every
//! dependency, so its enqueue reads 10,000 statuses in one transaction), and
//! the drain (jobs/s, the worker's start to every job completed). The fan-out's
//! root completion releases `RELEASE_BATCH` (1,000) dependents in its own
//! transaction; the worker's release backlog duty releases the rest, a bounded
//! transaction at a time, while the first ones run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::{EnqueueOptions, JobError, NewJob, Registry, Store};
use serde_json::json;

use super::{rate, run_worker_until, Figure, Sizes};
use crate::target::Target;
use crate::JOB;

const SLOTS: usize = 10;
const BATCH: usize = 1_000;
const LIMIT: Duration = Duration::from_secs(900);

/// `fan-out`: a root and its dependents.
pub async fn fan_out(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let n = sizes.drain_in_process;
    let store = target.open().await?;
    let started = Instant::now();
    let root = NewJob::new(JOB, json!(["root"]), EnqueueOptions::new())?;
    let root_id = root.id().to_owned();
    store.enqueue(root).await?;
    enqueue_in_batches(&store, n, || EnqueueOptions::new().after(&root_id)).await?;
    let enqueue = started.elapsed();
    let drain = drain(&store, n + 1).await?;
    store.close().await?;
    Ok(vec![
        Figure::new("fanout_enqueue", rate(n + 1, enqueue), "jobs/s"),
        Figure::new("fanout_drain_10slots", rate(n + 1, drain), "jobs/s"),
    ])
}

/// `fan-in`: jobs and the one that waits for them all.
pub async fn fan_in(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let n = sizes.drain_in_process;
    let store = target.open().await?;
    let started = Instant::now();
    let ids = enqueue_in_batches(&store, n, EnqueueOptions::new).await?;
    let summary_opts = ids.iter().fold(EnqueueOptions::new(), |o, id| o.after(id));
    let summary_started = Instant::now();
    store
        .enqueue(NewJob::new(JOB, json!(["summary"]), summary_opts)?)
        .await?;
    let summary = summary_started.elapsed();
    let enqueue = started.elapsed();
    let drain = drain(&store, n + 1).await?;
    store.close().await?;
    Ok(vec![
        Figure::new("fanin_enqueue", rate(n + 1, enqueue), "jobs/s"),
        Figure::new("fanin_summary_enqueue", summary.as_secs_f64() * 1e3, "ms"),
        Figure::new("fanin_drain_10slots", rate(n + 1, drain), "jobs/s"),
    ])
}

/// Enqueues `n` no-op jobs in batches with `opts()`; returns their ids.
async fn enqueue_in_batches(
    store: &Arc<dyn Store>,
    n: usize,
    opts: impl Fn() -> EnqueueOptions,
) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        let jobs = (ids.len()..n.min(ids.len() + BATCH))
            .map(|i| NewJob::new(JOB, json!([i]), opts()))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        ids.extend(jobs.iter().map(|j| j.id().to_owned()));
        store.enqueue_batch(jobs).await?;
    }
    Ok(ids)
}

/// Runs one in-process worker until `jobs` are completed; how long it took.
async fn drain(store: &Arc<dyn Store>, jobs: usize) -> Result<Duration> {
    let registry = Registry::new().register_fn(JOB, |_ctx, _args: serde_json::Value| async {
        Ok::<(), JobError>(())
    })?;
    let (took, report) = run_worker_until(store, registry, SLOTS, jobs as i64, LIMIT).await?;
    ensure!(
        report.completed == jobs as u64,
        "the worker completed {} of {jobs} jobs",
        report.completed
    );
    Ok(took)
}
