//! The stored throughput history as the dashboard shows it (`docs/history.md`),
//! on a real SQLite file: `/metrics` counters from the stored totals (every
//! outcome of every queue, 0 when none, unchanged by a prune and by a
//! restart), the overview's chart (legend, axes, completions and failures as
//! separate series, the `?range=` switch, `invalid-range`), and two
//! dashboards, or one reopened, rendering the same numbers.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::get;
use duraq_core::inspect::PruneRequest;
use duraq_core::{EnqueueOptions, NewJob, Outcome, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{render_metrics, router, WebOptions};

async fn open(path: &std::path::Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(path, SqliteOptions::default()).expect("open sqlite"))
}

fn job_in(queue: &str) -> NewJob {
    let opts = EnqueueOptions {
        queue: Some(queue.to_owned()),
        max_retries: Some(0),
        ..EnqueueOptions::new()
    };
    NewJob::new("work", serde_json::json!([]), opts).unwrap()
}

/// Enqueues `completed + failed` jobs of `queue` and finishes them so.
async fn run(store: &Arc<dyn Store>, queue: &str, completed: usize, failed: usize) {
    for _ in 0..completed + failed {
        store.enqueue(job_in(queue)).await.unwrap();
    }
    let req = duraq_core::driver::ClaimRequest {
        worker_id: "w".into(),
        job_names: vec!["work".into()],
        queues: Some(vec![queue.to_owned()]),
        queue_config: Default::default(),
        limit: completed + failed,
        turns: Default::default(),
    };
    let jobs = store.claim(&req).await.unwrap();
    assert_eq!(jobs.len(), completed + failed);
    let reports = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let outcome = if i < completed {
                Outcome::Completed
            } else {
                Outcome::failed("boom")
            };
            (j.lease().unwrap(), outcome)
        })
        .collect();
    assert!(store
        .report_batch(reports)
        .await
        .unwrap()
        .iter()
        .all(|a| *a));
}

fn metric(text: &str, queue: &str, outcome: &str) -> Option<u64> {
    let series =
        format!("duraq_queue_job_outcomes_total{{queue=\"{queue}\",outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map(|v| v.trim().parse().unwrap())
}

/// The legend's total of `series` in the overview HTML.
fn legend_total(html: &str, series: &str) -> i64 {
    let marker = format!("data-total=\"{series}\">");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no legend for {series}"))
        + marker.len();
    html[start..]
        .split('<')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_counters_come_from_the_stored_totals_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("duraq.db");
    let store = open(&path).await;
    run(&store, "mail", 3, 2).await;
    store.enqueue(job_in("idle")).await.unwrap();
    let text = render_metrics(Some(store.as_ref()), None).await.unwrap();
    assert_eq!(metric(&text, "mail", "enqueued"), Some(5));
    assert_eq!(metric(&text, "mail", "completed"), Some(3));
    assert_eq!(metric(&text, "mail", "failed"), Some(2));
    for outcome in ["retried", "cancelled", "orphaned"] {
        assert_eq!(metric(&text, "mail", outcome), Some(0), "{outcome} at 0");
    }
    assert_eq!(
        metric(&text, "idle", "completed"),
        Some(0),
        "every known queue"
    );
    assert!(text.contains("# TYPE duraq_queue_job_outcomes counter"));

    // Prune lowers the gauges, never the counters.
    let prune = PruneRequest {
        completed_older_than: Some(Duration::ZERO),
        failed_older_than: Some(Duration::ZERO),
        ..PruneRequest::default()
    };
    assert_eq!(store.prune(&prune).await.unwrap().deleted, 5);
    store.close().await.unwrap();
    drop(store);

    let reopened = open(&path).await;
    let after = render_metrics(Some(reopened.as_ref()), None).await.unwrap();
    assert_eq!(
        metric(&after, "mail", "completed"),
        Some(3),
        "after restart"
    );
    assert_eq!(metric(&after, "mail", "failed"), Some(2));
    reopened.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_database_counts_every_enqueue_in_the_legend() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("duraq.db")).await;
    // A dashboard's sampler on the empty database finds nothing to sample.
    store.record_history().await.unwrap();
    for _ in 0..14 {
        store.enqueue(job_in("webhooks")).await.unwrap();
    }
    // The first sampler after them (a worker's, a dashboard's).
    store.record_history().await.unwrap();
    let app = router(store.clone(), WebOptions::default());
    let (_, _, html) = get(&app, "/").await;
    assert_eq!(legend_total(&html, "enqueued"), 14);
    drop(app);
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_charts_the_stored_history_the_same_in_every_dashboard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("duraq.db");
    let store = open(&path).await;
    store.enqueue(job_in("mail")).await.unwrap();
    // A sample before the jobs run: the chart shows what happened since, and
    // (the database's first sample) what happened before it too.
    store.record_history().await.unwrap();
    run(&store, "mail", 4, 3).await;

    let one = router(store.clone(), WebOptions::default());
    let (status, _, html) = get(&one, "/").await;
    assert_eq!(status, 200);
    assert!(html.contains("id=\"history\""), "chart section");
    assert!(html.contains("data-range=\"1h\""));
    assert!(html.contains("data-axis=\"x\"") && html.contains("data-axis=\"y\""));
    for series in ["completed", "failed", "retried", "cancelled", "enqueued"] {
        assert!(
            html.contains(&format!("<g data-series=\"{series}\"")),
            "{series} line"
        );
    }
    assert_eq!(legend_total(&html, "completed"), 4);
    assert_eq!(legend_total(&html, "failed"), 3);
    assert_eq!(legend_total(&html, "enqueued"), 8, "from the first enqueue");

    // Another dashboard on another handle of the same file, and the 24 h view.
    let other_store = open(&path).await;
    let two = router(other_store.clone(), WebOptions::default());
    let (_, _, html2) = get(&two, "/").await;
    for series in ["completed", "failed", "enqueued"] {
        assert_eq!(legend_total(&html2, series), legend_total(&html, series));
    }
    let (status, _, day) = get(&two, "/?range=24h").await;
    assert_eq!(status, 200);
    assert!(day.contains("data-range=\"24h\""));
    assert_eq!(legend_total(&day, "completed"), 4);
    let (status, _, week) = get(&two, "/?range=7d").await;
    assert_eq!(status, 200);
    assert_eq!(legend_total(&week, "failed"), 3);

    let (status, _, bad) = get(&two, "/?range=2h").await;
    assert_eq!(status, 400);
    assert!(bad.contains("error[invalid-range]"));
    drop((one, two));
    store.close().await.unwrap();
    other_store.close().await.unwrap();
}
