//! `bulk-retry`: an operator retrying every failed job at once.
//!
//! The store first gets `bulk` failed jobs the way production makes them: batch
//! enqueues with no retries left, drained by an in-process worker whose handler
//! fails. Then one `run_bulk` retry over "every failed job", in the default
//! batches, as `duraq jobs retry --status failed` runs it. The progress callback
//! fires after each batch's transaction commits, so the time between two calls
//! bounds one batch: its page read plus its one transaction. The figures are the
//! whole rate and the longest and median batch, which is how the promise "no
//! transaction longer than a second" is checked.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::inspect::{run_bulk, BulkAction, BulkRequest, BulkSelection, JobFilter};
use duraq_core::{EnqueueOptions, JobError, JobStatus, NewJob, Registry, Worker};
use serde_json::json;

use super::{rate, Figure, Sizes};
use crate::target::Target;
use crate::JOB;

/// How long the failing fill may take before the run gives up.
const LIMIT: Duration = Duration::from_secs(600);

pub async fn bulk_retry(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let total = sizes.bulk;
    let mut done = 0;
    while done < total {
        let n = 1_000.min(total - done);
        let jobs = (done..done + n)
            .map(|i| NewJob::new(JOB, json!([i]), EnqueueOptions::new().max_retries(0)))
            .collect::<duraq_core::Result<Vec<_>>>()?;
        store.enqueue_batch(jobs).await?;
        done += n;
    }
    let registry = Registry::new().register_fn(JOB, |_ctx, _args: serde_json::Value| async {
        Err::<(), JobError>(JobError::new("bench: fails on purpose"))
    })?;
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(10)
        .prefetch(super::drain::PREFETCH)
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run(async {
        let _ = stop_rx.await;
    }));
    let deadline = Instant::now() + LIMIT;
    loop {
        let failed = store.count_snapshot().await?.counts.get(JobStatus::Failed);
        if failed >= total as i64 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "only {failed} of {total} jobs failed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop_tx.send(());
    running.await??;

    let request = BulkRequest::new(
        BulkAction::Retry,
        BulkSelection::Matching(JobFilter {
            statuses: vec![JobStatus::Failed],
            ..JobFilter::default()
        }),
    );
    let mut batches = Vec::new();
    let mut last = Instant::now();
    let started = last;
    let report = run_bulk(&*store, &request, &mut |_| {
        let now = Instant::now();
        batches.push(now - last);
        last = now;
    })
    .await?;
    let elapsed = started.elapsed();
    store.close().await?;
    ensure!(
        report.changed == total as u64,
        "retried {} of {total} failed jobs",
        report.changed
    );
    batches.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let longest = batches.last().copied().unwrap_or_default();
    let median = batches.get(batches.len() / 2).copied().unwrap_or_default();
    Ok(vec![
        Figure::new("bulk_retry", rate(total, elapsed), "jobs/s"),
        Figure::new("bulk_retry_longest_batch_ms", ms(longest), "ms"),
        Figure::new("bulk_retry_median_batch_ms", ms(median), "ms"),
        Figure::new("bulk_retry_batches", batches.len() as f64, "batches"),
    ])
}
