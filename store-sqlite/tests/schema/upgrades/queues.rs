//! The per-queue state added to a running file: version 4's counters per queue
//! are filled once from the jobs already there and kept exact afterwards, and
//! version 5's paused-queue table starts empty, with every job claimable, and
//! a pause survives reopening.

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, Outcome, QueueName};
use duraq_store_sqlite::SCHEMA_VERSION;

use crate::support::{
    claim_request, enqueue, execute, open, open_existing, temp_db, versions_from,
};

/// A version-3 file (today's schema before counts per queue) with jobs in several
/// queues and statuses is upgraded in place: the per-queue counters are filled
/// from the jobs once, and later mutations keep them exact.
#[tokio::test]
async fn upgrade_to_v4_backfills_counts_per_queue() {
    let (_dir, path) = temp_db("v3.db");
    let store = open(&path);
    for queue in ["mail", "mail", "mail", "video"] {
        let opts = EnqueueOptions::new().queue(queue);
        enqueue(&store, "j", serde_json::json!([queue]), opts).await;
    }
    let claim = ClaimRequest {
        queues: Some(vec!["mail".into()]),
        ..claim_request("w", &["j"], 2)
    };
    let claimed = store.claim(&claim).await.unwrap();
    assert_eq!(claimed.len(), 2);
    assert_eq!(
        store
            .report_batch(vec![(claimed[0].lease().unwrap(), Outcome::Completed)])
            .await
            .unwrap(),
        [true]
    );
    let before = store.queue_snapshot().await.unwrap();
    drop(store);
    // Back to the shape version 3 created.
    execute(
        &path,
        "DROP TABLE duraq_queue_counts; DROP INDEX duraq_jobs_queue_due; \
         DELETE FROM duraq_migrations WHERE version = 4",
    );

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, vec![4]);
    let after = store.queue_snapshot().await.unwrap();
    assert_eq!(
        (after.revision, &after.counts, counts_of(&after)),
        (before.revision, &before.counts, counts_of(&before)),
        "backfilled counts equal the ones kept live (latency moves with the clock)"
    );
    let mail = after.queue("mail").unwrap().counts;
    assert_eq!(
        (mail.queued, mail.handed_off, mail.completed, mail.all),
        (1, 1, 1, 3)
    );
    assert_eq!(after.queue("video").unwrap().counts.queued, 1);
    // Kept in step from here on.
    store
        .report_batch(vec![(claimed[1].lease().unwrap(), Outcome::Completed)])
        .await
        .unwrap();
    let mail = store
        .queue_snapshot()
        .await
        .unwrap()
        .queue("mail")
        .unwrap()
        .counts;
    assert_eq!((mail.handed_off, mail.completed), (0, 2));
}

fn counts_of(
    snap: &duraq_core::inspect::QueueSnapshot,
) -> Vec<(String, duraq_core::inspect::StatusCounts)> {
    snap.queues
        .iter()
        .map(|q| (q.queue.clone(), q.counts))
        .collect()
}

/// A version-4 file (counts per queue, no paused queues) with queued jobs is
/// upgraded in place: the paused-queue table is created empty, every job stays
/// claimable, and pausing then works and survives reopening.
#[tokio::test]
async fn upgrade_to_v5_adds_paused_queues() {
    let (_dir, path) = temp_db("v4.db");
    let store = open(&path);
    for queue in ["mail", "video"] {
        let opts = EnqueueOptions::new().queue(queue);
        enqueue(&store, "j", serde_json::json!([queue]), opts).await;
    }
    drop(store);
    execute(
        &path,
        "DROP TABLE duraq_paused_queues; ALTER TABLE duraq_jobs DROP COLUMN errors; \
         DELETE FROM duraq_migrations WHERE version >= 5",
    );

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, versions_from(5));
    assert_eq!(store.health().await.unwrap().schema_version, SCHEMA_VERSION);
    let snap = store.queue_snapshot().await.unwrap();
    assert!(snap.queues.iter().all(|q| !q.paused), "{snap:?}");
    let mail = QueueName::new("mail").unwrap();
    assert!(store.pause_queue(&mail).await.unwrap());
    drop(store);

    let store = open_existing(&path);
    assert!(store.migration().applied.is_empty());
    assert!(
        store
            .queue_snapshot()
            .await
            .unwrap()
            .queue("mail")
            .unwrap()
            .paused
    );
    let claimed = store.claim(&claim_request("w", &["j"], 10)).await.unwrap();
    assert_eq!(
        claimed.iter().map(|j| j.queue.as_str()).collect::<Vec<_>>(),
        ["video"],
        "the pause survived reopening"
    );
}
