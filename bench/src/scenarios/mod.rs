//! The scenarios of issue 7, one `run` each on a fresh database.
//!
//! A run prints one JSON line per figure it measured, tagged with the store, the
//! run number and the 1-minute load average when it started (so a noisy machine
//! shows in the results), plus one `settings` line recording the durability
//! settings the database reported. xtask repeats runs and `report` takes medians.
//!
//! Layout: `enqueue` (one by one, batched, 8 producers, replay, hot-key
//! replace), `drain` (worker processes draining a table, live end-to-end, peak
//! RSS), `retained` (`drain-retained`: the in-process drain and both enqueues
//! behind 1,000,000 completed jobs, next to the same on an empty store),
//! `soak` and `soak_size` (`soak`: a steady rate for 30 minutes with retention
//! on, sampled every minute; opt-in, see [`names`]), `bulk`
//! (`bulk-retry`: 100,000 failed jobs retried at once, timed per batch), `wakeup` (idle wake-up latency), `counts` (snapshot time vs table size),
//! `raw` and `raw_pg` (the bare driver's ceiling on duraq's schema, for
//! `enqueue-one`, `enqueue-batch`, the 8-producer enqueues and the drains:
//! `raw-one`, `raw-batch`, `raw-8conn`, `raw-drain`), `dashboard` (server time
//! of the dashboard's overview and jobs pages on the `counts` table size),
//! `dependencies` (`fan-out` and `fan-in`: a graph enqueued and drained),
//! `durable` (`steps`: a three-step job against three chained jobs; `await`:
//! enqueue-to-awaited-result latency),
//! `fairness` (a drain of jobs spread over 10 fairness keys next to the same
//! drain without keys, and a trickle of one key's jobs timed on an idle queue
//! and behind another key's 1,000,000-job backlog; run once for SQLite, see
//! [`names`]).

mod bulk;
mod counts;
mod dashboard;
mod dependencies;
mod drain;
mod durable;
mod enqueue;
mod fairness;
mod raw;
mod raw_pg;
mod raw_rows;
mod retained;
mod soak;
mod soak_size;
mod wakeup;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use duraq_core::inspect::StatusCounts;
use duraq_core::worker::PrefetchPolicy;
use duraq_core::{JobStatus, Store};
use serde_json::json;

use crate::args::Args;
use crate::target::{Kind, Target};

/// One measured figure.
pub struct Figure {
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
}

impl Figure {
    pub fn new(name: impl Into<String>, value: f64, unit: &'static str) -> Self {
        Self {
            name: name.into(),
            value,
            unit,
        }
    }
}

/// Workload sizes: the in a full run, tiny ones for `--quick`.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub one_by_one: usize,
    pub batch_total: usize,
    pub batch: usize,
    pub producers_total: usize,
    pub drain: usize,
    pub drain_in_process: usize,
    pub e2e: usize,
    pub wakeups: usize,
    pub count_small: usize,
    pub count_large: usize,
    pub key_ops: usize,
    /// Completed jobs `drain-retained` leaves in the store before it measures.
    pub retained: usize,
    /// Failed jobs `bulk-retry` retries at once.
    pub bulk: usize,
    /// The other key's backlog `fairness` trickles jobs past.
    pub fair_backlog: usize,
    /// How long `soak` runs (`--minutes` overrides it).
    pub soak_minutes: f64,
    /// Jobs per second `soak` enqueues (`--rate` overrides it).
    pub soak_rate: u64,
}

impl Sizes {
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                one_by_one: 300,
                batch_total: 5_000,
                batch: 1_000,
                producers_total: 800,
                drain: 2_000,
                drain_in_process: 2_000,
                e2e: 800,
                wakeups: 30,
                count_small: 1_000,
                count_large: 10_000,
                key_ops: 200,
                retained: 2_000,
                bulk: 2_000,
                // SQLite drains 100,000 in about 2.5 s here, no longer than
                // the trickle and its waits: the smoke run needs a backlog
                // that outlasts them.
                fair_backlog: 300_000,
                soak_minutes: 1.0,
                soak_rate: 500,
            }
        } else {
            Self {
                one_by_one: 20_000,
                batch_total: 100_000,
                batch: 1_000,
                producers_total: 20_000,
                drain: 50_000,
                drain_in_process: 10_000,
                e2e: 20_000,
                wakeups: 1_000,
                count_small: 10_000,
                count_large: 1_000_000,
                key_ops: 5_000,
                retained: 1_000_000,
                bulk: 100_000,
                fair_backlog: 1_000_000,
                soak_minutes: 30.0,
                soak_rate: 500,
            }
        }
    }
}

const ALL: &[&str] = &[
    "enqueue-one",
    "enqueue-batch",
    "enqueue-8tasks",
    "enqueue-8procs",
    "drain-1w",
    "drain-4w",
    "drain-saturated-key",
    "drain-inproc-10",
    "drain-inproc-64",
    "drain-inproc-10-prefetch",
    "drain-inproc-10-prefetch0",
    "drain-inproc-64-prefetch",
    "drain-retained",
    "drain-ephemeral",
    "fairness",
    "fan-out",
    "fan-in",
    "steps",
    "await",
    "bulk-retry",
    "e2e",
    "wakeup",
    "counts",
    "dashboard",
    "replay",
    "replace",
    "raw-one",
    "raw-batch",
    "raw-8conn",
    "raw-drain",
];

/// The scenario that runs only when asked for (`soak` is 30 minutes long).
pub const SOAK: &str = "soak";

/// The scenarios run for `kind`. Count snapshots and dashboard pages are
/// reads, identical under either SQLite `synchronous` mode, so they run once
/// for SQLite (FULL); so do the long ones about history, `drain-retained` and
/// `soak`, whose subject (what a lived-in store costs) is not the fsync, and
/// `fairness` (a million-job backlog), whose subject is a ratio to the same
/// work without fairness keys.
/// `soak` is listed with `soak` (xtask's `--soak`, or `--only soak`), and under
/// `quick` for PostgreSQL (autovacuum is its subject), so the smoke run covers
/// it in one minute instead of one per store.
pub fn names(kind: Kind, quick: bool, soak: bool) -> Vec<&'static str> {
    let long = |s: &str| {
        matches!(
            s,
            "counts" | "dashboard" | "drain-retained" | "fairness" | SOAK
        )
    };
    let with_soak = soak || (quick && kind == Kind::Postgres);
    ALL.iter()
        .copied()
        .chain(with_soak.then_some(SOAK))
        .filter(|s| !(kind == Kind::SqliteNormal && long(s)))
        .collect()
}

/// `duraq-bench run <scenario> --store K --database D --run I [--quick]`.
pub async fn run(args: &Args) -> Result<()> {
    let scenario = args.only_positional()?.to_owned();
    let kind = Kind::parse(args.required("store")?)?;
    let run: u32 = args.number("run", 1)?;
    let mut sizes = Sizes::new(args.flag("quick"));
    sizes.soak_minutes = args.number("minutes", sizes.soak_minutes)?;
    sizes.soak_rate = args.number("rate", sizes.soak_rate)?;
    let load1 = load1();
    let target = Target::fresh(kind, args.required("database")?)?;
    let result = match scenario.as_str() {
        SOAK => soak::soak(&target, sizes).await,
        _ => run_one(&scenario, &target, sizes)
            .await
            .map(|f| (f, vec![])),
    };
    let settings = target.settings().await.ok();
    target.cleanup().await?;
    let (figures, series) = result?;
    let store = kind.name();
    println!(
        "{}",
        json!({ "store": store, "settings": settings, "run": run })
    );
    for mut line in series {
        line["store"] = json!(store);
        line["run"] = json!(run);
        line["scenario"] = json!(scenario);
        println!("{line}");
    }
    for f in figures {
        let line = json!({
            "store": store, "scenario": scenario, "figure": f.name, "value": f.value,
            "unit": f.unit, "run": run, "load1": load1,
        });
        println!("{line}");
    }
    Ok(())
}

async fn run_one(scenario: &str, target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    match scenario {
        "enqueue-one" => enqueue::one_by_one(target, sizes).await,
        "enqueue-batch" => enqueue::batched(target, sizes).await,
        "enqueue-8tasks" => enqueue::eight_tasks(target, sizes).await,
        "enqueue-8procs" => enqueue::eight_processes(target, sizes).await,
        "replay" => enqueue::replay(target, sizes).await,
        "replace" => enqueue::replace(target, sizes).await,
        "drain-1w" => drain::drain(target, sizes, 1).await,
        "drain-4w" => drain::drain(target, sizes, 4).await,
        "drain-saturated-key" => drain::drain_saturated_key(target, sizes).await,
        "drain-inproc-10" => drain::drain_in_process(target, sizes, 10, None).await,
        "drain-inproc-64" => drain::drain_in_process(target, sizes, 64, None).await,
        "drain-inproc-10-prefetch0" => {
            drain::drain_in_process(target, sizes, 10, Some(PrefetchPolicy::Fixed(0))).await
        }
        "drain-inproc-10-prefetch" => {
            let prefetch = PrefetchPolicy::Fixed(drain::PREFETCH);
            drain::drain_in_process(target, sizes, 10, Some(prefetch)).await
        }
        "drain-inproc-64-prefetch" => {
            let prefetch = PrefetchPolicy::Fixed(drain::PREFETCH);
            drain::drain_in_process(target, sizes, 64, Some(prefetch)).await
        }
        "drain-retained" => retained::drain_retained(target, sizes).await,
        "drain-ephemeral" => drain::drain_ephemeral(target, sizes).await,
        "fairness" => fairness::fairness(target, sizes).await,
        "fan-out" => dependencies::fan_out(target, sizes).await,
        "fan-in" => dependencies::fan_in(target, sizes).await,
        "steps" => durable::steps(target, sizes).await,
        "await" => durable::await_result(target, sizes).await,
        "bulk-retry" => bulk::bulk_retry(target, sizes).await,
        "e2e" => drain::end_to_end(target, sizes).await,
        "wakeup" => wakeup::wakeup(target, sizes).await,
        "counts" => counts::counts(target, sizes).await,
        "dashboard" => dashboard::dashboard(target, sizes).await,
        "raw-one" => raw::one(target, sizes).await,
        "raw-batch" => raw::batch(target, sizes).await,
        "raw-8conn" => raw::eight_conns(target, sizes).await,
        "raw-drain" => raw::drain(target, sizes).await,
        other => bail!("unknown scenario {other:?}; known: {ALL:?} and {SOAK:?}"),
    }
}

/// The 1-minute load average now (noise indicator; `None` off Linux).
pub fn load1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Polls the count snapshot until `n` jobs are completed; returns when it saw
/// that. Polling every 2 ms costs one constant-time read per poll.
pub async fn wait_completed(store: &Arc<dyn Store>, n: i64, limit: Duration) -> Result<Instant> {
    wait_for_counts(store, limit, |counts| {
        let done = counts.get(JobStatus::Completed);
        (done < n).then(|| format!("only {done} of {n} jobs completed"))
    })
    .await
}

/// Waits until no job is queued or running (ephemeral jobs leave no
/// completed row to count); returns when.
pub async fn wait_drained(store: &Arc<dyn Store>, limit: Duration) -> Result<Instant> {
    wait_for_counts(store, limit, |counts| {
        let open = counts.get(JobStatus::Queued) + counts.get(JobStatus::HandedOff);
        (open > 0).then(|| format!("{open} jobs still queued or running"))
    })
    .await
}

/// Polls the count snapshot every 2 ms until `pending` says nothing is left
/// (`None`), failing with what it says once `limit` has passed.
async fn wait_for_counts(
    store: &Arc<dyn Store>,
    limit: Duration,
    pending: impl Fn(&StatusCounts) -> Option<String>,
) -> Result<Instant> {
    let deadline = Instant::now() + limit;
    loop {
        let snap = store.count_snapshot().await?;
        let Some(left) = pending(&snap.counts) else {
            return Ok(Instant::now());
        };
        if Instant::now() > deadline {
            bail!("{left} within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A job count for a figure's name: `1m` for 1,000,000, `100k`, `1500`, so a
/// quick run's figures never pass for a full run's.
pub fn size_label(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}m", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// `n / seconds`.
/// Runs one in-process worker of `slots` over `registry` until the store
/// counts `completed` completed jobs; how long that took from its start,
/// and the worker's report once stopped.
pub async fn run_worker_until(
    store: &Arc<dyn Store>,
    registry: duraq_core::Registry,
    slots: usize,
    completed: i64,
    limit: Duration,
) -> Result<(Duration, duraq_core::worker::WorkerReport)> {
    let worker = duraq_core::Worker::builder(store.clone(), registry)
        .concurrency(slots)
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let running = tokio::spawn(worker.run(async {
        let _ = stop_rx.await;
    }));
    let done = wait_completed(store, completed, limit).await?;
    let _ = stop_tx.send(());
    let report = running.await??;
    Ok((done - started, report))
}

pub fn rate(n: usize, elapsed: Duration) -> f64 {
    n as f64 / elapsed.as_secs_f64()
}
