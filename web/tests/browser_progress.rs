//! A running job's progress, live on its page in a real browser: headless
//! Chromium through `chromedriver` (see `support`). A real worker runs a job
//! that logs and reports progress, then waits; the open page shows what it
//! said without a reload, and, once the job is let go, its last line and its
//! completion, still without a reload (the same document).
//!
//! Run: `cargo test -p duraq-web --test browser_progress`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::worker::WorkerEvent;
use duraq_core::{EnqueueOptions, JobContext, JobResult, NewJob, Registry, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;
use tokio::sync::Notify;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_jobs_progress_updates_live_on_its_page() {
    support::run("browser_progress", |page| async move {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("duraq.db");
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
        let go_on = Arc::new(Notify::new());
        let wait = go_on.clone();
        let registry = Registry::new()
            .register_fn("export", move |ctx: JobContext, _args| {
                let wait = wait.clone();
                async move {
                    ctx.progress(0.5, "half of the rows")?;
                    ctx.log("exported 500 rows");
                    wait.notified().await;
                    ctx.log("exported the rest");
                    ctx.progress(1.0, "all rows")?;
                    Ok(JobResult::Completed)
                }
            })
            .unwrap();
        let job = NewJob::new("export", json!([]), EnqueueOptions::new()).unwrap();
        let id = store.enqueue(job).await.unwrap().job_id().to_owned();
        let worker = Worker::builder(store.clone(), registry)
            .poll_interval(Duration::from_millis(20))
            .build()
            .unwrap();
        let mut events = worker.subscribe();
        let handle = worker.spawn();
        loop {
            if let WorkerEvent::Started(s) = events.recv().await.unwrap() {
                assert_eq!(s.job_id, id);
                break;
            }
        }

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = router(store.clone(), WebOptions::new());
        let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        page.goto(&format!("http://{addr}/jobs/{id}")).await;
        page.wait_page("job").await;
        page.wait_present("#progress[data-live]").await;
        page.mark_document().await;
        // The worker stores what was said within a second; the page follows.
        page.wait_text(
            "#progress ol[data-logs] li[data-seq=\"1\"] code",
            "to show the first line",
            |t| t == "exported 500 rows",
        )
        .await;
        assert_eq!(
            page.text("[data-field=\"progressPercent\"]")
                .await
                .as_deref(),
            Some("50%")
        );
        page.screenshot("job-progress-running").await;

        go_on.notify_one();
        page.wait_present("#progress[data-status=\"completed\"]")
            .await;
        assert_eq!(page.count("#progress[data-live]").await, 0);
        assert_eq!(
            page.text("#progress ol[data-logs] li[data-seq=\"2\"] code")
                .await
                .as_deref(),
            Some("exported the rest"),
            "the last line survives the completion"
        );
        assert_eq!(
            page.text("[data-field=\"progressMessage\"]")
                .await
                .as_deref(),
            Some("all rows")
        );
        assert_eq!(
            page.attr("[data-field=\"status\"]", "data-status")
                .await
                .as_deref(),
            Some("completed")
        );
        assert_eq!(
            page.count("form[data-action=\"retry\"]").await,
            1,
            "the detail and its actions follow the end"
        );
        assert!(page.still_marked().await, "updated without a reload");
        page.screenshot("job-progress-completed").await;
        handle.shutdown_and_join().await.unwrap();
        server.abort();
    })
    .await;
}
