//! (6) Count snapshot time against table size: the contract says snapshots read
//! counter rows, never `COUNT(*)` over jobs, so the time at 1,000,000 rows should
//! match the time at 10,000. Rows are loaded with batch enqueue (queued jobs);
//! each figure is the median of many snapshot calls after a warm-up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use duraq_core::Store;

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
