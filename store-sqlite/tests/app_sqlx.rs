//! Enqueueing on an application's sqlx transaction (`SqliteStore::enqueue_in`
//! with `&mut *tx`): the new user's program, a `users` row and its
//! `send_welcome` job that must commit together, in a real file.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, Registry, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

/// A store and the application's sqlx pool on one file, with a `users`
/// table beside duraq's.
async fn app(dir: &tempfile::TempDir) -> (SqliteStore, SqlitePool) {
    let path = dir.path().join("app.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::raw_sql("CREATE TABLE users (email TEXT PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap();
    (store, pool)
}

fn welcome(email: &str, opts: EnqueueOptions) -> NewJob {
    NewJob::new("send_welcome", json!([email]), opts).unwrap()
}

async fn users(pool: &SqlitePool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn insert_user(tx: &mut sqlx::SqliteConnection, email: &str) {
    sqlx::query("INSERT INTO users (email) VALUES (?1)")
        .bind(email)
        .execute(tx)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_leaves_neither_the_user_nor_the_job_and_a_commit_both() {
    let dir = tempfile::tempdir().unwrap();
    let (store, pool) = app(&dir).await;

    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    insert_user(&mut tx, "ada@example.com").await;
    let rolled_back = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(users(&pool).await, 0);
    assert!(store.get_job(rolled_back.job_id()).await.unwrap().is_none());
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    // A deferred transaction works too: its first write takes the lock.
    let mut tx = pool.begin().await.unwrap();
    insert_user(&mut tx, "ada@example.com").await;
    let created = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(users(&pool).await, 1);
    let job = store.get_job(created.job_id()).await.unwrap().unwrap();
    assert_eq!(
        (job.status, job.args),
        (JobStatus::Queued, json!(["ada@example.com"]))
    );
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, snap.total), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_enqueue_leaves_the_transaction_usable() {
    let dir = tempfile::tempdir().unwrap();
    let (store, pool) = app(&dir).await;
    let key = || EnqueueOptions::new().idempotency_key("signup-ada");

    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    insert_user(&mut tx, "ada@example.com").await;
    let created = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", key()))
        .await
        .unwrap();
    let refused = store
        .enqueue_in(&mut *tx, welcome("bob@example.com", key()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::IdempotencyConflict);
    let replayed = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", key()))
        .await
        .unwrap();
    assert_eq!(
        replayed,
        EnqueueOutcome::Replayed(created.job_id().to_owned())
    );
    insert_user(&mut tx, "bob@example.com").await;
    tx.commit().await.unwrap();

    assert_eq!(users(&pool).await, 2);
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_commits_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let (store, pool) = app(&dir).await;
    let jobs = |n: usize| {
        (0..n)
            .map(|i| welcome(&format!("{i}@example.com"), EnqueueOptions::new()))
            .collect::<Vec<_>>()
    };

    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    assert_eq!(
        store
            .enqueue_many_in(&mut *tx, jobs(3))
            .await
            .unwrap()
            .len(),
        3
    );
    tx.rollback().await.unwrap();
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    insert_user(&mut tx, "ada@example.com").await;
    assert_eq!(
        store
            .enqueue_many_in(&mut *tx, jobs(40))
            .await
            .unwrap()
            .len(),
        40
    );
    tx.commit().await.unwrap();
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, users(&pool).await), (40, 1));
}

/// An idle worker starts the job once the caller commits, never before: its
/// handler sees the user row the job was enqueued with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_starts_the_job_after_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (store, pool) = app(&dir).await;
    let store = Arc::new(store);
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (handler_pool, handler_seen) = (pool.clone(), seen.clone());
    let registry = Registry::new()
        .register_fn("send_welcome", move |_ctx, args| {
            let (pool, seen) = (handler_pool.clone(), handler_seen.clone());
            async move {
                let email = args[0].as_str().unwrap_or_default().to_owned();
                let n: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE email = ?1")
                    .bind(email)
                    .fetch_one(&pool)
                    .await
                    .unwrap_or(-1);
                seen.lock().unwrap().push(n);
                Ok(())
            }
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();

    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    insert_user(&mut tx, "ada@example.com").await;
    let created = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = store.get_job(created.job_id()).await.unwrap().unwrap();
        if job.status == JobStatus::Completed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the worker never ran the job: {job:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown_and_join().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![1], "ran once, after the commit");
}
