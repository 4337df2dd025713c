//! Upgrading a file to schema version 11 (job dependencies,
//! `docs/workflows.md`): the jobs gain `depends_on`, `open_dependencies` and
//! `output` in place, the queue counters a `pending` column in place, the
//! edge table is created, old jobs are kept (no dependencies, no output), and
//! a new job may at once wait for an old one. The edge statements read the
//! edge table's primary key.

use duraq_core::prelude::*;
use duraq_core::{ClaimRequest, EnqueueOptions, JobStatus, NewJob, Outcome};
use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

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

fn rowids(conn: &Connection, id: &str) -> (i64, i64) {
    let job = conn
        .query_row("SELECT rowid FROM duraq_jobs WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    let queue = conn
        .query_row(
            "SELECT rowid FROM duraq_queue_counts WHERE queue = 'default'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (job, queue)
}

#[tokio::test]
async fn upgrade_to_v11_adds_dependencies_in_place_and_keeps_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let job = NewJob::new("old", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    let old = store.enqueue(job).await.unwrap().job_id().to_owned();
    store.close().await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(BACK_TO_V10).unwrap();
    let before = rowids(&conn, &old);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (11..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        rowids(&Connection::open(&path).unwrap(), &old),
        before,
        "no rebuild"
    );
    let row = store.get_job(&old).await.unwrap().expect("old row kept");
    assert_eq!(
        (row.depends_on.len(), row.open_dependencies, row.output),
        (0, 0, None)
    );
    let snap = store.queue_snapshot().await.unwrap();
    let counts = &snap.queue("default").unwrap().counts;
    assert_eq!((counts.queued, counts.pending), (1, 0), "counts kept");

    let opts = EnqueueOptions::new().after(&old);
    let next = NewJob::new("next", serde_json::json!([]), opts).unwrap();
    let next = store.enqueue(next).await.unwrap().job_id().to_owned();
    assert_eq!(
        store.get_job(&next).await.unwrap().unwrap().status,
        JobStatus::Pending
    );
    assert_eq!(store.count_snapshot().await.unwrap().counts.pending, 1);
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["old".into(), "next".into()],
            limit: 10,
            ..ClaimRequest::default()
        })
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
    let again = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(again.migration().applied.is_empty());
}

/// The dependents of a finished job are one range of the edge table's primary
/// key, and so are a deleted dependent's own edges.
#[test]
fn edge_statements_read_the_primary_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    migrate(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ")
    };
    let edges = plan("SELECT job_id, on_failure FROM duraq_job_dependents WHERE dep_id = 'a'");
    assert!(
        edges.contains("USING INDEX sqlite_autoindex_duraq_job_dependents_1 (dep_id=?)"),
        "edges plan: {edges}"
    );
    let delete = plan(
        "DELETE FROM duraq_job_dependents WHERE job_id = 'b' AND dep_id IN \
         (SELECT json_extract(value, '$.jobId') FROM json_each('[{\"jobId\":\"a\"}]'))",
    );
    assert!(
        delete.contains("(dep_id=? AND job_id=?)"),
        "delete plan: {delete}"
    );
}
