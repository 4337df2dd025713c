//! Version 10, progress and log lines of running jobs (`docs/jobs.md`): the
//! two tables of their own are created, the jobs table is not rebuilt, old
//! jobs are kept and say nothing, and a running job's progress is stored at
//! once.

use duraq_core::driver::ProgressBatch;
use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;
use rusqlite::Connection;

use crate::support::{
    claim_request, enqueue, execute, job_rowid, open, open_existing, temp_db, versions_from,
};

#[tokio::test]
async fn upgrade_to_v10_adds_the_progress_tables_and_keeps_the_jobs() {
    let (_dir, path) = temp_db("v9.db");
    let store = open(&path);
    let id = enqueue(&store, "j", serde_json::json!([]), EnqueueOptions::new()).await;
    store.close().await.unwrap();
    drop(store);
    execute(
        &path,
        "DROP TABLE duraq_job_progress; DROP TABLE duraq_job_logs; \
         DELETE FROM duraq_migrations WHERE version >= 10",
    );
    let before = job_rowid(&Connection::open(&path).unwrap(), &id);

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, versions_from(10));
    assert_eq!(
        job_rowid(&Connection::open(&path).unwrap(), &id),
        before,
        "no rebuild"
    );
    assert_eq!(store.job_progress(&id).await.unwrap(), None);
    let claimed = store.claim(&claim_request("w", &["j"], 1)).await.unwrap();
    let lease = claimed[0].lease().unwrap();
    let batch = ProgressBatch::new(lease, 1).with_line(0, "after the upgrade");
    assert!(store.record_progress(batch).await.unwrap());
    let p = store.job_progress(&id).await.unwrap().unwrap();
    assert_eq!(p.logs[0].line, "after the upgrade");
    store.close().await.unwrap();
}
