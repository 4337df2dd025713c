//! One-by-one producers: the loop every enqueue scenario times, and the
//! `duraq-bench producer` child process that runs it in a process of its own.
//!
//! "One by one" means what an application does per request: build a `NewJob`,
//! await `Producer::enqueue`, next. `tasks` such loops share one store (in SQLite,
//! one writer thread that group-commits whatever is waiting); separate producer
//! processes share nothing but the database.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Result};
use duraq_core::{EnqueueOptions, NewJob, Store};
use serde_json::json;

use crate::args::Args;
use crate::child::{say, wait_line};
use crate::target::Target;
use crate::JOB;

/// Enqueues `count` no-op jobs one by one from `tasks` concurrent tasks sharing
/// `store` (the count is split evenly); returns how many were enqueued.
pub async fn enqueue_one_by_one(
    store: &Arc<dyn Store>,
    count: usize,
    tasks: usize,
) -> Result<usize> {
    let tasks = tasks.max(1);
    let mut set = tokio::task::JoinSet::new();
    for t in 0..tasks {
        let share = count / tasks + usize::from(t < count % tasks);
        let store = store.clone();
        set.spawn(async move {
            for i in 0..share {
                let job = NewJob::new(JOB, json!([t, i]), EnqueueOptions::new())?;
                store.enqueue(job).await?;
            }
            anyhow::Ok(share)
        });
    }
    let mut total = 0;
    while let Some(done) = set.join_next().await {
        total += done??;
    }
    ensure!(total == count, "enqueued {total} of {count}");
    Ok(total)
}

/// Enqueues `count` no-op jobs in batches of `batch` (one `enqueue_batch` each).
pub async fn enqueue_batched(store: &Arc<dyn Store>, count: usize, batch: usize) -> Result<()> {
    enqueue_batched_with(store, count, batch, &EnqueueOptions::new()).await
}

/// [`enqueue_batched`] with every job enqueued with `opts`.
pub async fn enqueue_batched_with(
    store: &Arc<dyn Store>,
    count: usize,
    batch: usize,
    opts: &EnqueueOptions,
) -> Result<()> {
    enqueue_batched_by(store, count, batch, |_| opts.clone()).await
}

/// [`enqueue_batched`] with the `i`-th job enqueued with `opts(i)` (say, a
/// fairness key chosen round robin).
pub async fn enqueue_batched_by(
    store: &Arc<dyn Store>,
    count: usize,
    batch: usize,
    opts: impl Fn(usize) -> EnqueueOptions,
) -> Result<()> {
    let mut done = 0;
    while done < count {
        let n = batch.min(count - done);
        let jobs = (done..done + n)
            .map(|i| NewJob::new(JOB, json!([i]), opts(i)))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        store.enqueue_batch(jobs).await?;
        done += n;
    }
    Ok(())
}

/// Child side: open the store, `ready`, wait for `go`, enqueue `--count` jobs one
/// by one from `--tasks` tasks, print `{"elapsed_s", "count"}`.
pub async fn main(args: &Args) -> Result<()> {
    let target = Target::from_args(args)?;
    let count: usize = args.number("count", 1000)?;
    let tasks: usize = args.number("tasks", 1)?;
    let store = target.open_producer().await?;
    say("ready");
    if !tokio::task::spawn_blocking(wait_line).await? {
        return Ok(());
    }
    let started = Instant::now();
    enqueue_one_by_one(&store, count, tasks).await?;
    let elapsed = started.elapsed().as_secs_f64();
    say(&json!({ "elapsed_s": elapsed, "count": count }).to_string());
    Ok(())
}
