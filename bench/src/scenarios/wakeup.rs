//! (5) Idle wake-up latency: one idle worker process; this process enqueues jobs
//! one at a time on a fixed 10 ms cadence (the cadence is the workload — a trickle
//! that lets the worker go idle between jobs — not a synchronization), each job
//! carrying `t0`, the wall clock just before its enqueue call. The worker records
//! `start − t0` in its handler: the latency a user sees from "enqueue returned
//! soon" to "my code runs", including the commit and the cross-process wake-up.
//! The trickle and the latency reading are shared with `fairness.rs`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use duraq_core::{EnqueueOptions, NewJob, Store};
use serde_json::{json, Value};
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
    trickle(&store, sizes.wakeups, SPACING, &EnqueueOptions::new()).await?;
    wait_completed(&store, sizes.wakeups as i64, Duration::from_secs(120)).await?;
    let worker = workers.pop().context("one worker")?;
    let latencies = latencies_us(&worker.finish().await?, sizes.wakeups)?;
    let ms = |p: f64| percentile(&latencies, p) as f64 / 1000.0;
    Ok(vec![
        Figure::new("wakeup_p50", ms(50.0), "ms"),
        Figure::new("wakeup_p99", ms(99.0), "ms"),
        Figure::new("wakeup_max", ms(100.0), "ms"),
    ])
}

/// Enqueues `count` no-op jobs with `opts` one at a time, one every `spacing`
/// (the cadence is the workload), each carrying `t0` for the bench worker's
/// handler to time; returns their ids in enqueue order.
pub(super) async fn trickle(
    store: &Arc<dyn Store>,
    count: usize,
    spacing: Duration,
    opts: &EnqueueOptions,
) -> Result<Vec<String>> {
    let start = Instant::now();
    let mut ids = Vec::with_capacity(count);
    for i in 0..count {
        tokio::time::sleep_until(start + spacing * i as u32).await;
        let args = json!({ "t0": now_us(), "i": i });
        let outcome = store.enqueue(NewJob::new(JOB, args, opts.clone())?).await?;
        ids.push(outcome.job_id().to_owned());
    }
    Ok(ids)
}

/// The enqueue-to-start latencies (µs) a bench worker's result line reports,
/// sorted, checking there is one per timed job (`expected`).
pub(super) fn latencies_us(result: &Value, expected: usize) -> Result<Vec<i64>> {
    let mut latencies: Vec<i64> = result["latencies_us"]
        .as_array()
        .context("latencies_us")?
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    ensure!(
        latencies.len() == expected,
        "{} latencies for {expected} jobs",
        latencies.len()
    );
    latencies.sort_unstable();
    Ok(latencies)
}

/// Nearest-rank percentile of sorted `values`.
pub(super) fn percentile(sorted: &[i64], p: f64) -> i64 {
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
