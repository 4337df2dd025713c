//! Several connections and stores on one file: transactional enqueue, cross-store
//! wake-ups through `PRAGMA data_version`, busy classification, group commit.

use std::sync::Arc;
use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;

fn job(name: &str) -> NewJob {
    NewJob::new(name, serde_json::json!([1]), EnqueueOptions::new()).unwrap()
}

/// Waits for the next work signal, failing the test after a generous bound.
async fn next_signal(rx: &mut tokio::sync::watch::Receiver<u64>) {
    tokio::time::timeout(Duration::from_secs(10), rx.changed())
        .await
        .expect("work signal within the bound")
        .expect("store alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_in_a_callers_transaction_commits_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let mut conn = Connection::open(&path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        .unwrap();

    let err = store
        .enqueue_in_transaction(&conn, job("outside"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnsupportedOption);

    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO orders (id) VALUES (?1)", [1])
        .unwrap();
    let rolled_back = store.enqueue_in_transaction(&tx, job("receipt")).unwrap();
    tx.rollback().unwrap();
    assert_eq!(store.get_job(rolled_back.job_id()).await.unwrap(), None);

    let mut signal = store.work_signal();
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO orders (id) VALUES (?1)", [2])
        .unwrap();
    let outcome = store.enqueue_in_transaction(&tx, job("receipt")).unwrap();
    assert_eq!(
        store.get_job(outcome.job_id()).await.unwrap(),
        None,
        "invisible before commit"
    );
    tx.commit().unwrap();
    next_signal(&mut signal).await;
    let stored = store
        .get_job(outcome.job_id())
        .await
        .unwrap()
        .expect("visible after commit");
    assert_eq!(stored.status, JobStatus::Queued);
    let snapshot = store.count_snapshot().await.unwrap();
    assert_eq!((snapshot.counts.queued, snapshot.revision), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_store_on_the_file_is_woken_by_the_poller() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let producer = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let worker = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let mut signal = worker.work_signal();
    let id = producer
        .enqueue(job("ping"))
        .await
        .unwrap()
        .job_id()
        .to_owned();
    next_signal(&mut signal).await;
    assert!(worker.get_job(&id).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_every_retry_is_database_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let opts = SqliteOptions::default().busy_timeout(Duration::from_millis(5));
    let store = SqliteStore::open(&path, opts).unwrap();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store.enqueue(job("blocked")).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatabaseBusy);
    holder.execute_batch("COMMIT").unwrap();
    assert!(matches!(
        store.enqueue(job("free")).await.unwrap(),
        EnqueueOutcome::Created(_)
    ));
    let snapshot = store.count_snapshot().await.unwrap();
    assert_eq!((snapshot.counts.queued, snapshot.revision), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_share_group_commits_and_fail_alone() {
    let store = Arc::new(
        SqliteStore::open_temporary(SqliteOptions::default(), duraq_core::driver::system_clock())
            .unwrap(),
    );
    let mut deltas = store.subscribe_counts();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // Every scope is used by two requests with different args: one wins.
            let opts = EnqueueOptions::new().idempotency_key(format!("k{}", i / 2));
            store
                .enqueue(NewJob::new("work", serde_json::json!([i]), opts).unwrap())
                .await
        }));
    }
    let mut created = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(EnqueueOutcome::Created(_)) => created += 1,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(err) => assert_eq!(err.code(), ErrorCode::IdempotencyConflict),
        }
    }
    assert_eq!(created, 100);
    let snapshot = store.count_snapshot().await.unwrap();
    assert_eq!((snapshot.counts.queued, snapshot.revision), (100, 100));
    let mut revisions = Vec::new();
    while let Ok(delta) = deltas.try_recv() {
        assert_eq!(delta.deltas.queued, 1);
        revisions.push(delta.revision);
    }
    assert_eq!(revisions, (1..=100).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_work_moves_the_cross_process_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let conn = Connection::open(&path).unwrap();
    let epoch = || -> i64 {
        conn.query_row(
            "SELECT value FROM duraq_counts WHERE name = 'work'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let start = epoch();
    let req = duraq_core::driver::ClaimRequest {
        worker_id: "idle".into(),
        job_names: vec!["ping".into()],
        limit: 4,
        ..Default::default()
    };
    // Idle claims and heartbeats write, but must not wake other processes' workers.
    assert!(store.claim(&req).await.unwrap().is_empty());
    store.heartbeat("idle").await.unwrap();
    assert_eq!(epoch(), start);
    store.enqueue(job("ping")).await.unwrap();
    assert_eq!(epoch(), start + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_commits_what_was_sent_then_refuses_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closing.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let id = store
        .enqueue(job("kept"))
        .await
        .unwrap()
        .job_id()
        .to_owned();
    store
        .get_job(&id)
        .await
        .unwrap()
        .expect("readable before close");
    store.close().await.unwrap();
    store.close().await.unwrap(); // idempotent
    let write = store.enqueue(job("late")).await.unwrap_err();
    assert_eq!(write.code(), ErrorCode::Backend);
    let read = store.get_job(&id).await.unwrap_err();
    assert_eq!(read.code(), ErrorCode::Backend);
    // The write connection is closed: another handle sees the committed job.
    let again = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        again.get_job(&id).await.unwrap().unwrap().status,
        JobStatus::Queued
    );
}
