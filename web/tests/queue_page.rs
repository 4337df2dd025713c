//! A queue's page on a real SQLite file: its counts, and its fairness keys
//! with their queued jobs, escaped, each linking to its queued jobs; a queue
//! without keys says so, and a name that is no queue name is 400.

mod common;

use std::sync::Arc;

use axum::http::StatusCode;
use common::get;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;

fn keyed(queue: &str, key: &str) -> NewJob {
    let opts = EnqueueOptions::new().queue(queue).fairness_key(key);
    NewJob::new("import_row", json!([]), opts).unwrap()
}

#[tokio::test]
async fn a_queue_page_lists_its_keys_with_their_queued_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("q.db"), SqliteOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let mut batch: Vec<NewJob> = (0..3).map(|_| keyed("imports", "tenant:big")).collect();
    batch.push(keyed("imports", "<script>x"));
    batch.push(keyed("other", "tenant:elsewhere"));
    store.enqueue_batch(batch).await.unwrap();
    store
        .enqueue(NewJob::new("plain", json!([]), EnqueueOptions::new()).unwrap())
        .await
        .unwrap();
    let app = router(store, WebOptions::new());

    let (status, _, page) = get(&app, "/queues/imports").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("<main data-page=\"queues\">"), "{page}");
    assert!(page.contains("data-table=\"keys\""), "{page}");
    assert!(page.contains("data-key=\"tenant:big\""), "{page}");
    assert!(page.contains("data-queued=\"3\""), "{page}");
    assert!(
        page.contains("data-key=\"&lt;script&gt;x\""),
        "escaped: {page}"
    );
    assert!(!page.contains("<script>x"), "escaped: {page}");
    assert!(
        !page.contains("tenant:elsewhere"),
        "another queue's key: {page}"
    );
    assert!(
        page.contains("/jobs?queue=imports&amp;fairness=tenant%3Abig&amp;status=queued"),
        "{page}"
    );
    assert!(
        page.contains("data-queue=\"imports\""),
        "its counts row: {page}"
    );

    let (status, _, page) = get(&app, "/queues/default").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-empty"), "no keys: {page}");
    let (_, _, queues) = get(&app, "/queues").await;
    assert!(queues.contains("href=\"/queues/imports\""), "{queues}");

    let (status, _, page) = get(&app, "/queues/bad%0Aname").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("invalid-queue"), "{page}");
}
