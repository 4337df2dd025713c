//! The promises a store keeps on an application's own transaction, written
//! once and run for every database client it supports (sqlx, tokio-postgres,
//! rusqlite, diesel): a job enqueued in the transaction exists exactly when
//! the application's rows do, a refused enqueue leaves the transaction
//! usable, a batch is all or none, an idle worker starts the job only after
//! the commit; and a handler that reports its attempt in its own transaction
//! finishes the job with its rows, or (its lease lost) not at all.
//!
//! A client plugs in by implementing [`App`] (a store and the application's
//! `users` and `receipts` tables, reached through that client) and invoking
//! [`app_client_suite!`](crate::app_client_suite) in an integration test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use duraq_core::{
    EnqueueOptions, EnqueueOutcome, ErrorCode, Job, JobContext, JobStatus, NewJob, Outcome,
    Registry, Result, Store, Worker,
};
use serde_json::{json, Value};

/// An application on its own database client, with a `users (email)` and a
/// `receipts (job_id)` table beside the store's, in the same database.
#[async_trait]
pub trait App: Send + Sync + 'static {
    /// The store, on the same database.
    fn store(&self) -> Arc<dyn Store>;

    /// In one transaction of the client: inserts the first of `emails`,
    /// enqueues `jobs` (one call per job, or all in one batch call when
    /// `batch`), inserts the rest of `emails`, then commits, or rolls back
    /// unless `commit`. Answers each enqueue call in order.
    async fn sign_up(
        &self,
        emails: &[&str],
        jobs: Vec<NewJob>,
        batch: bool,
        commit: bool,
    ) -> Vec<Result<Vec<EnqueueOutcome>>>;

    /// Committed users (with that email, when given).
    async fn users(&self, email: Option<&str>) -> i64;

    /// In one transaction: a receipt row for `ctx`'s job, then `action`
    /// (the attempt's report, or a durable step's record); committed when
    /// `commit` and the store took it, else rolled back.
    async fn receipt_and(&self, ctx: &JobContext, action: InTx, commit: bool) -> Result<()>;

    /// Committed receipt rows.
    async fn receipts(&self) -> i64;
}

/// What [`App::receipt_and`] does after its receipt row, in the same
/// transaction.
#[derive(Clone, Debug)]
pub enum InTx {
    /// The store's `report_in` of the attempt's outcome.
    Report(Outcome),
    /// The store's `record_step_in` of step (name, output).
    Step(String, Value),
}

/// Generous: what works ends long before.
const LONG: Duration = Duration::from_secs(30);

fn welcome(email: &str, opts: EnqueueOptions) -> NewJob {
    NewJob::new("send_welcome", json!([email]), opts).unwrap()
}

fn one(answer: &Result<Vec<EnqueueOutcome>>) -> EnqueueOutcome {
    let outcomes = answer.as_ref().expect("enqueued");
    assert_eq!(outcomes.len(), 1);
    outcomes[0].clone()
}

/// The job once it is finished (the store's own wait), asserted `status`.
async fn wait_status(store: &dyn Store, id: &str, status: JobStatus) -> Job {
    match store.wait_for(id, LONG).await.unwrap() {
        duraq_core::inspect::Waited::Finished(job) if job.status == status => job,
        other => panic!("never {status:?}: {other:?}"),
    }
}

pub async fn a_rollback_leaves_neither_and_a_commit_both(app: Arc<dyn App>) {
    let store = app.store();
    let job = || vec![welcome("ada@example.com", EnqueueOptions::new())];
    let answers = app.sign_up(&["ada@example.com"], job(), false, false).await;
    let rolled_back = one(&answers[0]);
    assert_eq!(app.users(None).await, 0);
    assert_eq!(store.get_job(rolled_back.job_id()).await.unwrap(), None);
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);

    let answers = app.sign_up(&["ada@example.com"], job(), false, true).await;
    let created = one(&answers[0]);
    assert_eq!(app.users(None).await, 1);
    let row = store.get_job(created.job_id()).await.unwrap().unwrap();
    assert_eq!(
        (row.status, row.args),
        (JobStatus::Queued, json!(["ada@example.com"]))
    );
    let snap = store.count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, snap.total), (1, 1));
}

pub async fn a_refused_enqueue_leaves_the_transaction_usable(app: Arc<dyn App>) {
    let key = || EnqueueOptions::new().idempotency_key("signup-ada");
    let jobs = vec![
        welcome("ada@example.com", key()),
        welcome("bob@example.com", key()), // the same key, other args
        welcome("ada@example.com", key()), // the same request again
    ];
    let emails = ["ada@example.com", "bob@example.com"];
    let answers = app.sign_up(&emails, jobs, false, true).await;
    let created = one(&answers[0]);
    let refused = answers[1].as_ref().unwrap_err();
    assert_eq!(refused.code(), ErrorCode::IdempotencyConflict);
    assert_eq!(
        one(&answers[2]),
        EnqueueOutcome::Replayed(created.job_id().to_owned())
    );
    // The write after the refusal committed with the rest.
    assert_eq!(app.users(None).await, 2);
    let store = app.store();
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
    let again = store
        .enqueue(welcome("ada@example.com", key()))
        .await
        .unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(created.job_id().to_owned()));
}

pub async fn a_batch_commits_all_or_none(app: Arc<dyn App>) {
    let jobs = |n: usize| -> Vec<NewJob> {
        (0..n)
            .map(|i| welcome(&format!("{i}@example.com"), EnqueueOptions::new()))
            .collect()
    };
    let answers = app
        .sign_up(&["ada@example.com"], jobs(3), true, false)
        .await;
    assert_eq!(answers[0].as_ref().unwrap().len(), 3);
    assert_eq!(app.store().count_snapshot().await.unwrap().total, 0);

    // 40 jobs: past the size at which a store's own connection copies rows in.
    let answers = app
        .sign_up(&["ada@example.com"], jobs(40), true, true)
        .await;
    assert_eq!(answers[0].as_ref().unwrap().len(), 40);
    let snap = app.store().count_snapshot().await.unwrap();
    assert_eq!((snap.counts.queued, app.users(None).await), (40, 1));
}

/// An idle worker starts the job once the transaction commits, never before:
/// its handler sees the user row the job was enqueued with.
pub async fn an_idle_worker_starts_the_job_after_the_commit(app: Arc<dyn App>) {
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let (h_app, h_seen) = (app.clone(), seen.clone());
    let registry = Registry::new()
        .register_fn("send_welcome", move |_ctx, args: Value| {
            let (app, seen) = (h_app.clone(), h_seen.clone());
            async move {
                let email = args[0].as_str().unwrap_or_default().to_owned();
                let n = app.users(Some(&email)).await;
                seen.lock().unwrap().push(n);
                Ok(())
            }
        })
        .unwrap();
    let store = app.store();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let job = vec![welcome("ada@example.com", EnqueueOptions::new())];
    let answers = app.sign_up(&["ada@example.com"], job, false, true).await;
    wait_status(&*store, one(&answers[0]).job_id(), JobStatus::Completed).await;
    worker.shutdown_and_join().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![1], "ran once, after the commit");
}

/// Starts a worker whose `receipt` handler reports in its own transaction,
/// committing when `commit`, and returns `result` (after its report).
fn receipt_worker(
    app: &Arc<dyn App>,
    commit: bool,
    gate: Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::sync::oneshot::Receiver<()>,
    )>,
    codes: Arc<Mutex<Vec<ErrorCode>>>,
) -> duraq_core::worker::WorkerHandle {
    let gate = Arc::new(Mutex::new(gate));
    let h_app = app.clone();
    let registry = Registry::new()
        .register_fn("receipt", move |ctx, _args: Value| {
            let (app, codes) = (h_app.clone(), codes.clone());
            let gate = gate.lock().unwrap().take();
            async move {
                if let Some((started, go)) = gate {
                    let _ = started.send(());
                    let _ = go.await;
                }
                let output = json!({"receipt": ctx.job_id()});
                let outcome = Outcome::CompletedWith { output };
                if let Err(e) = app.receipt_and(&ctx, InTx::Report(outcome), commit).await {
                    codes.lock().unwrap().push(e.code());
                }
                if commit {
                    Ok(())
                } else {
                    Err(duraq_core::JobError::new("the receipt printer jammed"))
                }
            }
        })
        .unwrap();
    Worker::builder(app.store(), registry)
        .build()
        .unwrap()
        .spawn()
}

fn receipt_job(opts: EnqueueOptions) -> NewJob {
    NewJob::new("receipt", json!([1]), opts).unwrap()
}

/// The handler's transaction reports the job completed with its receipt
/// row; the worker's own report changes nothing and counts no lost lease.
pub async fn a_handler_finishes_its_job_in_its_own_transaction(app: Arc<dyn App>) {
    let store = app.store();
    let id = store
        .enqueue(receipt_job(EnqueueOptions::new()))
        .await
        .unwrap();
    let codes: Arc<Mutex<Vec<ErrorCode>>> = Arc::default();
    let worker = receipt_worker(&app, true, None, codes.clone());
    let job = wait_status(&*store, id.job_id(), JobStatus::Completed).await;
    let report = worker.shutdown_and_join().await.unwrap();
    assert!(
        codes.lock().unwrap().is_empty(),
        "{:?}",
        codes.lock().unwrap()
    );
    assert_eq!(job.output, Some(json!({"receipt": id.job_id()})));
    assert_eq!((job.attempts, app.receipts().await), (1, 1));
    assert_eq!((report.completed, report.lost_leases), (1, 0));
}

/// A rolled-back report leaves nothing; the worker's own report stands.
pub async fn a_rolled_back_report_leaves_the_workers_own_to_stand(app: Arc<dyn App>) {
    let store = app.store();
    let opts = EnqueueOptions::new().max_retries(0);
    let id = store.enqueue(receipt_job(opts)).await.unwrap();
    let worker = receipt_worker(&app, false, None, Arc::default());
    let job = wait_status(&*store, id.job_id(), JobStatus::Failed).await;
    let report = worker.shutdown_and_join().await.unwrap();
    assert_eq!((job.output, app.receipts().await), (None, 0));
    assert_eq!(
        (report.failed, report.completed, report.lost_leases),
        (1, 0, 0)
    );
}

/// An attempt whose job was cancelled while it ran cannot commit its
/// completion: `lease-lost`, and its transaction rolls back.
pub async fn a_lost_lease_cannot_commit_its_completion(app: Arc<dyn App>) {
    let store = app.store();
    let id = store
        .enqueue(receipt_job(EnqueueOptions::new()))
        .await
        .unwrap();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel();
    let codes: Arc<Mutex<Vec<ErrorCode>>> = Arc::default();
    let worker = receipt_worker(&app, true, Some((started_tx, go_rx)), codes.clone());
    started_rx.await.unwrap();
    store.cancel_job(id.job_id()).await.unwrap();
    go_tx.send(()).unwrap();
    // The shutdown drains the running attempt: its handler has reported.
    worker.shutdown_and_join().await.unwrap();
    assert_eq!(*codes.lock().unwrap(), vec![ErrorCode::LeaseLost]);
    assert_eq!(
        app.receipts().await,
        0,
        "rolled back with the refused report"
    );
    let job = store.get_job(id.job_id()).await.unwrap().unwrap();
    assert_eq!((job.status, job.output), (JobStatus::Cancelled, None));
}

/// A step recorded in the handler's transaction is exactly once: the first
/// attempt's transaction rolls back (its receipt and its record go
/// together), the second commits both and then fails, and the third finds
/// the step recorded and writes nothing. One receipt, one record.
pub async fn a_step_in_the_handlers_transaction_commits_with_its_writes(app: Arc<dyn App>) {
    let store = app.store();
    let opts = EnqueueOptions::new().max_retries(3);
    let job = NewJob::new("debit", json!([1]), opts).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_owned();
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (h_app, h_attempts) = (app.clone(), attempts.clone());
    let registry = Registry::new()
        .register_fn("debit", move |ctx, _args: Value| {
            let (app, attempts) = (h_app.clone(), h_attempts.clone());
            async move {
                let attempt = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let again = || duraq_core::JobError::new("then it fails").retry_in(Duration::ZERO);
                if let Some(balance) = ctx.recorded::<i64>("debit").await? {
                    return duraq_core::JobResult::output(&balance);
                }
                let step = InTx::Step("debit".into(), json!(90));
                app.receipt_and(&ctx, step, attempt == 1).await.unwrap();
                Err(again())
            }
        })
        .unwrap();
    let worker = Worker::builder(store.clone(), registry)
        .build()
        .unwrap()
        .spawn();
    let job = wait_status(&*store, &id, JobStatus::Completed).await;
    worker.shutdown_and_join().await.unwrap();
    assert_eq!(job.output, Some(json!(90)));
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(app.receipts().await, 1, "written once, with its record");
    let steps = store.job_steps(&id).await.unwrap();
    let recorded: Vec<(&str, i64)> = steps.iter().map(|s| (s.name.as_str(), s.attempt)).collect();
    assert_eq!(recorded, [("debit", 2)]);
}

/// Expands to one `#[test]` per case of [`crate::app_clients`] in `mod
/// $name`, each on its own runtime with a fresh [`App`] from `$app` (an
/// async expression).
#[macro_export]
macro_rules! app_client_suite {
    ($name:ident, $app:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::__app_client_cases! { $app;
                a_rollback_leaves_neither_and_a_commit_both,
                a_refused_enqueue_leaves_the_transaction_usable,
                a_batch_commits_all_or_none,
                an_idle_worker_starts_the_job_after_the_commit,
                a_handler_finishes_its_job_in_its_own_transaction,
                a_rolled_back_report_leaves_the_workers_own_to_stand,
                a_lost_lease_cannot_commit_its_completion,
                a_step_in_the_handlers_transaction_commits_with_its_writes,
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __app_client_cases {
    ($app:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("tokio runtime")
                    .block_on(async {
                        let app: std::sync::Arc<dyn $crate::app_clients::App> = $app.await;
                        $crate::app_clients::$case(app).await;
                    });
            }
        )*
    };
}
