//! A worker process for the durable-execution kill test
//! (`tests/tests/durable_processes.rs`): opens the store named by its
//! arguments, runs a worker with the handler `saga`, says `ready`, and runs
//! until its stdin closes (or it is killed).
//!
//! Usage: `duraq-durable-proc <sqlite-path | postgres-url> <schema | -> <log>`.
//!
//! `saga` (args `[n]`) runs step `a`, step `b`, waits for signal `go`, runs
//! step `c`, spawns a `leaf` child (args `[n]`, output `2n`) and waits for
//! it, writes step `d` exactly once (a row of `app_ledger` and the step's
//! record in one transaction of the store's own client: rusqlite or
//! tokio-postgres), and completes with what each returned. Each step's
//! closure and each leaf appends `run-<step> <job> <handoff>` to the log
//! before its work, and an attempt that reaches the end appends
//! `end <job> <handoff> <output>`: the test reads, outside the store, which
//! attempts ran which closure and which attempts finished. Each line is one
//! `write` to a file opened for appending, so lines from several processes
//! never interleave.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::{
    EnqueueOptions, JobContext, JobError, JobResult, NewJob, Registry, Store, Worker,
};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

/// The log, shared by every attempt of this process.
type Log = Arc<Mutex<File>>;

fn append(log: &Log, line: String) {
    let mut file = log.lock().unwrap();
    file.write_all(format!("{line}\n").as_bytes())
        .expect("append to the log");
}

async fn step(ctx: &JobContext, log: &Log, name: &str) -> Result<Value, JobError> {
    let handoff = ctx.lease().handoff_id;
    ctx.step(name, || async {
        append(log, format!("run-{name} {} {handoff}", ctx.job_id()));
        // Work that takes a moment, so that kills land inside steps too.
        tokio::time::sleep(Duration::from_millis(2)).await;
        Ok(json!({ "by": handoff }))
    })
    .await
}

async fn saga(ctx: JobContext, log: Log, app: &App) -> Result<JobResult, JobError> {
    let a = step(&ctx, &log, "a").await?;
    let b = step(&ctx, &log, "b").await?;
    let minutes = Duration::from_secs(600);
    let Some(signal) = ctx.wait_for_signal::<Value>("go", minutes).await? else {
        return Err(JobError::new("no signal within ten minutes").discard());
    };
    let c = step(&ctx, &log, "c").await?;
    let n = ctx.job().args[0].clone();
    let leaf = NewJob::new("leaf", json!([n]), EnqueueOptions::new().max_retries(50))
        .map_err(JobError::new)?;
    let child: Value = ctx.spawn_and_wait("leaf", leaf).await?.into_output()?;
    let d = exactly_once(&ctx, app).await?;
    let output = json!({ "a": a, "b": b, "c": c, "signal": signal, "child": child, "d": d });
    append(
        &log,
        format!("end {} {} {output}", ctx.job_id(), ctx.lease().handoff_id),
    );
    Ok(JobResult::Output(output))
}

/// The store, and the application's own connection to its database.
enum App {
    Sqlite(Arc<SqliteStore>, Mutex<rusqlite::Connection>),
    Postgres(
        Arc<PostgresStore>,
        tokio::sync::Mutex<tokio_postgres::Client>,
        String,
    ),
}

/// Step `d`, exactly once: a row of `app_ledger` naming this attempt and
/// the step's record commit together, or neither does.
async fn exactly_once(ctx: &JobContext, app: &App) -> Result<Value, JobError> {
    if let Some(done) = ctx.recorded::<Value>("d").await? {
        return Ok(done);
    }
    let handoff = ctx.lease().handoff_id;
    let by = json!({ "by": handoff });
    let insert = "INSERT INTO app_ledger (job_id, handoff_id) VALUES";
    match app {
        App::Sqlite(store, conn) => {
            let mut conn = conn.lock().unwrap();
            let tx = conn.transaction().map_err(JobError::new)?;
            tx.execute(&format!("{insert} (?1, ?2)"), [ctx.job_id(), &handoff])
                .map_err(JobError::new)?;
            store
                .record_step_in_transaction(&tx, ctx, "d", &by)
                .map_err(JobError::new)?;
            tx.commit().map_err(JobError::new)?;
        }
        App::Postgres(store, client, schema) => {
            let mut client = client.lock().await;
            let tx = client.transaction().await.map_err(JobError::new)?;
            let sql =
                format!("{insert} ($1, $2)").replace("app_ledger", &format!("{schema}.app_ledger"));
            tx.execute(&sql, &[&ctx.job_id(), &handoff])
                .await
                .map_err(JobError::new)?;
            store
                .record_step_in(&tx, ctx, "d", &by)
                .await
                .map_err(JobError::new)?;
            tx.commit().await.map_err(JobError::new)?;
        }
    }
    Ok(by)
}

async fn open(target: &str, schema: &str) -> (Arc<dyn Store>, App) {
    if target.starts_with("postgres") {
        let options = PostgresOptions {
            schema: Some(schema.to_owned()),
            pool_size: 4,
            ..PostgresOptions::default()
        };
        let store = Arc::new(
            PostgresStore::connect(target, options)
                .await
                .expect("connect"),
        );
        let (client, connection) = tokio_postgres::connect(target, tokio_postgres::NoTls)
            .await
            .expect("the application's connection");
        tokio::spawn(connection);
        let app = App::Postgres(
            store.clone(),
            tokio::sync::Mutex::new(client),
            schema.to_owned(),
        );
        (store, app)
    } else {
        let store = Arc::new(SqliteStore::open(target, SqliteOptions::default()).expect("open"));
        let conn = rusqlite::Connection::open(target).expect("the application's connection");
        conn.busy_timeout(Duration::from_secs(30)).unwrap();
        (store.clone(), App::Sqlite(store, Mutex::new(conn)))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, target, schema, log] = &args[..] else {
        eprintln!("usage: duraq-durable-proc <sqlite-path | postgres-url> <schema | -> <log>");
        std::process::exit(2);
    };
    let log: Log = Arc::new(Mutex::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the log"),
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (store, app) = open(target, schema).await;
        let app = Arc::new(app);
        let leaf_log = log.clone();
        let registry = Registry::new()
            .register_fn("saga", move |ctx, _args| {
                let (log, app) = (log.clone(), app.clone());
                async move { saga(ctx, log, &app).await }
            })
            .expect("registry")
            .register_fn("leaf", move |ctx: JobContext, args: Value| {
                let log = leaf_log.clone();
                async move {
                    let handoff = ctx.lease().handoff_id;
                    append(&log, format!("run-leaf {} {handoff}", ctx.job_id()));
                    JobResult::output(&(args[0].as_i64().unwrap_or(0) * 2))
                }
            })
            .expect("registry");
        // A killed process's leases are recovered within a few seconds.
        let worker = Worker::builder(store, registry)
            .concurrency(4)
            .heartbeat_interval(Duration::from_millis(300))
            .stale_after(Duration::from_secs(2))
            .recovery_interval(Duration::from_millis(500))
            .build()
            .expect("worker");
        println!("ready");
        std::io::stdout().flush().unwrap();
        let stdin_closed =
            tokio::task::spawn_blocking(|| for _ in std::io::stdin().lock().lines() {});
        worker
            .run(async {
                let _ = stdin_closed.await;
            })
            .await
            .expect("worker run");
    });
}
