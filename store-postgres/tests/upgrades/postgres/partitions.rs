//! Upgrading a schema to version 11 (history apart from the hot path,
//! `docs/postgres.md`): the plain job table of version 10 becomes a table
//! partitioned into live and finished jobs, every row lands in the partition
//! of its status with every field as it was, and the store works on at once.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, ErrorCode, Job, JobStatus, Outcome};
use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};
use tokio_postgres::Client;

use crate::common::{claim_req, job, open, open_existing, schema};
use crate::rewind::{enqueued, undo};

/// Closes `store` and turns its schema's partitioned job table back into the
/// plain table version 10 had: same columns and rows, its primary key and two
/// of its indexes under their old names, and a ledger without version 11.
async fn back_to_v10(store: PostgresStore, s: &str) -> Client {
    let sql = format!(
        "CREATE TABLE {s}.duraq_jobs_plain (LIKE {s}.duraq_jobs INCLUDING DEFAULTS); \
         INSERT INTO {s}.duraq_jobs_plain SELECT * FROM {s}.duraq_jobs; \
         DROP TABLE {s}.duraq_jobs; \
         ALTER TABLE {s}.duraq_jobs_plain RENAME TO duraq_jobs; \
         ALTER TABLE {s}.duraq_jobs ADD PRIMARY KEY (id); \
         CREATE INDEX duraq_jobs_claim ON {s}.duraq_jobs \
         (priority, scheduled_at_ms, created_at_ms, id COLLATE \"C\") WHERE status = 'queued'; \
         CREATE INDEX duraq_jobs_created ON {s}.duraq_jobs (created_at_ms, id COLLATE \"C\")"
    );
    undo(store, s, 11, &sql).await
}

async fn rows_in(client: &Client, s: &str, table: &str) -> Vec<String> {
    let sql = format!("SELECT id FROM {s}.{table} ORDER BY id");
    let rows = client.query(&sql, &[]).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn upgrade_to_v11_moves_each_job_to_its_partition() {
    let s = schema();
    let store = open(&s).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        let opts = EnqueueOptions::new().idempotency_key(format!("k{i}"));
        ids.push(enqueued(&store, job("j", opts)).await);
    }
    let claimed = store.claim(&claim_req(2)).await.unwrap();
    let finished = claimed[0].clone();
    let running = claimed[1].clone();
    let report = vec![(finished.lease().unwrap(), Outcome::Completed)];
    store.report_batch(report).await.unwrap();
    let queued = (ids.iter())
        .find(|id| **id != finished.id && **id != running.id)
        .unwrap()
        .clone();
    let pending = enqueued(
        &store,
        job("j", EnqueueOptions::new().after(queued.as_str())),
    )
    .await;
    let every = [&finished.id, &running.id, &queued, &pending];
    let mut before: Vec<Job> = Vec::new();
    for id in every {
        before.push(store.get_job(id).await.unwrap().unwrap());
    }
    let client = back_to_v10(store, &s).await;

    let store = open_existing(&s).await.unwrap();
    assert_eq!(
        store.migration().applied,
        (11..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let kind: String = client
        .query_one(
            "SELECT relkind::text FROM pg_class WHERE oid = format('%I.duraq_jobs', $1::text)::regclass",
            &[&s],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "p", "the job table is partitioned");
    let mut live = vec![running.id.clone(), queued.clone(), pending.clone()];
    live.sort();
    assert_eq!(rows_in(&client, &s, "duraq_jobs_live").await, live);
    assert_eq!(
        rows_in(&client, &s, "duraq_jobs_done").await,
        vec![finished.id.clone()]
    );
    let old: Option<i64> = client
        .query_one(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = 'duraq_jobs_unpartitioned'",
            &[&s],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(old, Some(0), "the old table is gone");
    for (id, was) in every.iter().zip(&before) {
        assert_eq!(&store.get_job(id).await.unwrap().unwrap(), was);
    }

    // The store works on: a replay finds the finished job, its id stays
    // taken, the queued job is claimed, and finishing the running one moves
    // it to the finished partition.
    let replay = store
        .enqueue(job("j", EnqueueOptions::new().idempotency_key("k0")))
        .await
        .unwrap();
    assert_eq!(replay.job_id(), ids[0]);
    let taken = job("j", EnqueueOptions::new()).with_id(finished.id.clone());
    assert_eq!(
        store.enqueue(taken).await.unwrap_err().code(),
        ErrorCode::IdempotencyConflict
    );
    let next = store.claim(&claim_req(5)).await.unwrap();
    assert_eq!(next.iter().map(|j| &j.id).collect::<Vec<_>>(), [&queued]);
    let report = vec![(running.lease().unwrap(), Outcome::Completed)];
    store.report_batch(report).await.unwrap();
    assert_eq!(
        store.get_job(&running.id).await.unwrap().unwrap().status,
        JobStatus::Completed
    );
    let mut done = vec![finished.id.clone(), running.id.clone()];
    done.sort();
    assert_eq!(rows_in(&client, &s, "duraq_jobs_done").await, done);
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!(
        (
            snap.counts.completed,
            snap.counts.handed_off,
            snap.counts.pending
        ),
        (2, 1, 1)
    );
}
