//! A handler that finishes its job in its own sqlx transaction
//! (`PostgresStore::report_in`): the job's new state commits with the
//! handler's business row or not at all, fenced by the attempt's lease, and
//! survives a SIGKILL right after the commit. The SIGKILLed worker is this
//! test binary re-run with `DURAQ_REPORT_IN_CHILD=<schema>`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, ErrorCode, Job, JobStatus, NewJob, Outcome, Registry, Worker};
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

async fn wait_status(store: &PostgresStore, id: &str, status: JobStatus) -> Job {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = store.get_job(id).await.unwrap().unwrap();
        if job.status == status {
            return job;
        }
        assert!(Instant::now() < deadline, "never {status:?}: {job:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn receipt_job() -> NewJob {
    NewJob::new("receipt", json!([1]), EnqueueOptions::new()).unwrap()
}

#[tokio::test]
async fn a_handler_completes_its_job_in_its_own_transaction() {
    let s = schema();
    let (store, pool) = app(&s).await;
    let (h_store, h_pool, h_s) = (store.clone(), pool.clone(), s.clone());
    let registry = Registry::new()
        .register_fn("receipt", move |ctx, _args: Value| {
            let (store, pool, s) = (h_store.clone(), h_pool.clone(), h_s.clone());
            async move {
                receipt_and_report(&store, &pool, &s, &ctx, true).await?;
                Ok(())
            }
        })
        .unwrap();
    let id = store
        .enqueue(receipt_job())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let job = wait_status(&store, &id, JobStatus::Completed).await;
    let report = worker.shutdown_and_join().await.unwrap();
    assert_eq!(
        job.output,
        Some(json!({"receipt": id})),
        "the transaction's outcome"
    );
    assert_eq!(receipts(&pool, &s).await, 1);
    // The worker's own report found the lease gone and changed nothing; it
    // counts the attempt as the transaction reported it.
    assert_eq!((report.completed, report.lost_leases), (1, 0));
    assert_eq!(job.attempts, 1);
}

#[tokio::test]
async fn a_rolled_back_report_leaves_the_workers_own_to_stand() {
    let s = schema();
    let (store, pool) = app(&s).await;
    let (h_store, h_pool, h_s) = (store.clone(), pool.clone(), s.clone());
    let registry = Registry::new()
        .register_fn("receipt", move |ctx, _args: Value| {
            let (store, pool, s) = (h_store.clone(), h_pool.clone(), h_s.clone());
            async move {
                receipt_and_report(&store, &pool, &s, &ctx, false).await?;
                Err::<(), _>(duraq_core::JobError::new("the receipt printer jammed"))
            }
        })
        .unwrap();
    let id = store
        .enqueue(NewJob::new("receipt", json!([1]), EnqueueOptions::new().max_retries(0)).unwrap())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let job = wait_status(&store, &id, JobStatus::Failed).await;
    let report = worker.shutdown_and_join().await.unwrap();
    assert_eq!(job.output, None);
    assert_eq!(receipts(&pool, &s).await, 0);
    assert_eq!(
        (report.failed, report.completed, report.lost_leases),
        (1, 0, 0)
    );
}

/// An attempt whose job was cancelled while it ran cannot commit its
/// completion: `lease-lost`, and the handler rolls its transaction back.
#[tokio::test]
async fn a_lost_lease_cannot_commit_its_completion() {
    let s = schema();
    let (store, pool) = app(&s).await;
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let gates = Arc::new(Mutex::new((Some(started_tx), Some(go_rx))));
    let codes: Arc<Mutex<Vec<ErrorCode>>> = Arc::default();
    let (h_store, h_pool, h_s, h_codes) = (store.clone(), pool.clone(), s.clone(), codes.clone());
    let registry = Registry::new()
        .register_fn("receipt", move |ctx, _args: Value| {
            let (store, pool, s, codes) = (
                h_store.clone(),
                h_pool.clone(),
                h_s.clone(),
                h_codes.clone(),
            );
            let (started, go) = {
                let mut gates = gates.lock().unwrap();
                (gates.0.take(), gates.1.take())
            };
            async move {
                if let (Some(started), Some(go)) = (started, go) {
                    let _ = started.send(());
                    let _ = go.await;
                }
                if let Err(e) = receipt_and_report(&store, &pool, &s, &ctx, true).await {
                    codes.lock().unwrap().push(e.code());
                }
                Ok(())
            }
        })
        .unwrap();
    let id = store
        .enqueue(receipt_job())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    started_rx.await.unwrap();
    store.cancel_job(&id).await.unwrap();
    go_tx.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while codes.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the handler never reported");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown_and_join().await.unwrap();
    assert_eq!(*codes.lock().unwrap(), vec![ErrorCode::LeaseLost]);
    assert_eq!(
        receipts(&pool, &s).await,
        0,
        "rolled back with the refused report"
    );
    let job = store.get_job(&id).await.unwrap().unwrap();
    assert_eq!((job.status, job.output), (JobStatus::Cancelled, None));
}

/// A worker process SIGKILLed right after its handler's transaction
/// committed: the job is completed once, the receipt written once, and a
/// worker started afterwards runs nothing again.
#[tokio::test]
async fn a_kill_right_after_the_commit_leaves_the_job_completed_once() {
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
#[tokio::test]
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
