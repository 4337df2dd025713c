//! A bulk action the database stops part way, through the router in process
//! on a real SQLite file: a trigger aborts the second batch, and the error
//! page says how far the action got; once the trigger is gone, running the
//! same action again finishes the rest and skips what was done.

mod common;
mod jobs_support;

use std::sync::Arc;

use axum::http::StatusCode;
use common::*;
use duraq_core::{JobStatus, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use jobs_support::*;

#[tokio::test]
async fn an_interrupted_bulk_action_says_how_far_it_got() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    // One more job than a batch holds, so the action takes two batches.
    let mut ids = Vec::new();
    for _ in 0..=duraq_core::inspect::BulkRequest::DEFAULT_BATCH {
        ids.push(enqueue_plain(&store, "default").await);
    }
    let last = ids.last().unwrap().clone();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "CREATE TRIGGER stop_here BEFORE UPDATE ON duraq_jobs WHEN OLD.id = '{last}' \
         BEGIN SELECT RAISE(ABORT, 'stopped by the test'); END;"
    ))
    .unwrap();

    let app = router(store.clone(), WebOptions::new());
    let (_, _, list) = get(&app, "/jobs").await;
    let csrf = csrf_of(&list);
    let form: String = ids.iter().map(|id| format!("&id={id}")).collect();
    let body = format!("csrf={csrf}&action=cancel{form}");
    let (code, _, page) = send(&app, post("/jobs/bulk", body.clone())).await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE, "{page}");
    assert!(page.contains("error[backend-error]"), "{page}");
    assert!(page.contains("data-bulk-progress"), "{page}");
    let done = ["matched", "changed", "skipped", "batches"].map(|n| number(&page, n));
    assert_eq!(done, [500, 500, 0, 1], "{page}");
    assert_eq!(status(&store, &ids[0]).await, Some(JobStatus::Cancelled));
    assert_eq!(status(&store, &last).await, Some(JobStatus::Queued));

    conn.execute_batch("DROP TRIGGER stop_here").unwrap();
    let (code, _, page) = send(&app, post("/jobs/bulk", body)).await;
    assert_eq!(code, StatusCode::OK, "{page}");
    assert_eq!(number(&page, "changed"), 1);
    assert_eq!(number(&page, "skipped"), 500);
    store.close().await.unwrap();
}
