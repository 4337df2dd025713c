//! Version 11, job dependencies (`docs/workflows.md`): the jobs gain
//! `depends_on`, `open_dependencies` and `output` in place, the queue counters
//! a `pending` column in place, the edge table is created, old jobs are kept
//! (no dependencies, no output), and a new job may at once wait for an old
//! one. (The edge statements' plans are in `query_plans`.)

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use rusqlite::Connection;

use crate::support::{
    claim_request, enqueue, execute, job_rowid, open, open_existing, queue_counts_rowid, temp_db,
    versions_from,
};

/// Takes a file back to the shape version 10 created.
const BACK_TO_V10: &str = "
ALTER TABLE duraq_jobs DROP COLUMN depends_on;
ALTER TABLE duraq_jobs DROP COLUMN open_dependencies;
ALTER TABLE duraq_jobs DROP COLUMN output;
ALTER TABLE duraq_queue_counts DROP COLUMN pending;
DROP TABLE duraq_job_dependents;
DELETE FROM duraq_counts WHERE name = 'pending';
DELETE FROM duraq_migrations WHERE version >= 11;
";

/// The rowids of job `id` and of the default queue's counter row.
fn rowids(path: &std::path::Path, id: &str) -> (i64, i64) {
    let conn = Connection::open(path).unwrap();
    (job_rowid(&conn, id), queue_counts_rowid(&conn, "default"))
}

#[tokio::test]
async fn upgrade_to_v11_adds_dependencies_in_place_and_keeps_the_jobs() {
    let (_dir, path) = temp_db("v10.db");
    let store = open(&path);
    let old = enqueue(&store, "old", serde_json::json!([]), EnqueueOptions::new()).await;
    store.close().await.unwrap();
    drop(store);
    execute(&path, BACK_TO_V10);
    let before = rowids(&path, &old);

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, versions_from(11));
    assert_eq!(rowids(&path, &old), before, "no rebuild");
    let row = store.get_job(&old).await.unwrap().expect("old row kept");
    assert_eq!(
        (row.depends_on.len(), row.open_dependencies, row.output),
        (0, 0, None)
    );
    let snap = store.queue_snapshot().await.unwrap();
    let counts = &snap.queue("default").unwrap().counts;
    assert_eq!((counts.queued, counts.pending), (1, 0), "counts kept");

    let opts = EnqueueOptions::new().after(&old);
    let next = enqueue(&store, "next", serde_json::json!([]), opts).await;
    assert_eq!(
        store.get_job(&next).await.unwrap().unwrap().status,
        JobStatus::Pending
    );
    assert_eq!(store.count_snapshot().await.unwrap().counts.pending, 1);
    let claimed = store
        .claim(&claim_request("w", &["old", "next"], 10))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "the pending job is not claimed");
    let lease = claimed[0].lease().unwrap();
    let done = Outcome::CompletedWith {
        output: serde_json::json!({"n": 1}),
    };
    assert_eq!(
        store.report_batch(vec![(lease, done)]).await.unwrap(),
        [true]
    );
    let released = store.get_job(&next).await.unwrap().unwrap();
    assert_eq!(released.status, JobStatus::Queued);
    let old_row = store.get_job(&old).await.unwrap().unwrap();
    assert_eq!(old_row.output, Some(serde_json::json!({"n": 1})));
    store.close().await.unwrap();
    drop(store);
    let again = open(&path);
    assert!(again.migration().applied.is_empty());
}
