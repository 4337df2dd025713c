//! The job page's progress section through a real server: a
//! running job's progress bar, message and kept lines (oldest first, numbered,
//! escaped and scrubbed), marked `data-live` while it runs and not once it has
//! ended; a job that said nothing says so.

mod common;

use std::sync::Arc;

use common::*;
use duraq_core::driver::ProgressBatch;
use duraq_core::{MemoryStore, Outcome, Store};
use duraq_web::{router, WebOptions};

#[tokio::test]
async fn the_job_page_shows_progress_and_lines_live_while_the_job_runs() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let id = enqueue_plain(&store, "reports").await;
    let quiet = enqueue_plain(&store, "reports").await;
    let running = claim(&store, 1).await.remove(0);
    assert_eq!(running.id, id, "the older job is claimed first");
    let batch = ProgressBatch::new(lease_of(&running), 1)
        .with_progress(0.375, format!("rows {SCRIPT}"))
        .unwrap()
        .with_line(1_000, "opened the export")
        .with_line(2_000, format!("wrote {ATTR} {ESC}"));
    assert!(store.record_progress(batch).await.unwrap());
    let addr = spawn_server(router(store.clone(), WebOptions::new())).await;

    let (status, _, page) = http(addr, "GET", &format!("/jobs/{id}"), &[], "").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<section id=\"progress\" data-live"),
        "{page}"
    );
    assert!(
        page.contains("<progress max=\"1\" value=\"0.375\">"),
        "{page}"
    );
    assert!(
        page.contains("data-field=\"progressPercent\">38%<"),
        "{page}"
    );
    assert!(page.contains("rows &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        page.contains("<ol class=\"logs\" data-logs start=\"1\">"),
        "{page}"
    );
    let first = page.find("data-seq=\"1\"").expect("line 1");
    let second = page.find("data-seq=\"2\"").expect("line 2");
    assert!(first < second, "oldest first");
    assert!(page.contains("opened the export"));
    assert!(!page.contains(SCRIPT) && !page.contains(ATTR) && !page.contains('\u{1b}'));
    assert!(page.contains("The newest 2 of 2 lines"));

    // Once it ends the section stays, no longer live.
    let done = store
        .report_batch(vec![(lease_of(&running), Outcome::Completed)])
        .await
        .unwrap();
    assert_eq!(done, [true]);
    let (_, _, page) = http(addr, "GET", &format!("/jobs/{id}"), &[], "").await;
    assert!(
        page.contains("<section id=\"progress\" data-status=\"completed\">"),
        "{page}"
    );
    assert!(page.contains("opened the export"));

    let (_, _, page) = http(addr, "GET", &format!("/jobs/{quiet}"), &[], "").await;
    assert!(
        page.contains("The job has not reported progress."),
        "{page}"
    );
    assert!(!page.contains("data-logs"));
}
