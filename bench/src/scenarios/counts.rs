//! (6) Count snapshot time against table size: the contract says snapshots read
//! counter rows, never `COUNT(*)` over jobs, so the time at 1,000,000 rows should
//! match the time at 10,000. Rows are loaded with batch enqueue (queued jobs);
//! each figure is the median of many snapshot calls after a warm-up.
//!
//! On the same 1,000,000 rows it also times a `jobs list` search no row matches
//! (`--args-contains` and `--error-contains` on queued jobs): the answer must come
//! within the bounded scan, [`DEFAULT_SCAN_LIMIT`] rows read, and say where to
//! resume, however large the table.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::inspect::JobFilter;
use duraq_core::limits::DEFAULT_SCAN_LIMIT;
use duraq_core::{JobStatus, Store};
use serde_json::json;

use super::{Figure, Sizes};
use crate::producer::enqueue_batched;
use crate::target::Target;

const WARMUP: usize = 20;
const SAMPLES: usize = 300;

pub async fn counts(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    enqueue_batched(&store, sizes.count_small, 1_000).await?;
    let small = snapshot_time(&store, sizes.count_small).await?;
    enqueue_batched(&store, sizes.count_large - sizes.count_small, 1_000).await?;
    let large = snapshot_time(&store, sizes.count_large).await?;
    let (search, scanned) = search_time(&store, sizes.count_large).await?;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Ok(vec![
        Figure::new(
            format!("count_snapshot_{}_rows", sizes.count_small),
            us(small),
            "µs",
        ),
        Figure::new(
            format!("count_snapshot_{}_rows", sizes.count_large),
            us(large),
            "µs",
        ),
        Figure::new(
            "count_snapshot_large_vs_small",
            large.as_secs_f64() / small.as_secs_f64(),
            "×",
        ),
        Figure::new(
            format!("search_unmatched_{}_rows", sizes.count_large),
            search.as_secs_f64() * 1e3,
            "ms",
        ),
        Figure::new("search_rows_scanned", scanned as f64, "rows"),
    ])
}

/// Median wall time of one `count_snapshot` call, checking it sees `rows` jobs.
async fn snapshot_time(store: &Arc<dyn Store>, rows: usize) -> Result<Duration> {
    for _ in 0..WARMUP {
        let snap = store.count_snapshot().await?;
        ensure!(
            snap.total == rows as i64,
            "snapshot total {} ≠ {rows}",
            snap.total
        );
    }
    let mut times = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        store.count_snapshot().await?;
        times.push(started.elapsed());
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// Median wall time of a search that matches nothing (args and error text on
/// queued jobs), checking it stopped at the scan budget and said where to resume.
async fn search_time(store: &Arc<dyn Store>, rows: usize) -> Result<(Duration, usize)> {
    // The default budget, or half the table under --quick, so that it stops early.
    let budget = DEFAULT_SCAN_LIMIT.min(rows / 2);
    let filter = JobFilter {
        statuses: vec![JobStatus::Queued],
        args_contains: Some(json!({"no-such-key": 1})),
        error_contains: Some("no such error".into()),
        limit: Some(50),
        scan_limit: Some(budget),
        ..JobFilter::default()
    };
    let mut times = Vec::new();
    let mut scanned = 0;
    for _ in 0..7 {
        let started = Instant::now();
        let page = store.search_jobs(&filter).await?;
        times.push(started.elapsed());
        ensure!(
            page.jobs.is_empty(),
            "the search matched {} jobs",
            page.jobs.len()
        );
        ensure!(page.resume.is_some(), "the scan did not stop at its budget");
        ensure!(
            page.scanned <= budget,
            "the search read {} rows, more than its budget",
            page.scanned
        );
        scanned = page.scanned;
    }
    times.sort_unstable();
    Ok((times[times.len() / 2], scanned))
}
