//! Version 9, throughput history (`docs/history.md`): the outcome totals are
//! added to `duraq_queue_counts` in place (`ALTER TABLE … ADD COLUMN …
//! DEFAULT 0`, the row kept), old counts are kept, the totals start at 0 and
//! then count, and the history table works at once.

use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;
use rusqlite::Connection;

use crate::support::{
    enqueue, execute, open, open_existing, queue_counts_rowid, temp_db, versions_from,
};

#[tokio::test]
async fn upgrade_to_v9_adds_outcome_totals_in_place_and_the_history() {
    let (_dir, path) = temp_db("v8.db");
    let store = open(&path);
    enqueue(&store, "j", serde_json::json!([]), EnqueueOptions::new()).await;
    drop(store);
    execute(
        &path,
        "ALTER TABLE duraq_queue_counts DROP COLUMN enqueued_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN completed_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN failed_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN retried_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN cancelled_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN orphaned_total; \
         DROP TABLE duraq_history; DELETE FROM duraq_migrations WHERE version >= 9",
    );
    let before = queue_counts_rowid(&Connection::open(&path).unwrap(), "default");

    let store = open_existing(&path);
    assert_eq!(store.migration().applied, versions_from(9));
    assert_eq!(
        queue_counts_rowid(&Connection::open(&path).unwrap(), "default"),
        before,
        "row kept in place"
    );
    let snap = store.queue_snapshot().await.unwrap();
    assert_eq!(
        snap.queue("default").unwrap().counts.queued,
        1,
        "counts kept"
    );
    let totals = store.outcome_totals().await.unwrap();
    assert_eq!(totals.len(), 1);
    assert!(totals[0].totals.is_zero(), "totals start at 0");

    enqueue(&store, "j", serde_json::json!([]), EnqueueOptions::new()).await;
    assert_eq!(store.outcome_totals().await.unwrap()[0].totals.enqueued, 1);
    assert!(store.record_history().await.unwrap());
    let samples = store.history(0).await.unwrap();
    // The first sampler ever writes an all-zero baseline before its own
    // sample, so that what happened before it is counted.
    assert_eq!(samples.len(), 2, "the baseline and this minute's sample");
    assert!(samples[0].totals.is_zero(), "the baseline");
    assert_eq!(samples[1].totals.enqueued, 1);
    drop(store);
    let again = open(&path);
    assert!(again.migration().applied.is_empty());
}
