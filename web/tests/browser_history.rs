//! The overview's throughput chart in a real browser: headless Chromium through
//! `chromedriver` (see `support`), on a SQLite file served in-process, as in
//! `browser/dash.rs`.
//!
//! After real jobs completed, failed, were retried and cancelled, the chart
//! has its axes with tick labels and a legend whose totals are exactly what
//! ran, with completions and failures drawn as separate series; a job that
//! completes while the page is open shows up without a reload (the live
//! refresh); a second dashboard on its own handle of the file shows the same
//! numbers, and so does a dashboard started afresh after the first is gone
//! (the history is in the database); the 24 h switch keeps the totals.
//! Screenshots go to `<target>/web-screenshots/`.
//!
//! Run: `cargo test -p duraq-web --test browser_history`.

mod support;

use std::path::Path;
use std::sync::Arc;

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob, Outcome};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;
use support::Page;

/// A dashboard served on a loopback port from its own handle of `path`.
struct Dash {
    base: String,
    server: tokio::task::JoinHandle<()>,
}

impl Dash {
    async fn start(path: &Path) -> Dash {
        let store = SqliteStore::open(path, SqliteOptions::default()).expect("open SQLite store");
        let app = router(Arc::new(store), WebOptions::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Dash {
            base: format!("http://{addr}"),
            server,
        }
    }
}

/// Enqueues a job in `queue` and runs one attempt with `outcome`.
async fn attempt(store: &SqliteStore, queue: &str, max_retries: u32, outcome: Outcome) {
    let opts = EnqueueOptions::new().queue(queue).max_retries(max_retries);
    let job = NewJob::new("charge", json!({}), opts).unwrap();
    store.enqueue(job).await.unwrap();
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "browser-history".into(),
            job_names: vec!["charge".into()],
            queues: Some(vec![queue.to_owned()]),
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let done = store
        .report_batch(vec![(claimed[0].lease().unwrap(), outcome)])
        .await
        .unwrap();
    assert_eq!(done, [true]);
}

/// The legend's totals, in legend order.
async fn legend(page: &Page) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for series in ["completed", "failed", "retried", "cancelled", "enqueued"] {
        let css = format!("#history ul.legend [data-total=\"{series}\"]");
        out.push((series.to_owned(), page.text(&css).await.unwrap_or_default()));
    }
    out
}

fn expected(completed: u32) -> Vec<(String, String)> {
    // 4 (+1 live) completed, 3 failed, 1 retried, 1 cancelled; enqueued: the
    // job before the first sample (counted from the database's baseline) and
    // since it 4 + 3 + 1 (the retried job) + 1 (the cancelled one) (+1 live).
    let enqueued = completed + 6;
    [
        ("completed", completed),
        ("failed", 3),
        ("retried", 1),
        ("cancelled", 1),
        ("enqueued", enqueued),
    ]
    .into_iter()
    .map(|(s, n)| (s.to_owned(), n.to_string()))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_shows_the_stored_history_in_every_dashboard() {
    support::run("browser_history", |page| async move {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("duraq.db");
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        // A first sample, then the work the chart must show.
        let first = NewJob::new("other", json!({}), EnqueueOptions::new().queue("mail")).unwrap();
        store.enqueue(first).await.unwrap();
        store.record_history().await.unwrap();
        for _ in 0..4 {
            attempt(&store, "mail", 0, Outcome::Completed).await;
        }
        for _ in 0..3 {
            attempt(&store, "hooks", 0, Outcome::failed("declined")).await;
        }
        attempt(&store, "hooks", 3, Outcome::failed("try again")).await;
        let later = EnqueueOptions::new()
            .queue("mail")
            .run_in(std::time::Duration::from_secs(3600));
        let later = NewJob::new("later", json!({}), later).unwrap();
        let later = store.enqueue(later).await.unwrap().job_id().to_owned();
        store.cancel_job(&later).await.unwrap();

        let one = Dash::start(&path).await;
        page.goto(&format!("{}/", one.base)).await;
        page.wait_page("overview").await;
        page.wait_present("#history ul.legend").await;
        assert_eq!(legend(&page).await, expected(4));
        assert_eq!(
            page.attr("#history", "data-range").await.as_deref(),
            Some("1h")
        );
        assert_eq!(
            page.count("#throughput g[data-axis=\"y\"] text.tick").await,
            3
        );
        assert!(page.count("#throughput g[data-axis=\"x\"] text.tick").await >= 2);
        let ticks = page
            .text("#throughput g[data-axis=\"x\"] text.tick")
            .await
            .unwrap();
        assert!(ticks.ends_with("UTC"), "x ticks are times: {ticks}");
        for series in ["completed", "failed"] {
            let css = format!(
                "#throughput g[data-series=\"{series}\"] polyline, \
                 #throughput g[data-series=\"{series}\"] circle"
            );
            assert!(
                page.count(&css).await >= 1,
                "{series} is drawn as its own series"
            );
        }
        page.screenshot("history-overview-1h").await;

        // Live: a job completes while the page is open.
        attempt(&store, "mail", 0, Outcome::Completed).await;
        page.wait_text(
            "#history ul.legend [data-total=\"completed\"]",
            "to count the new completion",
            |t| t == "5",
        )
        .await;
        assert_eq!(legend(&page).await, expected(5));

        // A second dashboard, on its own handle of the same file.
        let two = Dash::start(&path).await;
        page.goto(&format!("{}/", two.base)).await;
        page.wait_present("#history ul.legend").await;
        assert_eq!(legend(&page).await, expected(5), "two dashboards agree");

        // Both gone; a dashboard started afresh reads the same history.
        one.server.abort();
        two.server.abort();
        let three = Dash::start(&path).await;
        page.goto(&format!("{}/", three.base)).await;
        page.wait_present("#history ul.legend").await;
        assert_eq!(legend(&page).await, expected(5), "after a restart");
        page.click("#history a[data-range-link=\"24h\"]").await;
        page.wait_present("#history[data-range=\"24h\"]").await;
        assert_eq!(legend(&page).await, expected(5), "24 h view");
        page.screenshot("history-overview-24h").await;
        three.server.abort();
        drop(store);
    })
    .await;
}
