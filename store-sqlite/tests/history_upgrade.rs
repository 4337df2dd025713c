//! Upgrading a file to schema version 9 (throughput history,
//! `docs/history.md`): the outcome totals are added to `duraq_queue_counts` in
//! place (`ALTER TABLE … ADD COLUMN … DEFAULT 0`, the row kept), old counts are
//! kept, the totals start at 0 and then count, and the history table works at
//! once.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;

#[tokio::test]
async fn upgrade_to_v9_adds_outcome_totals_in_place_and_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v8.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let job = || NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    store.enqueue(job()).await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE duraq_queue_counts DROP COLUMN enqueued_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN completed_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN failed_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN retried_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN cancelled_total; \
         ALTER TABLE duraq_queue_counts DROP COLUMN orphaned_total; \
         DROP TABLE duraq_history; DELETE FROM duraq_migrations WHERE version >= 9",
    )
    .unwrap();
    let rowid = |conn: &Connection| -> i64 {
        conn.query_row(
            "SELECT rowid FROM duraq_queue_counts WHERE queue = 'default'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = rowid(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (9..=duraq_store_sqlite::SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        rowid(&Connection::open(&path).unwrap()),
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

    store.enqueue(job()).await.unwrap();
    assert_eq!(store.outcome_totals().await.unwrap()[0].totals.enqueued, 1);
    assert!(store.record_history().await.unwrap());
    let samples = store.history(0).await.unwrap();
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].totals.enqueued, 1);
    drop(store);
    let again = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(again.migration().applied.is_empty());
}
