//! `duraq demo`: the guided tour. It creates a fresh SQLite file,
//! enqueues a realistic mix (immediate work, jobs scheduled a few seconds out,
//! keyed replacements, idempotent replays, flaky jobs that retry after a short
//! backoff, one capped queue), drains it with an in-process worker behind a
//! progress bar, and prints counts, throughput and enqueue-to-start latency.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use duraq_core::worker::WorkerEvent;
use duraq_core::{JobError, QueueConfig, Registry, Worker};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::builtin::{register_builtins, Builtins};
use crate::db::Database;
use crate::demo_mix::{enqueue_mix, CAP, CAPPED_QUEUE};
use crate::demo_summary::{percentile, print_summary, round};
use crate::error::CliError;
use crate::output::print_json;
use crate::parse::now_ms;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the demo database (default: a fresh temporary folder).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// How many jobs to enqueue.
    #[arg(long, value_name = "N", default_value_t = 5_000)]
    pub jobs: usize,
    /// The global `--database`, only when it was given on the command line
    /// (`DURAQ_DATABASE_URL` and the default leave it `None`); set by `main`.
    #[arg(skip)]
    pub database: Option<String>,
    /// The global `--schema` (flag or `DURAQ_SCHEMA`); set by `main`.
    #[arg(skip)]
    pub schema: Option<String>,
}

const DEADLINE: Duration = Duration::from_secs(120);

pub async fn run(a: DemoArgs, json: bool) -> Result<()> {
    if a.jobs == 0 {
        return Err(CliError::new("invalid-demo", "--jobs must be at least 1").into());
    }
    let path = demo_path(&a)?;
    let store = crate::db::open_sqlite_file(&path).await?;

    let registry = demo_registry()?;
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(32)
        .poll_interval(Duration::from_millis(100))
        .queue(
            CAPPED_QUEUE,
            QueueConfig {
                max_concurrent: Some(CAP),
                priority: 0,
            },
        )
        .build()?;
    let latencies = Arc::new(Mutex::new(Vec::<i64>::with_capacity(a.jobs)));
    let busy = Arc::new(Mutex::new(BusyClock::default()));
    let mut events = worker.subscribe();
    let (sink, busy_sink) = (latencies.clone(), busy.clone());
    let collector = tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match events.recv().await {
                Ok(WorkerEvent::Started(s)) => {
                    sink.lock().unwrap().push(s.latency_ms);
                    busy_sink.lock().unwrap().started(Instant::now());
                }
                Ok(WorkerEvent::Finished(_)) => busy_sink.lock().unwrap().finished(Instant::now()),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
    });

    // The worker runs while the producer enqueues, as in production.
    let bar = progress_bar(a.jobs as u64);
    let started = Instant::now();
    let handle = worker.spawn();
    let mix = enqueue_mix(&store, a.jobs).await?;
    let enqueue_secs = started.elapsed().as_secs_f64();
    let snapshot = loop {
        let snap = store.count_snapshot().await?;
        let open = snap.counts.queued + snap.counts.handed_off;
        bar.set_position((snap.total - open) as u64);
        if open == 0 {
            break snap;
        }
        if started.elapsed() > DEADLINE {
            bar.abandon();
            return Err(CliError::new(
                "demo-stalled",
                format!("{open} jobs still open after {DEADLINE:?}"),
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let drain_secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let report = handle.shutdown_and_join().await?;
    let _ = collector.await;
    crate::db::close(&store).await;

    let mut lat = std::mem::take(&mut *latencies.lock().unwrap());
    lat.sort_unstable();
    let busy_secs = busy.lock().unwrap().total().as_secs_f64();
    let summary = json!({
        "database": path.display().to_string(),
        "requested": a.jobs,
        "rows": snapshot.total,
        "mix": {
            "immediate": mix.immediate, "scheduled": mix.scheduled, "keyedReplacements": mix.keyed,
            "idempotent": mix.idempotent, "idempotentReplays": mix.replays, "flaky": mix.flaky, "capped": mix.capped,
        },
        "enqueueSeconds": round(enqueue_secs),
        "drainSeconds": round(drain_secs),
        "busySeconds": round(busy_secs),
        // Attempts per second while the worker had work: the 1–3 s waits of the
        // scheduled jobs are not the worker's speed.
        "attemptsPerSecond": (report.claimed as f64 / busy_secs.max(1e-3)).round() as i64,
        "attempts": report.claimed,
        "counts": crate::counts::snapshot_json(&snapshot)["counts"].clone(),
        "total": snapshot.total,
        "revision": snapshot.revision,
        "latencyMs": {"p50": percentile(&lat, 50.0), "p99": percentile(&lat, 99.0), "samples": lat.len()},
    });
    if json {
        print_json(&summary);
    } else {
        print_summary(&summary, &snapshot);
    }
    Ok(())
}

/// The database file: a fresh file named by an explicit `--database sqlite:…`
/// (refused if it exists: the demo never writes into a database it did not
/// create), or `duraq-demo.db` in `--dir` or a new temporary folder, replaced on
/// each run.
fn demo_path(a: &DemoArgs) -> Result<PathBuf> {
    let explicit = match a.database.as_deref() {
        None => None,
        Some(url) => match Database::parse(url, a.schema.as_deref())? {
            Database::SqliteFile(path) => Some(path),
            Database::SqliteMemory => None,
            Database::Postgres { .. } => {
                return Err(CliError::new(
                    "invalid-database-url",
                    "the demo runs on an embedded SQLite file: give --database \
                     sqlite:<new file>, or leave --database out",
                )
                .into())
            }
        },
    };
    if let Some(path) = explicit {
        if a.dir.is_some() {
            return Err(CliError::new("invalid-demo", "give --dir or --database, not both").into());
        }
        if path.exists() {
            return Err(CliError::new(
                "demo-database-exists",
                format!(
                    "the demo writes a fresh database and {} already exists; name a new file",
                    path.display()
                ),
            )
            .into());
        }
        return Ok(path);
    }
    let path = demo_dir(a.dir.as_deref())?.join("duraq-demo.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(path)
}

/// The folder to use: the given one, or a new one under the system temp folder.
/// The file is kept either way so it can be inspected with `duraq jobs list`.
fn demo_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => {
            std::env::temp_dir().join(format!("duraq-demo-{}-{}", std::process::id(), now_ms()))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The built-ins plus three demo handlers: instant work, a slower report on the
/// capped queue, and a flaky job whose first attempt fails with a 200 ms backoff.
fn demo_registry() -> Result<Registry> {
    let mut registry = Registry::new();
    register_builtins(&mut registry, &Builtins::new())?;
    Ok(registry
        .register_fn("demo.work", |_ctx, _args| async { Ok(()) })?
        .register_fn("demo.report", |_ctx, _args| async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok(())
        })?
        .register_fn("demo.flaky", |ctx, _args| async move {
            if ctx.attempt() == 1 {
                return Err(JobError::new("demo: first attempt fails on purpose")
                    .retry_in(Duration::from_millis(200)));
            }
            Ok(())
        })?)
}

/// Time during which at least one job was running, from the worker's events.
#[derive(Default)]
struct BusyClock {
    running: u64,
    since: Option<Instant>,
    total: Duration,
}

impl BusyClock {
    fn started(&mut self, at: Instant) {
        if self.running == 0 {
            self.since = Some(at);
        }
        self.running += 1;
    }

    fn finished(&mut self, at: Instant) {
        self.running = self.running.saturating_sub(1);
        if self.running == 0 {
            if let Some(since) = self.since.take() {
                self.total += at - since;
            }
        }
    }

    fn total(&self) -> Duration {
        self.total
    }
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} draining [{bar:40}] {pos}/{len} jobs ({rate}, {elapsed})",
    ) {
        let style = style.with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        );
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
