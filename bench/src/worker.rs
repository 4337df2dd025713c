//! `duraq-bench worker`: a real worker process running duraq's own runtime
//! (`Worker` + `Registry`) with one no-op handler, so drain and end-to-end figures
//! include everything a production worker pays: claims, slot admission, spawning
//! a task per job, batched fenced reports, heartbeats.
//!
//! The handler does nothing but, for jobs whose args carry `{"t0": µs since the
//! epoch}` (stamped by the producer just before its enqueue call), record the
//! enqueue-to-start latency. Protocol (see [`crate::child`]): `ready` after opening
//! the store, start on `go`, graceful shutdown when stdin closes, then one JSON line
//! `{"completed", "claimed", "latencies_us", "peak_rss_kib"}`. With `--keep-ms K`
//! (and `--sweep-ms S`, default K / 4) the worker runs retention: completed jobs
//! older than K are pruned every S (the `soak` scenario).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use duraq_core::worker::RetentionPolicy;
use duraq_core::{JobError, Registry, Worker};
use serde_json::{json, Value};

use crate::args::Args;
use crate::child::{peak_rss_kib, say, wait_eof, wait_line};
use crate::target::Target;
use crate::JOB;

/// Microseconds since the Unix epoch (the clock producers stamp `t0` with).
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

pub async fn main(args: &Args) -> Result<()> {
    let target = Target::from_args(args)?;
    let concurrency: usize = args.number("concurrency", 64)?;
    let store = target.open().await?;
    say("ready");
    if !tokio::task::spawn_blocking(wait_line).await? {
        return Ok(()); // the parent gave up before starting us
    }

    let latencies: Arc<Mutex<Vec<i64>>> = Arc::default();
    let record = latencies.clone();
    let registry = Registry::new().register_fn(JOB, move |_ctx, args: Value| {
        if let Some(t0) = args.get("t0").and_then(Value::as_i64) {
            record.lock().expect("latency lock").push(now_us() - t0);
        }
        async { Ok::<(), JobError>(()) }
    })?;
    let mut builder = Worker::builder(store, registry).concurrency(concurrency);
    if let Some(keep) = args.get("keep-ms") {
        let keep: u64 = keep.parse()?;
        let sweep: u64 = args.number("sweep-ms", (keep / 4).max(1))?;
        builder = builder.retention(
            RetentionPolicy::new(Duration::from_millis(sweep))
                .completed(Duration::from_millis(keep)),
        );
    }
    let worker = builder.build()?;
    let stop = tokio::task::spawn_blocking(wait_eof);
    let report = worker
        .run(async {
            let _ = stop.await;
        })
        .await?;

    let latencies = std::mem::take(&mut *latencies.lock().expect("latency lock"));
    let result = json!({
        "completed": report.completed,
        "claimed": report.claimed,
        "failed": report.failed,
        "latencies_us": latencies,
        "peak_rss_kib": peak_rss_kib("/proc/self/status").ok(),
    });
    say(&result.to_string());
    Ok(())
}
