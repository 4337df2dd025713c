//! A worker process for the durable-execution kill test
//! (`tests/tests/durable_processes.rs`): opens the store named by its
//! arguments, runs a worker with the handler `saga`, says `ready`, and runs
//! until its stdin closes (or it is killed).
//!
//! Usage: `duraq-durable-proc <sqlite-path | postgres-url> <schema | -> <log>`.
//!
//! `saga` (args `[n]`) runs step `a`, step `b`, waits for signal `go`, runs
//! step `c`, and completes with what each returned. Each step's closure
//! appends `run-<step> <job> <handoff>` to the log before its work, and an
//! attempt that reaches the end appends `end <job> <handoff> <output>`: the
//! test reads, outside the store, which attempts ran which closure and
//! which attempts finished. Each line is one `write` to a file opened for
//! appending, so lines from several processes never interleave.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duraq_core::{JobContext, JobError, JobResult, Registry, Store, Worker};
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

async fn saga(ctx: JobContext, log: Log) -> Result<JobResult, JobError> {
    let a = step(&ctx, &log, "a").await?;
    let b = step(&ctx, &log, "b").await?;
    let minutes = Duration::from_secs(600);
    let Some(signal) = ctx.wait_for_signal::<Value>("go", minutes).await? else {
        return Err(JobError::new("no signal within ten minutes").discard());
    };
    let c = step(&ctx, &log, "c").await?;
    let output = json!({ "a": a, "b": b, "c": c, "signal": signal });
    append(
        &log,
        format!("end {} {} {output}", ctx.job_id(), ctx.lease().handoff_id),
    );
    Ok(JobResult::Output(output))
}

async fn open(target: &str, schema: &str) -> Arc<dyn Store> {
    if target.starts_with("postgres") {
        let options = PostgresOptions {
            schema: Some(schema.to_owned()),
            pool_size: 4,
            ..PostgresOptions::default()
        };
        Arc::new(
            PostgresStore::connect(target, options)
                .await
                .expect("connect"),
        )
    } else {
        Arc::new(SqliteStore::open(target, SqliteOptions::default()).expect("open"))
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
        let store = open(target, schema).await;
        let registry = Registry::new()
            .register_fn("saga", move |ctx, _args| saga(ctx, log.clone()))
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
