//! Upgrading a file to schema version 10 (progress and log lines of running
//! jobs, `docs/jobs.md`): the two tables of their own are created, the jobs
//! table is not rebuilt, old jobs are kept and say nothing, and a running
//! job's progress is stored at once.

use duraq_core::prelude::*;
use duraq_core::{ClaimRequest, EnqueueOptions, NewJob, ProgressBatch};
use duraq_store_sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

#[tokio::test]
async fn upgrade_to_v10_adds_the_progress_tables_and_keeps_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v9.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let job = NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_owned();
    store.close().await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE duraq_job_progress; DROP TABLE duraq_job_logs; \
         DELETE FROM duraq_migrations WHERE version >= 10",
    )
    .unwrap();
    let rowid = |conn: &Connection| -> i64 {
        conn.query_row("SELECT rowid FROM duraq_jobs WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let before = rowid(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (10..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        rowid(&Connection::open(&path).unwrap()),
        before,
        "no rebuild"
    );
    assert_eq!(store.job_progress(&id).await.unwrap(), None);
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let lease = claimed[0].lease().unwrap();
    let batch = ProgressBatch::new(lease, 1).with_line(0, "after the upgrade");
    assert!(store.record_progress(batch).await.unwrap());
    let p = store.job_progress(&id).await.unwrap().unwrap();
    assert_eq!(p.logs[0].line, "after the upgrade");
    store.close().await.unwrap();
}
