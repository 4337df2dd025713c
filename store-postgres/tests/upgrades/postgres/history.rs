//! Upgrading a schema to version 7 (throughput history, `docs/history.md`):
//! the outcome totals are added to the per-queue counter rows in place (a
//! constant default, no table rewrite), old counts are kept, the totals start
//! at 0 and then count, and the history table works at once.

use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;

use crate::common::{job, open, schema};
use crate::rewind::{undo, upgrade_in_place};

#[tokio::test]
async fn upgrade_to_v7_adds_outcome_totals_in_place_and_the_history() {
    let s = schema();
    let store = open(&s).await.unwrap();
    store
        .enqueue(job("j", EnqueueOptions::new()))
        .await
        .unwrap();
    let totals = [
        "enqueued_total",
        "completed_total",
        "failed_total",
        "retried_total",
        "cancelled_total",
        "orphaned_total",
    ];
    let drops: Vec<String> = totals
        .iter()
        .map(|c| format!("ALTER TABLE {s}.duraq_queue_count_shards DROP COLUMN {c};"))
        .collect();
    let sql = format!("{} DROP TABLE {s}.duraq_history", drops.join(" "));
    let client = undo(store, &s, 7, &sql).await;

    let store = upgrade_in_place(&client, &s, 7, &["duraq_queue_count_shards"]).await;
    let snap = store.queue_snapshot().await.unwrap();
    assert_eq!(
        snap.queue("default").unwrap().counts.queued,
        1,
        "counts kept"
    );
    let totals = store.outcome_totals().await.unwrap();
    assert_eq!(totals.len(), 1);
    assert!(totals[0].totals.is_zero(), "totals start at 0");

    store
        .enqueue(job("j", EnqueueOptions::new()))
        .await
        .unwrap();
    assert_eq!(store.outcome_totals().await.unwrap()[0].totals.enqueued, 1);
    assert!(store.record_history().await.unwrap());
    let samples = store.history(0).await.unwrap();
    // The first sampler ever writes an all-zero baseline before its own
    // sample, so that what happened before it is counted.
    assert_eq!(samples.len(), 2, "the baseline and this minute's sample");
    assert!(samples[0].totals.is_zero(), "the baseline");
    assert_eq!(samples[1].totals.enqueued, 1);
    assert!(open(&s).await.unwrap().migration().applied.is_empty());
    store.close().await.unwrap();
}
