//! Upgrading a schema to version 10 (the release backlog,
//! `docs/workflows.md`, "Cost"): `duraq_release_backlog` is created, no table
//! is rewritten, and a fan-out wider than the bound finishes through the new
//! table at once.

use duraq_core::driver::rules::RELEASE_BATCH;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob, Outcome};

use crate::common::{claim_of, job, open, schema};
use crate::rewind::{enqueued, undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v10_adds_the_release_backlog_in_place() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let root = enqueued(&store, job("root", EnqueueOptions::new())).await;
    let sql = format!("DROP TABLE {s}.duraq_release_backlog");
    let client = undo(store, &s, 10, &sql).await;

    let store = upgrade_in_place(&client, &s, 10, &["duraq_jobs_live"]).await;
    let leaves: Vec<NewJob> = (0..=RELEASE_BATCH)
        .map(|_| job("leaf", EnqueueOptions::new().after(&root)))
        .collect();
    store.enqueue_batch(leaves).await.unwrap();
    let claimed = store.claim(&claim_of("root")).await.unwrap();
    let signal = store.release_backlog_signal();
    let done = vec![(claimed[0].lease().unwrap(), Outcome::Completed)];
    assert_eq!(store.report_batch(done).await.unwrap(), [true]);
    assert!(signal.has_changed().unwrap(), "the entry was signalled");
    let counts = store.count_snapshot().await.unwrap().counts;
    assert_eq!((counts.queued, counts.pending), (RELEASE_BATCH as i64, 1));
    let entry = client
        .query_one(
            &format!("SELECT job_id, status, after_job_id FROM {s}.duraq_release_backlog"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (entry.get::<_, String>(0), entry.get::<_, String>(1)),
        (root.clone(), "completed".to_owned())
    );
    assert!(entry.get::<_, Option<String>>(2).is_some(), "the cursor");

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
    let left: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {s}.duraq_release_backlog"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
    store.close().await.unwrap();
}
