//! (5) Idle wake-up latency: one idle worker process; this process enqueues jobs
//! one at a time on a fixed 10 ms cadence (the cadence is the workload — a trickle
//! that lets the worker go idle between jobs — not a synchronization), each job
//! carrying `t0`, the wall clock just before its enqueue call. The worker records
//! `start − t0` in its handler: the latency a user sees from "enqueue returned
//! soon" to "my code runs", including the commit and the cross-process wake-up.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use duraq_core::{EnqueueOptions, NewJob};
use serde_json::json;
use tokio::time::Instant;

use super::drain::start_workers;
use super::{wait_completed, Figure, Sizes};
use crate::target::Target;
use crate::worker::now_us;
use crate::JOB;

const SPACING: Duration = Duration::from_millis(10);

pub async fn wakeup(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let store = target.open().await?;
    let mut workers = start_workers(target, 1).await?;
    workers[0].send("go")?;
    tokio::time::sleep(Duration::from_millis(500)).await; // let it go idle
    let start = Instant::now();
    for i in 0..sizes.wakeups {
        tokio::time::sleep_until(start + SPACING * i as u32).await;
        let args = json!({ "t0": now_us(), "i": i });
        store
            .enqueue(NewJob::new(JOB, args, EnqueueOptions::new())?)
            .await?;
    }
    wait_completed(&store, sizes.wakeups as i64, Duration::from_secs(120)).await?;
    let worker = workers.pop().context("one worker")?;
    let result = worker.finish().await?;
    let mut latencies: Vec<i64> = result["latencies_us"]
        .as_array()
        .context("latencies_us")?
        .iter()
        .filter_map(|v| v.as_i64())
        .collect();
    ensure!(
        latencies.len() == sizes.wakeups,
        "{} latencies for {} jobs",
        latencies.len(),
        sizes.wakeups
    );
    latencies.sort_unstable();
    let ms = |p: f64| percentile(&latencies, p) as f64 / 1000.0;
    Ok(vec![
        Figure::new("wakeup_p50", ms(50.0), "ms"),
        Figure::new("wakeup_p99", ms(99.0), "ms"),
        Figure::new("wakeup_max", ms(100.0), "ms"),
    ])
}

/// Nearest-rank percentile of sorted `values`.
fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
    }
}
