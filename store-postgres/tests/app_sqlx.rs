//! Enqueueing on an application's sqlx transaction (`PostgresStore::enqueue_in`
//! with `&mut *tx`): the new user's program, a `users` row and its
//! `send_welcome` job that must commit together, against a real server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, Registry, Worker};
use duraq_store_postgres::PostgresStore;
use serde_json::json;
use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::common::{open, schema, url};

/// A store in a fresh schema, and the application's sqlx pool with a
/// `users` table in the same schema.
async fn app() -> (String, PostgresStore, PgPool) {
    let s = schema();
    let store = open(&s).await.unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&url())
        .await
        .unwrap();
    let create = format!("CREATE TABLE {s}.users (email text PRIMARY KEY)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
        .unwrap();
    (s, store, pool)
}

fn welcome(email: &str, opts: EnqueueOptions) -> NewJob {
    NewJob::new("send_welcome", json!([email]), opts).unwrap()
}

async fn users(pool: &PgPool, s: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {s}.users");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn insert_user(tx: &mut sqlx::PgConnection, s: &str, email: &str) {
    let sql = format!("INSERT INTO {s}.users (email) VALUES ($1)");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(email)
        .execute(tx)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_rollback_leaves_neither_the_user_nor_the_job_and_a_commit_both() {
    let (s, store, pool) = app().await;

    let mut tx = pool.begin().await.unwrap();
    insert_user(&mut tx, &s, "ada@example.com").await;
    let rolled_back = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(users(&pool, &s).await, 0);
    assert!(store.get_job(rolled_back.job_id()).await.unwrap().is_none());
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    let mut tx = pool.begin().await.unwrap();
    insert_user(&mut tx, &s, "ada@example.com").await;
    let created = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap();
    assert!(
        store.get_job(created.job_id()).await.unwrap().is_none(),
        "invisible before the commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(users(&pool, &s).await, 1);
    let job = store.get_job(created.job_id()).await.unwrap().unwrap();
    assert_eq!(
        (job.status, job.args),
        (JobStatus::Queued, json!(["ada@example.com"]))
    );
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, snap.total), (1, 1));
}

#[tokio::test]
async fn a_refused_enqueue_leaves_the_transaction_usable() {
    let (s, store, pool) = app().await;
    let key = || EnqueueOptions::new().idempotency_key("signup-ada");

    let mut tx = pool.begin().await.unwrap();
    insert_user(&mut tx, &s, "ada@example.com").await;
    let created = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", key()))
        .await
        .unwrap();
    // The same key with other args: refused, rolled back to its savepoint.
    let refused = store
        .enqueue_in(&mut *tx, welcome("bob@example.com", key()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::IdempotencyConflict);
    // The same request again replays inside the transaction.
    let replayed = store
        .enqueue_in(&mut *tx, welcome("ada@example.com", key()))
        .await
        .unwrap();
    assert_eq!(
        replayed,
        EnqueueOutcome::Replayed(created.job_id().to_owned())
    );
    insert_user(&mut tx, &s, "bob@example.com").await;
    tx.commit().await.unwrap();

    assert_eq!(users(&pool, &s).await, 2);
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
    assert_eq!(
        store
            .enqueue(welcome("ada@example.com", key()))
            .await
            .unwrap(),
        EnqueueOutcome::Replayed(created.job_id().to_owned())
    );
}

#[tokio::test]
async fn a_batch_commits_all_or_none() {
    let (s, store, pool) = app().await;
    let emails = ["a@example.com", "b@example.com", "c@example.com"];
    let jobs = || emails.map(|e| welcome(e, EnqueueOptions::new())).to_vec();

    let mut tx = pool.begin().await.unwrap();
    // The transaction itself (`&mut tx`) works as well as its connection.
    let outcomes = store.enqueue_many_in(&mut tx, jobs()).await.unwrap();
    assert_eq!(outcomes.len(), 3);
    tx.rollback().await.unwrap();
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    let mut tx = pool.begin().await.unwrap();
    for email in emails {
        insert_user(&mut tx, &s, email).await;
    }
    // 40 jobs: past the size at which the store's own connection uses COPY.
    let many: Vec<NewJob> = (0..40)
        .map(|i| welcome(&format!("{i}@example.com"), EnqueueOptions::new()))
        .collect();
    assert_eq!(
        store.enqueue_many_in(&mut *tx, many).await.unwrap().len(),
        40
    );
    store.enqueue_many_in(&mut *tx, jobs()).await.unwrap();
    tx.commit().await.unwrap();
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, users(&pool, &s).await), (43, 3));
}

/// An idle worker starts the job once the caller commits, never before: its
/// handler sees the user row the job was enqueued with.
#[tokio::test]
async fn an_idle_worker_starts_the_job_after_the_commit() {
    let (s, store, pool) = app().await;
    let store = Arc::new(store);
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (handler_pool, handler_seen, handler_s) = (pool.clone(), seen.clone(), s.clone());
    let registry = Registry::new()
        .register_fn("send_welcome", move |_ctx, args| {
            let (pool, seen, s) = (
                handler_pool.clone(),
                handler_seen.clone(),
                handler_s.clone(),
            );
            async move {
                let email = args[0].as_str().unwrap_or_default().to_owned();
                let sql = format!("SELECT count(*) FROM {s}.users WHERE email = $1");
                let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
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

    let mut tx = pool.begin().await.unwrap();
    insert_user(&mut tx, &s, "ada@example.com").await;
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
