//! Upgrading a schema to version 13: the live partition's list-order index
//! (`duraq_jobs_created_waiting`) holds only jobs that wait, so a claim writes
//! no entry in it; the full index it replaces is dropped, and the job list
//! still reads every job, running ones included, in the same order.

use duraq_core::inspect::JobFilter;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus};
use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};

use crate::common::{claim_req, job, open, open_existing, schema};
use crate::rewind::{enqueued, job_indexes, undo};

/// The ids and statuses of the job list's first page (no filter).
async fn listed(store: &PostgresStore) -> Vec<(String, JobStatus)> {
    let page = store.search_jobs(&JobFilter::default()).await.unwrap();
    page.jobs.into_iter().map(|j| (j.id, j.status)).collect()
}

#[tokio::test]
async fn upgrade_to_v13_lists_running_jobs_without_a_created_entry() {
    let s = schema();
    let store = open(&s).await.unwrap();
    for _ in 0..4 {
        enqueued(&store, job("j", EnqueueOptions::new())).await;
    }
    let claimed = store.claim(&claim_req(1)).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let before = listed(&store).await;
    assert_eq!(before.len(), 4);
    assert_eq!(
        (before.iter())
            .filter(|(_, status)| *status == JobStatus::HandedOff)
            .count(),
        1
    );

    // Back to version 12: one list index over every live job.
    let sql = format!(
        "DROP INDEX {s}.duraq_jobs_created_waiting; \
         CREATE INDEX duraq_jobs_created ON {s}.duraq_jobs_live (created_at_ms, id COLLATE \"C\")"
    );
    let client = undo(store, &s, 13, &sql).await;

    let store = open_existing(&s).await.unwrap();
    assert_eq!(
        store.migration().applied,
        (13..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let live = job_indexes(&client, &s, "duraq_jobs_live").await;
    assert!(
        !live.iter().any(|(name, _)| name == "duraq_jobs_created"),
        "the old index is dropped: {live:?}"
    );
    let (_, def) = (live.iter())
        .find(|(name, _)| name == "duraq_jobs_created_waiting")
        .expect("the new index is built");
    assert!(
        def.contains("WHERE (status <> 'handed_off'::text)"),
        "{def}"
    );
    let done = job_indexes(&client, &s, "duraq_jobs_done").await;
    assert!(
        done.iter()
            .any(|(name, _)| name == "duraq_jobs_created_done"),
        "the finished jobs keep theirs: {done:?}"
    );

    // The list reads the running job through the running index, in place.
    assert_eq!(listed(&store).await, before);
}
