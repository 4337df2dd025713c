//! Upgrading a schema to version 12: the index of reservations held
//! (`duraq_jobs_reserved_key`) lists only running jobs that hold one, the
//! index it replaces is dropped, and the one reader that walks it
//! (reconciling reservation counts) still finds every reservation through it.

use duraq_core::prelude::*;
use duraq_core::EnqueueOptions;

use crate::common::{claim_req, job, open, open_existing, schema};
use duraq_store_postgres::SCHEMA_VERSION;

use crate::rewind::{job_indexes, undo};

#[tokio::test]
async fn upgrade_to_v12_indexes_only_the_reservations_held() {
    let s = schema();
    let store = open(&s).await.unwrap();
    for _ in 0..2 {
        let capped = EnqueueOptions::new().concurrency("api", 5);
        store.enqueue(job("j", capped)).await.unwrap();
    }
    store
        .enqueue(job("j", EnqueueOptions::new()))
        .await
        .unwrap();
    assert_eq!(store.claim(&claim_req(5)).await.unwrap().len(), 3);

    // Back to version 11: its index over every running job, and no
    // version 12 in the ledger.
    let sql = format!(
        "DROP INDEX {s}.duraq_jobs_reserved_key; \
         CREATE INDEX duraq_jobs_reserved ON {s}.duraq_jobs_live (reservation_key) \
         WHERE status = 'handed_off'"
    );
    let client = undo(store, &s, 12, &sql).await;

    let store = open_existing(&s).await.unwrap();
    assert_eq!(
        store.migration().applied,
        (12..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let indexes = job_indexes(&client, &s, "duraq_jobs_live").await;
    assert!(
        !indexes
            .iter()
            .any(|(name, _)| name == "duraq_jobs_reserved"),
        "the old index is dropped: {indexes:?}"
    );
    let (_, def) = (indexes.iter())
        .find(|(name, _)| name == "duraq_jobs_reserved_key")
        .expect("the new index is built");
    assert!(def.contains("reservation_key IS NOT NULL"), "{def}");

    // Reconciling walks the new index (the predicate is implied by the
    // key's equality) and counts both reservations through it.
    client
        .batch_execute(&format!(
            "UPDATE {s}.duraq_concurrency SET active = 0; ANALYZE {s}.duraq_jobs_live"
        ))
        .await
        .unwrap();
    assert_eq!(store.reconcile_reservations().await.unwrap(), 1);
    let active: i64 = client
        .query_one(
            &format!("SELECT active FROM {s}.duraq_concurrency WHERE concurrency_key = 'api'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(active, 2);
    let plan: Vec<String> = client
        .simple_query(&format!(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; \
             EXPLAIN SELECT count(*) FROM {s}.duraq_jobs AS j \
             WHERE j.status = 'handed_off' AND j.reservation_key = 'api'"
        ))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("duraq_jobs_reserved_key"), "{plan}");
}
