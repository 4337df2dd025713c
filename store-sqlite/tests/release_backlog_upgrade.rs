//! Upgrading a file to schema version 12 (the release backlog,
//! `docs/workflows.md`, "Cost"): `duraq_release_backlog` is created, the jobs
//! table is not rebuilt, and a fan-out wider than the bound finishes through
//! the new table at once. A bounded step reads one range of the edge table's
//! primary key, in order, without sorting.

use duraq_core::prelude::*;
use duraq_core::rules::RELEASE_BATCH;
use duraq_core::{ClaimRequest, EnqueueOptions, JobStatus, NewJob, Outcome};
use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v11.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let root = NewJob::new("root", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    let root = store.enqueue(root).await.unwrap().job_id().to_owned();
    store.close().await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE duraq_release_backlog; DELETE FROM duraq_migrations WHERE version >= 12",
    )
    .unwrap();
    let rowid = |conn: &Connection| -> i64 {
        conn.query_row("SELECT rowid FROM duraq_jobs WHERE id = ?1", [&root], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let before = rowid(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![12]);
    assert_eq!(SCHEMA_VERSION, 12);
    assert_eq!(
        rowid(&Connection::open(&path).unwrap()),
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
        .claim(&ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["root".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
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

/// A bounded step reads its edges through the primary key, in its order.
#[test]
fn a_bounded_step_reads_the_primary_key_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    migrate(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT job_id, on_failure FROM duraq_job_dependents \
             WHERE dep_id = 'a' AND job_id > 'b' ORDER BY job_id LIMIT 1001",
        )
        .unwrap();
    let plan: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let plan = plan.join("; ");
    assert!(
        plan.contains(
            "USING INDEX sqlite_autoindex_duraq_job_dependents_1 (dep_id=? AND job_id>?)"
        ),
        "plan: {plan}"
    );
    assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
}
