//! Producer-side scenarios: (1) one by one, (2) batched, (3) 8 concurrent
//! producers — as 8 tasks sharing one store in one process (what an app server
//! does; SQLite group commit applies) and as 8 processes (what 8 CLI invocations
//! or 8 app servers do; they share only the database) — and (7) an idempotent
//! replay of an existing key and `replace_scheduled` on one hot key.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{ensure, Result};
use duraq_core::{EnqueueOptions, EnqueueOutcome, NewJob, ScheduleKey};
use serde_json::json;

use super::{rate, Figure, Sizes};
use crate::child::Child;
use crate::producer::{enqueue_batched, enqueue_one_by_one};
use crate::target::Target;
use crate::JOB;

pub async fn one_by_one(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open_producer().await?;
    let started = Instant::now();
    enqueue_one_by_one(&store, sizes.one_by_one, 1).await?;
    let jobs_s = rate(sizes.one_by_one, started.elapsed());
    Ok(vec![Figure::new("enqueue_one", jobs_s, "jobs/s")])
}

pub async fn batched(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open_producer().await?;
    let started = Instant::now();
    enqueue_batched(&store, sizes.batch_total, sizes.batch).await?;
    let jobs_s = rate(sizes.batch_total, started.elapsed());
    Ok(vec![Figure::new("enqueue_batch", jobs_s, "jobs/s")])
}

pub async fn eight_tasks(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open_producer().await?;
    let started = Instant::now();
    enqueue_one_by_one(&store, sizes.producers_total, 8).await?;
    let jobs_s = rate(sizes.producers_total, started.elapsed());
    Ok(vec![Figure::new("enqueue_8tasks", jobs_s, "jobs/s")])
}

pub async fn eight_processes(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    // Open (and migrate) once here, so the children only open an existing schema.
    drop(target.open().await?);
    let share = sizes.producers_total / 8;
    let mut children = Vec::new();
    for _ in 0..8 {
        let mut args = vec!["producer".to_string()];
        args.extend(target.child_args());
        args.extend(["--count".into(), share.to_string()]);
        children.push(Child::spawn(&args)?);
    }
    for child in &mut children {
        child.expect("ready").await?;
    }
    let started = Instant::now();
    for child in &mut children {
        child.send("go")?;
    }
    for child in &mut children {
        child.result().await?;
    }
    let elapsed = started.elapsed();
    for child in children {
        child.close().await?;
    }
    Ok(vec![Figure::new(
        "enqueue_8procs",
        rate(share * 8, elapsed),
        "jobs/s",
    )])
}

pub async fn replay(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let job = || {
        NewJob::new(
            JOB,
            json!([1]),
            EnqueueOptions::new().idempotency_key("hot"),
        )
    };
    let first = store.enqueue(job()?).await?;
    ensure!(
        matches!(first, EnqueueOutcome::Created(_)),
        "first enqueue: {first:?}"
    );
    let started = Instant::now();
    for _ in 0..sizes.key_ops {
        let outcome = store.enqueue(job()?).await?;
        ensure!(
            matches!(outcome, EnqueueOutcome::Replayed(_)),
            "replay: {outcome:?}"
        );
    }
    let ops = rate(sizes.key_ops, started.elapsed());
    Ok(vec![Figure::new("idempotent_replay", ops, "ops/s")])
}

pub async fn replace(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let key = ScheduleKey::new("bench:hot")?;
    // A reminder an hour out, re-planned on every call: the hot-key pattern.
    let later = SystemTime::now() + Duration::from_secs(3_600);
    let started = Instant::now();
    for i in 0..sizes.key_ops {
        let job = NewJob::new(JOB, json!([i]), EnqueueOptions::new().run_at(later))?;
        store
            .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
            .await?;
    }
    let ops = rate(sizes.key_ops, started.elapsed());
    Ok(vec![Figure::new("replace_hot_key", ops, "ops/s")])
}
