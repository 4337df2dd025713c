//! Enqueueing and reporting on an application's diesel transaction
//! (`SqliteStore::enqueue_in_diesel`, `report_in_diesel`) in a real file: a
//! `users` row and its job commit together or not at all.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel::SqliteConnection;
use duraq_core::prelude::*;
use duraq_core::{
    EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, Outcome, Registry, Worker,
};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// A store and a diesel connection on one file, with a `users` table.
fn app(dir: &tempfile::TempDir) -> (Arc<SqliteStore>, String) {
    let path = dir.path().join("app.db").display().to_string();
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let mut conn = connect(&path);
    diesel::sql_query("CREATE TABLE users (email TEXT PRIMARY KEY)")
        .execute(&mut conn)
        .unwrap();
    (Arc::new(store), path)
}

fn connect(path: &str) -> SqliteConnection {
    let mut conn = SqliteConnection::establish(path).unwrap();
    diesel::sql_query("PRAGMA busy_timeout = 5000")
        .execute(&mut conn)
        .unwrap();
    conn
}

fn users(conn: &mut SqliteConnection) -> i64 {
    diesel::sql_query("SELECT count(*) AS n FROM users")
        .get_result::<Count>(conn)
        .unwrap()
        .n
}

fn insert_user(conn: &mut SqliteConnection, email: &str) -> QueryResult<usize> {
    diesel::sql_query("INSERT INTO users (email) VALUES (?)")
        .bind::<Text, _>(email)
        .execute(conn)
}

fn welcome(email: &str, opts: EnqueueOptions) -> NewJob {
    NewJob::new("send_welcome", json!([email]), opts).unwrap()
}

/// What a transaction's closure returns: diesel's errors and duraq's.
type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_leaves_neither_the_user_nor_the_job_and_a_commit_both() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = app(&dir);
    let mut conn = connect(&path);

    let mut rolled_back = None;
    let refused: Fallible<()> = conn.immediate_transaction(|conn| {
        insert_user(conn, "ada@example.com")?;
        let job = welcome("ada@example.com", EnqueueOptions::new());
        rolled_back = Some(store.enqueue_in_diesel(conn, job)?);
        Err("the terms were not accepted".into())
    });
    assert!(refused.is_err());
    assert_eq!(users(&mut conn), 0);
    let id = rolled_back.unwrap().job_id().to_owned();
    assert!(store.get_job(&id).await.unwrap().is_none());
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    let created = conn
        .immediate_transaction(|conn| -> Fallible<_> {
            insert_user(conn, "ada@example.com")?;
            let jobs = vec![
                welcome("ada@example.com", EnqueueOptions::new()),
                welcome("ada@example.com", EnqueueOptions::new().queue("audit")),
            ];
            Ok(store.enqueue_many_in_diesel(conn, jobs)?)
        })
        .unwrap();
    assert_eq!(users(&mut conn), 1);
    for outcome in &created {
        let job = store.get_job(outcome.job_id()).await.unwrap().unwrap();
        assert_eq!(job.status, JobStatus::Queued);
    }
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_enqueue_leaves_the_transaction_usable() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = app(&dir);
    let mut conn = connect(&path);
    let key = || EnqueueOptions::new().idempotency_key("signup-ada");

    let (created, refused, replayed) = conn
        .immediate_transaction(|conn| -> Fallible<_> {
            insert_user(conn, "ada@example.com")?;
            let created = store.enqueue_in_diesel(conn, welcome("ada@example.com", key()))?;
            let refused = store
                .enqueue_in_diesel(conn, welcome("bob@example.com", key()))
                .unwrap_err();
            let replayed = store.enqueue_in_diesel(conn, welcome("ada@example.com", key()))?;
            insert_user(conn, "bob@example.com")?;
            Ok((created, refused, replayed))
        })
        .unwrap();
    assert_eq!(refused.code(), ErrorCode::IdempotencyConflict);
    assert_eq!(
        replayed,
        EnqueueOutcome::Replayed(created.job_id().to_owned())
    );
    assert_eq!(users(&mut conn), 2);
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
}

/// A handler that completes its job in its own diesel transaction: the
/// user row and the completion commit together, and the worker's own report
/// changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_completes_its_job_in_its_diesel_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = app(&dir);
    let codes: Arc<Mutex<Vec<String>>> = Arc::default();
    let (h_store, h_path, h_codes) = (store.clone(), path.clone(), codes.clone());
    let registry = Registry::new()
        .register_fn("send_welcome", move |ctx, args: Value| {
            let (store, path, codes) = (h_store.clone(), h_path.clone(), h_codes.clone());
            async move {
                let email = args[0].as_str().unwrap_or_default().to_owned();
                let done = tokio::task::spawn_blocking(move || {
                    let mut conn = connect(&path);
                    conn.immediate_transaction(|conn| -> Fallible<()> {
                        insert_user(conn, &email)?;
                        let output = json!({"welcomed": email});
                        store.report_in_diesel(conn, &ctx, Outcome::CompletedWith { output })?;
                        Ok(())
                    })
                })
                .await
                .unwrap();
                if let Err(e) = done {
                    codes.lock().unwrap().push(e.to_string());
                }
                Ok(())
            }
        })
        .unwrap();
    let id = store
        .enqueue(welcome("ada@example.com", EnqueueOptions::new()))
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        let job = store.get_job(&id).await.unwrap().unwrap();
        if job.status == JobStatus::Completed {
            break job;
        }
        assert!(Instant::now() < deadline, "never completed: {job:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let report = worker.shutdown_and_join().await.unwrap();
    assert!(
        codes.lock().unwrap().is_empty(),
        "{:?}",
        codes.lock().unwrap()
    );
    assert_eq!(job.output, Some(json!({"welcomed": "ada@example.com"})));
    assert_eq!(users(&mut connect(&path)), 1);
    assert_eq!((report.completed, report.lost_leases), (1, 0));
}
