//! Upgrading a schema to version 9 (job dependencies, `docs/workflows.md`):
//! the jobs table and the counter rows gain their columns in place (no table
//! rewrite), the edge table is created, old jobs read without dependencies and
//! keep their counts, and a job enqueued after one of them waits for it and is
//! released when it completes. Also: a transactional enqueue refused for an
//! unknown dependency leaves the caller's transaction usable and writes nothing.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, Outcome};

use crate::common::{claim_of, job, open, raw_client, schema};
use crate::rewind::{enqueued, undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v9_adds_dependencies_in_place_and_keeps_the_jobs() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let old = enqueued(&store, job("old", EnqueueOptions::new())).await;
    let client = undo(
        store,
        &s,
        9,
        &format!(
            "DROP TABLE {s}.duraq_job_dependents; DROP INDEX {s}.duraq_jobs_pending; \
             ALTER TABLE {s}.duraq_jobs DROP COLUMN depends_on, DROP COLUMN open_dependencies, \
             DROP COLUMN output, DROP COLUMN has_dependents; \
             ALTER TABLE {s}.duraq_count_shards DROP COLUMN pending; \
             ALTER TABLE {s}.duraq_queue_count_shards DROP COLUMN pending"
        ),
    )
    .await;

    let tables = [
        "duraq_count_shards",
        "duraq_jobs_live",
        "duraq_queue_count_shards",
    ];
    let store = upgrade_in_place(&client, &s, 9, &tables).await;
    let row = store.get_job(&old).await.unwrap().unwrap();
    assert_eq!(
        (row.depends_on.len(), row.open_dependencies, row.output),
        (0, 0, None)
    );
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, snap.counts.pending), (1, 0));

    let next = enqueued(&store, job("next", EnqueueOptions::new().after(&old))).await;
    assert_eq!(
        store.get_job(&next).await.unwrap().unwrap().status,
        JobStatus::Pending
    );
    let claimed = store.claim(&claim_of("old")).await.unwrap();
    let done = vec![(claimed[0].lease().unwrap(), Outcome::Completed)];
    assert_eq!(store.report_batch(done).await.unwrap(), [true]);
    assert_eq!(
        store.get_job(&next).await.unwrap().unwrap().status,
        JobStatus::Queued
    );
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!(
        (
            snap.counts.queued,
            snap.counts.pending,
            snap.counts.completed
        ),
        (1, 0, 1)
    );
    store.close().await.unwrap();
}

#[tokio::test]
async fn a_refused_transactional_dependent_leaves_the_callers_transaction_usable() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let first = enqueued(&store, job("first", EnqueueOptions::new())).await;
    let mut client = raw_client().await;
    let tx = client.transaction().await.unwrap();
    let missing = "0190a0b0-0000-7000-8000-000000000000";
    let refused = store
        .enqueue_in(&tx, job("x", EnqueueOptions::new().after(missing)))
        .await
        .unwrap_err();
    assert_eq!(refused.code().as_str(), "dependency-not-found");
    let waiting = store
        .enqueue_in(&tx, job("y", EnqueueOptions::new().after(&first)))
        .await
        .unwrap()
        .job_id()
        .to_owned();
    tx.commit().await.unwrap();
    let row = store.get_job(&waiting).await.unwrap().unwrap();
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.total, snap.counts.pending), (2, 1));
    store.close().await.unwrap();
}
