//! The job mix `duraq demo` enqueues: mostly immediate work, a slice scheduled
//! one to three seconds out, keyed reminders moved twice (so their earlier owners
//! are cancelled), idempotent enqueues replayed once, flaky jobs and a capped
//! queue. Kinds follow the job index, so every run enqueues the same mix; plain
//! jobs go in batches of 500 (one transaction each), as a real producer would.

use std::sync::Arc;

use anyhow::{Context, Result};
use duraq_core::{EnqueueOptions, EnqueueOutcome, NewJob, ScheduleKey, Store};
use serde_json::json;

use crate::parse::now_ms;

/// The demo's capped queue and its cap.
pub const CAPPED_QUEUE: &str = "reports";
pub const CAP: i64 = 2;

/// What was put into the database.
#[derive(Default)]
pub struct Mix {
    pub immediate: usize,
    pub scheduled: usize,
    pub keyed: usize,
    pub idempotent: usize,
    pub replays: usize,
    pub flaky: usize,
    pub capped: usize,
}

pub async fn enqueue_mix(store: &Arc<dyn Store>, n: usize) -> Result<Mix> {
    let mut mix = Mix::default();
    let now = now_ms();
    // About a tenth of the rows are keyed reminders, each moved twice (3 inserts).
    let keys = n / 30;
    let mut batch = Vec::with_capacity(500);
    // Each job's kind follows its index, so every run enqueues the same mix.
    for i in 0..n - keys * 3 {
        let (name, opts, args) = match i % 20 {
            0..=2 => {
                mix.scheduled += 1;
                let at = now + 1_000 + (i as i64 * 7_919) % 2_000;
                (
                    "demo.work",
                    EnqueueOptions {
                        scheduled_at_ms: Some(at),
                        ..EnqueueOptions::new()
                    },
                    json!({"i": i}),
                )
            }
            3 => {
                mix.flaky += 1;
                (
                    "demo.flaky",
                    EnqueueOptions::new().queue("flaky"),
                    json!({"i": i}),
                )
            }
            4 => {
                mix.capped += 1;
                (
                    "demo.report",
                    EnqueueOptions::new().queue(CAPPED_QUEUE),
                    json!({"i": i}),
                )
            }
            5 => {
                mix.idempotent += 1;
                let opts = EnqueueOptions::new()
                    .queue("mail")
                    .idempotency_key(format!("order:{i}:receipt"));
                ("demo.work", opts, json!({"order": i}))
            }
            _ => {
                mix.immediate += 1;
                let name = if i % 2 == 0 {
                    "demo.work"
                } else {
                    "duraq.noop"
                };
                (name, EnqueueOptions::new(), json!({"i": i}))
            }
        };
        batch.push(NewJob::new(name, args, opts)?);
        if batch.len() == 500 {
            flush(store, &mut batch, &mut mix).await?;
        }
    }
    flush(store, &mut batch, &mut mix).await?;

    // Keys are replaced concurrently (the store folds them into group commits);
    // each key's own replacements stay in order.
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..keys {
        let store = store.clone();
        tasks.spawn(async move {
            let key = ScheduleKey::new(format!("event:{k}:reminder"))?;
            for revision in 0..3i64 {
                let opts = EnqueueOptions {
                    scheduled_at_ms: Some(now + 500 + revision * 300),
                    ..EnqueueOptions::new()
                };
                let job =
                    NewJob::new("demo.work", json!({"event": k, "revision": revision}), opts)?;
                store
                    .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
                    .await?;
            }
            Ok::<(), duraq_core::Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.context("demo: a replacement task failed")??;
        mix.keyed += 3;
    }
    Ok(mix)
}

/// Enqueues `batch` in one transaction, then replays its idempotent jobs once.
async fn flush(store: &Arc<dyn Store>, batch: &mut Vec<NewJob>, mix: &mut Mix) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let replays: Vec<NewJob> = batch
        .iter()
        .filter(|j| j.idempotency_key().is_some())
        .map(|j| j.clone().with_id(duraq_core::driver::new_job_id()))
        .collect();
    store.enqueue_batch(std::mem::take(batch)).await?;
    for outcome in store.enqueue_batch(replays).await? {
        match outcome {
            EnqueueOutcome::Replayed(_) => mix.replays += 1,
            other => anyhow::bail!("demo: an idempotent replay was not replayed: {other:?}"),
        }
    }
    Ok(())
}
