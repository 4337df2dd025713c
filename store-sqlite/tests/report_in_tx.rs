//! A handler that finishes its job in its own sqlx transaction
//! (`SqliteStore::report_in`) survives a SIGKILL right after the commit:
//! the job completed once, its receipt written once. (What the report in a
//! handler's transaction promises in one process, for every client, is
//! `duraq_tests::app_clients`.) The SIGKILLed worker is this
//! test binary re-run with `DURAQ_REPORT_IN_CHILD=<file>`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome, Registry, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

const CHILD: &str = "DURAQ_REPORT_IN_CHILD";

/// The store on file `s` and the application's pool, with a `receipts` table.
async fn app(s: &str) -> (Arc<SqliteStore>, SqlitePool) {
    let store = SqliteStore::open(s, SqliteOptions::default()).unwrap();
    let options = SqliteConnectOptions::new()
        .filename(s)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS receipts (job_id TEXT NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    (Arc::new(store), pool)
}

/// A fresh file for one test (its folder is kept until the test ends).
fn fresh_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db").display().to_string();
    (dir, path)
}

async fn receipts(pool: &SqlitePool, _s: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM receipts")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// In one sqlx transaction: a receipt row for the job, then the job's
/// completion with `output`; committed when `commit`.
async fn receipt_and_report(
    store: &SqliteStore,
    pool: &SqlitePool,
    _s: &str,
    ctx: &duraq_core::JobContext,
    commit: bool,
) -> duraq_core::Result<()> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO receipts (job_id) VALUES (?1)")
        .bind(ctx.job_id())
        .execute(&mut *tx)
        .await
        .unwrap();
    let output = json!({"receipt": ctx.job_id()});
    store
        .report_in(&mut tx, ctx, Outcome::CompletedWith { output })
        .await?;
    if commit {
        tx.commit().await.unwrap();
    } else {
        tx.rollback().await.unwrap();
    }
    Ok(())
}

fn receipt_job() -> NewJob {
    NewJob::new("receipt", json!([1]), EnqueueOptions::new()).unwrap()
}

/// A worker process SIGKILLed right after its handler's transaction
/// committed: the job is completed once, the receipt written once, and a
/// worker started afterwards runs nothing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_right_after_the_commit_leaves_the_job_completed_once() {
    let (_dir, s) = fresh_file();
    let (store, pool) = app(&s).await;
    let id = store
        .enqueue(receipt_job())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_worker_that_dies_after_its_commit",
            "--nocapture",
        ])
        .env(CHILD, &s)
        .status()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(9),
        "the child was SIGKILLed: {status:?}"
    );

    let job = store.get_job(&id).await.unwrap().unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Completed, 1));
    assert_eq!(job.output, Some(json!({"receipt": id})));
    assert_eq!(receipts(&pool, &s).await, 1);
    // A worker that starts now finds nothing to run.
    let ran: Arc<Mutex<u32>> = Arc::default();
    let h_ran = ran.clone();
    let registry = Registry::new()
        .register_fn("receipt", move |_ctx, _args: Value| {
            *h_ran.lock().unwrap() += 1;
            async { Ok(()) }
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let report = worker.shutdown_and_join().await.unwrap();
    assert_eq!((report.claimed, *ran.lock().unwrap()), (0, 0));
    assert_eq!(store.count_snapshot().await.unwrap().counts.completed, 1);
}

/// The child of the test above: a worker whose handler commits its receipt
/// and completion, then SIGKILLs its own process before returning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_worker_that_dies_after_its_commit() {
    let Ok(s) = std::env::var(CHILD) else {
        return; // run by the harness itself: nothing to do
    };
    let (store, pool) = app(&s).await;
    let (h_store, h_pool) = (store.clone(), pool.clone());
    let registry = Registry::new()
        .register_fn("receipt", move |ctx, _args: Value| {
            let (store, pool, s) = (h_store.clone(), h_pool.clone(), s.clone());
            async move {
                receipt_and_report(&store, &pool, &s, &ctx, true).await?;
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid])
                    .status();
                std::future::pending::<()>().await;
                Ok(())
            }
        })
        .unwrap();
    let _worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    // Only the SIGKILL ends this process.
    std::future::pending::<()>().await;
}
