//! The job page's rows for values most jobs leave at their default, through
//! a real server over a SQLite file: a cost other than 1, an ephemeral job
//! (deleted on completion) and why a cancelled job was cancelled (an operator,
//! a dependency that did not complete, an expiry) and a sequence (with the
//! job that holds it) are rows; an ordinary job's page has none of them.

mod common;

use std::sync::Arc;

use common::*;
use duraq_core::{EnqueueOptions, NewJob, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::json;

async fn enqueue(store: &Arc<dyn Store>, name: &str, opts: EnqueueOptions) -> String {
    let job = NewJob::new(name, json!([]), opts).unwrap();
    store.enqueue(job).await.unwrap().job_id().to_string()
}

/// The opening tag of the element carrying `data-field="{field}"`, if any.
fn field_tag<'a>(page: &'a str, field: &str) -> Option<&'a str> {
    let at = page.find(&format!("data-field=\"{field}\""))?;
    let start = page[..at].rfind('<')?;
    let end = at + page[at..].find('>')?;
    Some(&page[start..=end])
}

#[tokio::test]
async fn cost_ephemeral_and_cancel_reason_are_rows_only_when_they_say_something() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(sqlite);

    let plain = enqueue(&store, "plain", EnqueueOptions::new()).await;
    let costly = EnqueueOptions {
        concurrency_key: Some("gpu".into()),
        max_concurrency: Some(4),
        cost: Some(3),
        ..EnqueueOptions::new()
    };
    let costly = enqueue(&store, "render", costly).await;
    let ephemeral = EnqueueOptions {
        keep_completed: Some(false),
        ..EnqueueOptions::new()
    };
    let ephemeral = enqueue(&store, "ping", ephemeral).await;
    let cancelled = enqueue(&store, "stopped", EnqueueOptions::new()).await;
    store.cancel_job(&cancelled).await.unwrap();
    let parent = enqueue(&store, "parent", EnqueueOptions::new()).await;
    let child = enqueue(&store, "child", EnqueueOptions::new().after(&parent)).await;
    store.cancel_job(&parent).await.unwrap();
    let in_sequence = enqueue(&store, "sync", EnqueueOptions::new().sequence("acct:7")).await;
    let late = EnqueueOptions {
        expires_at_ms: Some(1),
        ..EnqueueOptions::new()
    };
    let expired = enqueue(&store, "late", late).await;
    claim(&store, 10).await;

    let addr = spawn_server(router(store.clone(), WebOptions::new())).await;
    let page = |id: String| async move {
        let (status, _, body) = http(addr, "GET", &format!("/jobs/{id}"), &[], "").await;
        assert_eq!(status, 200, "{body}");
        body
    };

    let shown = page(plain.clone()).await;
    for field in ["cost", "keepCompleted", "cancelReason", "sequenceKey"] {
        assert!(field_tag(&shown, field).is_none(), "{field} on a plain job");
    }

    let shown = page(in_sequence.clone()).await;
    field_tag(&shown, "sequenceKey").expect("sequence row");
    assert!(
        shown.contains("/jobs?sequence=acct%3A7"),
        "links the sequence's jobs"
    );
    let (status, _, listed) = http(addr, "GET", "/jobs?sequence=acct%3A7", &[], "").await;
    assert_eq!(status, 200, "{listed}");
    assert!(
        listed.contains(&in_sequence) && !listed.contains(&plain),
        "only the sequence's jobs"
    );

    let shown = page(costly).await;
    let cost = shown
        .split("data-field=\"cost\">")
        .nth(1)
        .expect("cost row");
    assert!(cost.starts_with("3<"), "{cost}");
    assert!(field_tag(&shown, "keepCompleted").is_none());

    let shown = page(ephemeral).await;
    let keep = field_tag(&shown, "keepCompleted").expect("ephemeral row");
    assert!(keep.contains("data-keep=\"false\""), "{keep}");
    assert!(field_tag(&shown, "cost").is_none());

    for (id, reason) in [
        (cancelled, "operator"),
        (child, "dependency"),
        (expired, "expired"),
    ] {
        let shown = page(id.clone()).await;
        let status = field_tag(&shown, "status").expect("status");
        assert!(
            status.contains("data-status=\"cancelled\""),
            "{id}: {status}"
        );
        let tag = field_tag(&shown, "cancelReason").expect("cancel reason row");
        assert!(tag.contains(&format!("data-reason=\"{reason}\"")), "{tag}");
    }
}

/// A queued job of a sequence says what it waits for: the sequence's job
/// that runs, or an earlier one that failed and holds it; the first in line
/// says nothing.
#[tokio::test]
async fn a_queued_job_of_a_sequence_says_who_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(sqlite);
    let in_line = |name| {
        let store = store.clone();
        async move {
            let opts = EnqueueOptions::new().sequence("acct:7").max_retries(0);
            enqueue(&store, name, opts).await
        }
    };
    let (first, second) = (in_line("first").await, in_line("second").await);
    let addr = spawn_server(router(store.clone(), WebOptions::new())).await;
    let held = |id: String| async move {
        let (status, _, body) = http(addr, "GET", &format!("/jobs/{id}"), &[], "").await;
        assert_eq!(status, 200, "{body}");
        field_tag(&body, "heldBy").map(str::to_owned)
    };
    assert_eq!(held(first.clone()).await, None, "first in line");
    let running = claim(&store, 10).await;
    assert_eq!(running.len(), 1, "one job of the sequence at a time");
    let tag = held(second.clone()).await.expect("held by the running job");
    assert!(tag.contains("data-status=\"handed_off\""), "{tag}");
    let failed = duraq_core::Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: None,
        discard: true,
    };
    let lease = running[0].lease().unwrap();
    store.report_batch(vec![(lease, failed)]).await.unwrap();
    let tag = held(second).await.expect("held by the failed job");
    assert!(tag.contains("data-status=\"failed\""), "{tag}");
}
