//! A handler that finishes its job in its own sqlx transaction
//! (`PostgresStore::report_in`) survives a SIGKILL right after the commit:
//! the job completed once, its receipt written once. (What the report in a
//! handler's transaction promises in one process, for every client, is
//! `duraq_tests::app_clients`.) The SIGKILLed worker is this
//! test binary re-run with `DURAQ_REPORT_IN_CHILD=<schema>`.

mod common;

use std::sync::{Arc, Mutex};

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, JobStatus, NewJob, Outcome, Registry, Worker};
use duraq_store_postgres::PostgresStore;
use serde_json::{json, Value};
use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::common::{options, schema, url};

const CHILD: &str = "DURAQ_REPORT_IN_CHILD";

/// The store in `s` and the application's pool, with a `receipts` table.
async fn app(s: &str) -> (Arc<PostgresStore>, PgPool) {
    let store = PostgresStore::connect(&url(), options(s)).await.unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&url())
        .await
        .unwrap();
    let create = format!("CREATE TABLE IF NOT EXISTS {s}.receipts (job_id text NOT NULL)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
        .unwrap();
    (Arc::new(store), pool)
}

async fn receipts(pool: &PgPool, s: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {s}.receipts");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .unwrap()
}

/// In one sqlx transaction: a receipt row for the job, then the job's
/// completion with `output`; committed when `commit`.
async fn receipt_and_report(
    store: &PostgresStore,
    pool: &PgPool,
    s: &str,
    ctx: &duraq_core::JobContext,
    commit: bool,
) -> duraq_core::Result<()> {
    let mut tx = pool.begin().await.unwrap();
    let sql = format!("INSERT INTO {s}.receipts (job_id) VALUES ($1)");
    sqlx::query(sqlx::AssertSqlSafe(sql))
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
#[tokio::test]
async fn a_kill_right_after_the_commit_leaves_the_job_completed_once_on_postgres() {
    let s = schema();
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
            "postgres_child_worker_that_dies_after_its_commit",
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
#[tokio::test]
async fn postgres_child_worker_that_dies_after_its_commit() {
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
