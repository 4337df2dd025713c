//! `promtool check metrics` (the Prometheus project's linter, from Debian's
//! `prometheus` package) on real scrapes: a SQLite store with jobs in several
//! queues, after a real worker ran some of them, served on 127.0.0.1:0 by the
//! dashboard router and by `metrics_router` (store gauges and worker series),
//! fetched over HTTP as `curl … | promtool check metrics` would; and a store
//! whose queue and job names hold `"` and `\`, in both exposition
//! formats (promtool reads OpenMetrics with its classic parser: it must parse
//! it, and may only remark that a counter's help is named without `_total`,
//! as OpenMetrics names it).
//!
//! Without promtool this test prints why and skips; under `CI=true` it fails
//! instead (`.ci/run` installs `prometheus`). `DURAQ_TEST_PROMTOOL` names
//! another promtool binary.
//!
//! Run: `cargo test -p duraq-web --test promtool`.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{http, spawn_server};
use duraq_core::{EnqueueOptions, JobError, JobStatus, NewJob, Registry, Store, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{metrics_router, router, WebOptions, WorkerMetrics};

/// Whether this is CI (`CI=true`), where nothing may skip.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The promtool to run, or `None` (after saying so) when there is none here.
fn promtool() -> Option<PathBuf> {
    let path = std::env::var_os("DURAQ_TEST_PROMTOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("promtool"));
    let runs = Command::new(&path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if runs {
        return Some(path);
    }
    let msg = format!(
        "promtool: `{}` does not run; install Debian's `prometheus` package \
         (`apt-get install --no-install-recommends prometheus`) to run this test",
        path.display()
    );
    if in_ci() {
        panic!("{msg} (CI=true: nothing may skip)");
    }
    eprintln!("SKIPPED {msg}");
    None
}

/// `promtool check metrics` on `text`: Ok, or its complaints.
fn check(promtool: &PathBuf, text: &str) -> Result<(), String> {
    run_promtool(promtool, text, false)
}

/// [`check`] for an OpenMetrics text: promtool must parse it, and its only
/// remarks may be a counter family's help named without `_total`.
fn check_openmetrics(promtool: &PathBuf, text: &str) -> Result<(), String> {
    run_promtool(promtool, text, true)
}

fn run_promtool(promtool: &PathBuf, text: &str, openmetrics: bool) -> Result<(), String> {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("wait for promtool");
    if out.status.success() {
        return Ok(());
    }
    // Exit status 3: lint remarks only (1 is a parse failure).
    let remarks =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let only_counter_help = remarks.lines().all(|l| {
        l.strip_suffix(" no help text")
            .is_some_and(|name| name.ends_with("_total"))
    });
    if openmetrics && out.status.code() == Some(3) && only_counter_help {
        return Ok(());
    }
    Err(format!(
        "promtool check metrics: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

async fn enqueue(store: &Arc<dyn Store>, name: &str, queue: &str, opts: EnqueueOptions) {
    let opts = EnqueueOptions {
        queue: Some(queue.into()),
        max_retries: Some(0),
        ..opts
    };
    store
        .enqueue(NewJob::new(name, serde_json::json!({}), opts).unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_the_scrapes_of_both_endpoints() {
    let Some(promtool) = promtool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("jobs.db"), SqliteOptions::default()).unwrap());
    for _ in 0..3 {
        enqueue(&store, "send_receipt", "default", EnqueueOptions::new()).await;
    }
    enqueue(&store, "charge_card", "billing", EnqueueOptions::new()).await;
    let later = EnqueueOptions::new().run_in(Duration::from_secs(3600));
    enqueue(&store, "nightly_report", "reports", later).await;

    // A real worker completes the receipts and fails the charge.
    let registry = Registry::new()
        .register_fn("send_receipt", |_, _| async { Ok::<(), JobError>(()) })
        .unwrap()
        .register_fn("charge_card", |_, _| async {
            Err::<(), _>(JobError::new("card declined").discard())
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry)
        .concurrency(2)
        .build()
        .unwrap();
    let metrics = WorkerMetrics::new(2);
    let mut events = worker.subscribe();
    let mut counts = store.subscribe_counts();
    let handle = worker.spawn();
    loop {
        let c = store.count_snapshot().await.unwrap().counts;
        if c.get(JobStatus::Completed) == 3 && c.get(JobStatus::Failed) == 1 {
            break;
        }
        counts.recv().await.unwrap();
    }
    handle.shutdown_and_join().await.unwrap();
    while let Ok(event) = events.try_recv() {
        metrics.observe(&event);
    }
    // Due jobs that no worker handles, in a queue of their own and beside others.
    enqueue(&store, "resize_image", "images", EnqueueOptions::new()).await;
    enqueue(&store, "send_welcome", "default", EnqueueOptions::new()).await;

    let dashboard = spawn_server(router(store.clone(), WebOptions::new())).await;
    let worker_endpoint =
        spawn_server(metrics_router(Some(store.clone()), Some(metrics), None)).await;
    for (endpoint, addr) in [("dashboard", dashboard), ("worker", worker_endpoint)] {
        // What `curl` asks for (`*/*`): the classic text format, which promtool reads.
        let (status, head, body) = http(addr, "GET", "/metrics", &[("Accept", "*/*")], "").await;
        assert_eq!(status, 200, "{endpoint}: {head}");
        assert!(head.contains("version=0.0.4"), "{endpoint}: {head}");
        for name in [
            "duraq_build_info",
            "duraq_queue_jobs",
            "duraq_queue_latency_seconds",
            "duraq_unhandled_due_jobs",
        ] {
            assert!(
                body.contains(&format!("\n{name}{{")),
                "{endpoint}: no {name}"
            );
        }
        if endpoint == "worker" {
            assert!(body.contains("\nduraq_attempts_total{"), "{body}");
            assert!(body.contains("\nduraq_job_run_seconds_bucket{"), "{body}");
        }
        if let Err(complaints) = check(&promtool, &body) {
            panic!("{endpoint} /metrics:\n{complaints}\n--- the scrape:\n{body}");
        }
    }
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_hostile_names_in_both_formats() {
    let Some(promtool) = promtool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("jobs.db"), SqliteOptions::default()).unwrap());
    for (name, queue) in [
        ("send\"mail", "m\"q"),
        ("back\\slash", "c:\\jobs\\"),
        ("say \"\\hi\"", "q\"\\\""),
    ] {
        enqueue(&store, name, queue, EnqueueOptions::new()).await;
    }
    let dashboard = spawn_server(router(store.clone(), WebOptions::new())).await;
    let openmetrics = "application/openmetrics-text; version=1.0.0";
    for accept in ["*/*", openmetrics] {
        let (status, head, body) =
            http(dashboard, "GET", "/metrics", &[("Accept", accept)], "").await;
        assert_eq!(status, 200, "{head}");
        assert!(
            body.contains("queue=\"m\\\"q\""),
            "{accept}: the quote is escaped\n{body}"
        );
        let checked = if accept == openmetrics {
            check_openmetrics(&promtool, &body)
        } else {
            check(&promtool, &body)
        };
        if let Err(complaints) = checked {
            panic!("{accept}:\n{complaints}\n--- the scrape:\n{body}");
        }
    }
    store.close().await.unwrap();
}
