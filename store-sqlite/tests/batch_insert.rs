//! Large plain batches, which the store inserts many rows per statement
//! (`INSERT OR FAIL`, fixed statement sizes, literals for the fresh-row
//! columns): every field round-trips, and a conflict in the middle of a
//! statement leaves nothing of the batch behind.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

fn open() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("batch.db"), SqliteOptions::default()).unwrap();
    (dir, store)
}

fn rows_in_file(store: &SqliteStore) -> i64 {
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    conn.query_row("SELECT COUNT(*) FROM duraq_jobs", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn every_field_of_a_large_batch_round_trips() {
    let (_dir, store) = open();
    // 341 rows: every statement size (256, 64, 16, 4, 1) is used.
    let jobs: Vec<NewJob> = (0u32..341)
        .map(|i| {
            let args = json!([i, {"name": format!("naïve \"{i}\""), "list": [i, null, true]}]);
            let opts = EnqueueOptions::new()
                .queue(if i % 2 == 0 { "even" } else { "odd" })
                .max_retries(i % 7)
                .priority((i % 3) as i8);
            NewJob::new(format!("job_{}", i % 5), args, opts).unwrap()
        })
        .collect();
    let outcomes = store.enqueue_batch(jobs.clone()).await.unwrap();
    assert_eq!(outcomes.len(), jobs.len());
    for (job, outcome) in jobs.iter().zip(&outcomes) {
        assert_eq!(outcome, &EnqueueOutcome::Created(job.id().to_owned()));
        let stored = store.get_job(job.id()).await.unwrap().expect("inserted");
        assert_eq!(stored.job_name, job.job_name().as_str());
        assert_eq!(stored.args, *job.args());
        assert_eq!(stored.queue, job.queue().as_str());
        assert_eq!(stored.status, JobStatus::Queued);
        assert_eq!(stored.attempts, 0);
        assert_eq!(stored.max_retries, job.max_retries());
        assert_eq!(stored.priority, job.priority());
        assert!(stored.errors.is_empty() && stored.last_error.is_none());
        assert!(stored.worker_id.is_none() && stored.handed_off_at_ms.is_none());
    }
    assert_eq!(store.count_snapshot().await.unwrap().total, 341);
}

#[tokio::test]
async fn a_conflict_inside_a_statement_leaves_nothing_of_the_batch() {
    let (_dir, store) = open();
    let taken = NewJob::new("j", json!([0]), EnqueueOptions::new())
        .unwrap()
        .with_id("taken");
    store.enqueue(taken).await.unwrap();
    // Row 150 of 300 sits in the middle of the first 256-row statement.
    let jobs: Vec<NewJob> = (0..300)
        .map(|i| {
            let job = NewJob::new("j", json!([i]), EnqueueOptions::new()).unwrap();
            if i == 150 {
                job.with_id("taken")
            } else {
                job
            }
        })
        .collect();
    let err = store.enqueue_batch(jobs.clone()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::IdempotencyConflict);
    assert_eq!(rows_in_file(&store), 1, "no row of the batch stayed");
    assert_eq!(store.count_snapshot().await.unwrap().total, 1);
    assert_eq!(
        store.get_job("taken").await.unwrap().unwrap().args,
        json!([0])
    );
    // The same batch without the conflicting row then goes in whole.
    let rest: Vec<NewJob> = jobs.into_iter().filter(|j| j.id() != "taken").collect();
    assert_eq!(store.enqueue_batch(rest).await.unwrap().len(), 299);
    assert_eq!(rows_in_file(&store), 300);
}

#[tokio::test]
async fn a_reused_statement_keeps_no_value_of_the_row_before() {
    let (_dir, store) = open();
    // Both go through the same one-row statement, the first with every optional
    // column set, the second with none: none may carry over.
    let full = EnqueueOptions::new()
        .concurrency("cap", 2)
        .rate_limit("rate", 5, std::time::Duration::from_secs(1))
        .idempotency_key("key")
        .timeout(std::time::Duration::from_secs(30));
    let first = NewJob::new("j", json!([1]), full).unwrap();
    let second = NewJob::new("j", json!([2]), EnqueueOptions::new()).unwrap();
    store.enqueue(first.clone()).await.unwrap();
    store.enqueue(second.clone()).await.unwrap();
    let first = store.get_job(first.id()).await.unwrap().unwrap();
    assert_eq!(first.concurrency_key.as_deref(), Some("cap"));
    assert_eq!(first.rate_key.as_deref(), Some("rate"));
    assert_eq!(first.idempotency_key.as_deref(), Some("key"));
    assert_eq!(first.timeout_ms, Some(30_000));
    let second = store.get_job(second.id()).await.unwrap().unwrap();
    assert_eq!(second.concurrency_key, None);
    assert_eq!(second.max_concurrency, None);
    assert_eq!(second.rate_key, None);
    assert_eq!((second.rate_max, second.rate_period_ms), (None, None));
    assert_eq!(second.idempotency_key, None);
    assert_eq!(second.timeout_ms, None);
}
