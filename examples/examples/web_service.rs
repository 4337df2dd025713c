//! An axum + sqlx web service that enqueues a typed job inside its own
//! database transaction and runs its worker in the same process.
//!
//! `POST /signup` inserts a user and enqueues `SendWelcome` in one sqlx
//! transaction on SQLite (`store.enqueue_in(&mut *tx, job)`, feature `sqlx` of
//! `duraq-store-sqlite`): the job exists exactly when the user does. A request
//! that fails validation after both writes rolls back, and takes its job with
//! it. The example drives two requests itself, waits for the welcome job to
//! complete, then shuts the server and the worker down gracefully. On
//! PostgreSQL the handler is the same with `sqlx::PgPool` and
//! `duraq-store-postgres` (docs/transactions.md).
//!
//! Run: `cargo run -p duraq-examples --example web_service`

use std::future::IntoFuture;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{routing::post, Json, Router};
use duraq_core::inspect::JobFilter;
use duraq_core::prelude::*;
use duraq_core::worker::WorkerEvent;
use duraq_core::{JobArgs, JobContext, JobError, JobHandler, JobResult, Registry, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use tracing_subscriber::EnvFilter;

#[derive(Serialize, Deserialize)]
struct SendWelcome {
    user_id: i64,
}
impl JobArgs for SendWelcome {
    const NAME: &'static str = "send_welcome";
}

struct WelcomeMailer;
#[duraq_core::async_trait]
impl JobHandler for WelcomeMailer {
    type Args = SendWelcome;
    async fn perform(&self, _ctx: &JobContext, args: SendWelcome) -> Result<JobResult, JobError> {
        println!("worker: sent the welcome mail of user {}", args.user_id);
        Ok(JobResult::Completed)
    }
}

#[derive(Clone)]
struct App {
    store: SqliteStore, // its own connections, for the worker and inspection
    pool: SqlitePool,   // the application's; its tables live in the same file
}

#[derive(Deserialize)]
struct Signup {
    email: String,
    accepted_terms: bool,
}

/// Inserts the user and enqueues its welcome job in one transaction.
async fn signup(State(app): State<App>, Json(form): Json<Signup>) -> (StatusCode, Json<Value>) {
    match sign_up(&app, &form).await {
        Ok(body) => (StatusCode::CREATED, Json(body)),
        Err(error) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "error": error.to_string() })),
        ),
    }
}

async fn sign_up(app: &App, form: &Signup) -> Result<Value, Box<dyn std::error::Error>> {
    // IMMEDIATE: take the file's write lock up front, as the store's own writer does.
    let mut tx = app.pool.begin_with("BEGIN IMMEDIATE").await?;
    let user_id = sqlx::query("INSERT INTO users (email) VALUES (?1)")
        .bind(&form.email)
        .execute(&mut *tx)
        .await?
        .last_insert_rowid();
    let job = SendWelcome { user_id }.job()?;
    let job_id = app
        .store
        .enqueue_in(&mut *tx, job)
        .await?
        .job_id()
        .to_owned();
    // A check that fails after both writes: returning drops `tx`, which
    // rolls back the user *and* the job.
    if !form.accepted_terms {
        return Err(format!("{} did not accept the terms", form.email).into());
    }
    tx.commit().await?; // the user and its job, together
    Ok(json!({ "user_id": user_id, "job_id": job_id }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr (`RUST_LOG` filters, `info` by default): a failed attempt is a warning with the job, the attempt and the error.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("app.db");
    let store = SqliteStore::open(&db, SqliteOptions::default())?; // creates duraq's tables
    let pool = SqlitePool::connect_with(SqliteConnectOptions::new().filename(&db)).await?;
    sqlx::query("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)")
        .execute(&pool)
        .await?;

    // One shutdown signal for the server and the worker: Ctrl-C, or the end of
    // this example's own requests.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shutdown = move || {
        let mut stopped = stopped.clone();
        async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = stopped.wait_for(|s| *s) => {}
            }
        }
    };

    // The worker, in this process.
    let jobs: Arc<dyn Store> = Arc::new(store.clone());
    let worker = Worker::builder(jobs.clone(), Registry::new().register(WelcomeMailer)?).build()?;
    let mut events = worker.subscribe();
    let worker = tokio::spawn(worker.run(shutdown()));

    // The web service.
    let app = Router::new()
        .route("/signup", post(signup))
        .with_state(App {
            store,
            pool: pool.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/signup", listener.local_addr()?);
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .into_future(),
    );

    // Two requests: one commits, one fails validation after its writes.
    let http = reqwest::Client::new();
    let mut welcome_job = String::new();
    for (email, terms) in [("ada@example.com", true), ("bob@example.com", false)] {
        let res = http
            .post(&url)
            .json(&json!({ "email": email, "accepted_terms": terms }))
            .send()
            .await?;
        let (status, body) = (res.status(), res.json::<Value>().await?);
        println!("POST /signup {email}: {status} {body}");
        if status == StatusCode::CREATED {
            welcome_job = body["job_id"].as_str().unwrap_or_default().to_owned();
        }
    }

    // The committed job runs on this process's worker.
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(WorkerEvent::Finished(f)) = events.recv().await {
                if f.job_id == welcome_job {
                    break;
                }
            }
        }
    })
    .await?;
    let job = jobs
        .get_job(&welcome_job)
        .await?
        .ok_or("the welcome job is gone")?;
    println!("job {} is {}", job.id, job.status.as_str());

    // The rolled-back request left neither a user nor a job.
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&pool)
        .await?;
    let filter = JobFilter {
        job_name: Some("send_welcome".into()),
        ..JobFilter::default()
    };
    let welcome_jobs = jobs.search_jobs(&filter).await?.jobs.len();
    assert_eq!((users, welcome_jobs), (1, 1));
    println!("after both requests: {users} user, {welcome_jobs} send_welcome job (the rollback took its job with it)");

    // Graceful shutdown: the server stops accepting and finishes its requests,
    // the worker stops claiming and drains its running jobs.
    stop.send_replace(true);
    server.await??;
    let report = worker.await??;
    println!(
        "shut down: the worker completed {} job(s)",
        report.completed
    );
    Ok(())
}
