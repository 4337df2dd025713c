//! Upgrading a schema to version 7 (throughput history, `docs/history.md`):
//! the outcome totals are added to the per-queue counter rows in place (a
//! constant default, no table rewrite), old counts are kept, the totals start
//! at 0 and then count, and the history table works at once. Needs
//! `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::EnqueueOptions;
    use duraq_store_postgres::PostgresStore;

    use crate::common::{job, open, options, raw_client, schema, url};

    #[tokio::test]
    async fn upgrade_to_v7_adds_outcome_totals_in_place_and_the_history() {
        let s = schema();
        let store = open(&s).await.unwrap();
        store
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        store.close().await.unwrap();
        drop(store);
        let client = raw_client().await;
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
        client
            .batch_execute(&format!(
                "{} DROP TABLE {s}.duraq_history; DELETE FROM {s}.duraq_migrations WHERE version >= 7",
                drops.join(" ")
            ))
            .await
            .unwrap();
        let filenode = || async {
            client
                .query_one(
                    "SELECT pg_relation_filenode(format('%I.duraq_queue_count_shards', $1::text)::regclass)::int8",
                    &[&s],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        };
        let before = filenode().await;

        let store = PostgresStore::connect_existing(&url(), options(&s))
            .await
            .unwrap();
        assert_eq!(
            store.migration().applied,
            (7..=duraq_store_postgres::SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(filenode().await, before, "no table rewrite");
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
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].totals.enqueued, 1);
        assert!(open(&s).await.unwrap().migration().applied.is_empty());
        store.close().await.unwrap();
    }
}
