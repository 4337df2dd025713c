//! Version 6, the error history of each job: `errors` is added to the jobs in
//! place with an empty default, an old failed row keeps its last error and
//! reads an empty history, and failures after the upgrade are appended.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use rusqlite::Connection;

use crate::support::{
    back_to_v6, claim_request, enqueue, job_rowids, open, open_existing, temp_db,
};

/// A version-5 file (today's before the error history) with a failed job and a
/// queued one is upgraded in place: `errors` is added with its default (no table
/// rebuild: the table's other columns and rows are untouched), old rows read an
/// empty history, and new failures append to it.
#[tokio::test]
async fn upgrade_to_v6_adds_the_error_history_in_place() {
    let (_dir, path) = temp_db("v5.db");
    let store = open(&path);
    let mut ids = Vec::new();
    for n in 0..2 {
        let opts = EnqueueOptions::new().max_retries(0);
        ids.push(enqueue(&store, "j", serde_json::json!([n]), opts).await);
    }
    let claim = |worker: &str| claim_request(worker, &["j"], 1);
    let first = store.claim(&claim("w1")).await.unwrap().remove(0);
    assert_eq!(
        store
            .report_batch(vec![(first.lease().unwrap(), Outcome::failed("before"))])
            .await
            .unwrap(),
        [true]
    );
    drop(store);
    // Back to the shape version 5 created.
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    conn.execute_batch(
        "ALTER TABLE duraq_jobs DROP COLUMN errors; DELETE FROM duraq_migrations WHERE version = 6",
    )
    .unwrap();
    let before = job_rowids(&conn);
    drop(conn);

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, vec![6, 7, 8]);
    let old = store.get_job(&ids[0]).await.unwrap().unwrap();
    assert_eq!(
        (old.status, old.last_error.as_deref(), old.errors.len()),
        (JobStatus::Failed, Some("before"), 0),
        "an old failed row keeps lastError and reads an empty history"
    );
    let conn = Connection::open(&path).unwrap();
    assert_eq!(job_rowids(&conn), before, "rows kept in place, not rebuilt");
    let (ty, notnull, default): (String, bool, String) = conn
        .query_row(
            "SELECT type, \"notnull\", dflt_value FROM pragma_table_info('duraq_jobs') WHERE name = 'errors'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (ty.as_str(), notnull, default.as_str()),
        ("TEXT", true, "'[]'")
    );

    let second = store.claim(&claim("w2")).await.unwrap().remove(0);
    assert_eq!(second.id, ids[1]);
    assert_eq!(
        store
            .report_batch(vec![(second.lease().unwrap(), Outcome::failed("after"))])
            .await
            .unwrap(),
        [true]
    );
    let failed = store.get_job(&ids[1]).await.unwrap().unwrap();
    assert_eq!(failed.errors.len(), 1);
    assert_eq!(
        (
            failed.errors[0].attempt,
            failed.errors[0].error.as_str(),
            failed.errors[0].worker_id.as_deref()
        ),
        (1, "after", Some("w2"))
    );
    store.retry_job(&ids[0]).await.unwrap();
    let again = store.claim(&claim("w3")).await.unwrap().remove(0);
    assert_eq!(
        store
            .report_batch(vec![(again.lease().unwrap(), Outcome::failed("later"))])
            .await
            .unwrap(),
        [true]
    );
    let old = store.get_job(&ids[0]).await.unwrap().unwrap();
    assert_eq!(
        old.errors
            .iter()
            .map(|e| e.error.as_str())
            .collect::<Vec<_>>(),
        ["later"],
        "an old row's history starts at the upgrade"
    );
    drop(store);
    assert!(open_existing(&path).migration().applied.is_empty());
}
