//! Version 12, the release backlog (`docs/workflows.md`, "Cost"):
//! `duraq_release_backlog` is created, the jobs table is not rebuilt, and a
//! fan-out wider than the bound finishes through the new table at once. (The
//! bounded step's plan is in `query_plans`.)

use duraq_core::driver::rules::RELEASE_BATCH;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome};
use duraq_store_sqlite::SCHEMA_VERSION;
use rusqlite::Connection;

use crate::support::{claim_request, enqueue, execute, job_rowid, open, open_existing, temp_db};

fn backlog_rows(path: &std::path::Path) -> Vec<(String, String, Option<String>)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT job_id, status, after_job_id FROM duraq_release_backlog")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[tokio::test]
async fn upgrade_to_v12_adds_the_release_backlog_in_place() {
    let (_dir, path) = temp_db("v11.db");
    let store = open(&path);
    let root = enqueue(&store, "root", serde_json::json!([]), EnqueueOptions::new()).await;
    store.close().await.unwrap();
    drop(store);
    execute(
        &path,
        "DROP TABLE duraq_release_backlog; DELETE FROM duraq_migrations WHERE version >= 12",
    );
    let before = job_rowid(&Connection::open(&path).unwrap(), &root);

    let store = open_existing(&path);
    assert_eq!(
        store.migration().applied,
        (12..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        job_rowid(&Connection::open(&path).unwrap(), &root),
        before,
        "no rebuild"
    );

    let dependents: Vec<NewJob> = (0..=RELEASE_BATCH)
        .map(|i| {
            let opts = EnqueueOptions::new().after(&root);
            NewJob::new("leaf", serde_json::json!([i]), opts).unwrap()
        })
        .collect();
    store.enqueue_batch(dependents).await.unwrap();
    let claimed = store
        .claim(&claim_request("w", &["root"], 1))
        .await
        .unwrap();
    let lease = claimed[0].lease().unwrap();
    let signal = store.release_backlog_signal();
    store
        .report_batch(vec![(lease, Outcome::Completed)])
        .await
        .unwrap();
    assert!(signal.has_changed().unwrap(), "the entry was signalled");
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!((counts.queued, counts.pending), (RELEASE_BATCH as i64, 1));
    let rows = backlog_rows(&path);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str()),
        (root.as_str(), "completed")
    );
    assert!(
        rows[0].2.is_some(),
        "the cursor is the last dependent settled"
    );

    let progress = store.settle_release_backlog(10).await.unwrap();
    assert_eq!(
        (progress.steps, progress.edges, progress.more),
        (1, 1, false)
    );
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!(
        (counts.queued, counts.pending),
        (RELEASE_BATCH as i64 + 1, 0)
    );
    assert!(backlog_rows(&path).is_empty());
    assert_eq!(
        store.get_job(&root).await.unwrap().unwrap().status,
        JobStatus::Completed
    );
    store.close().await.unwrap();
}
