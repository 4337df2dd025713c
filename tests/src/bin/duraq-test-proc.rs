//! A helper process for the multi-process tests: opens one SQLite store, says
//! `ready` on stdout, waits for a line on stdin (the start barrier the test opens
//! for every process at once), performs one action and prints its result as one
//! JSON line.
//!
//! Usage: `duraq-test-proc <db-path> <action> [arg]`, where action is
//! - `replace <key> <n>`: `replace_scheduled(key, job "j" args [n])`;
//! - `enqueue-idem <key>`: an idempotent enqueue of job "j" args `[1]` under `key`;
//! - `enqueue-many <n>`: `n` plain enqueues, one call each;
//! - `claim-and-hang <name>`: claims one job, prints it, then blocks on stdin
//!   until killed (the test SIGKILLs it mid-job);
//! - `periodic <period-ms> <run-ms>`: runs a worker declaring the periodic job
//!   `beat` (job `tick`, every period) for `run-ms` of real time, then prints how
//!   many ticks this process created (the rest were replays);
//! - `work`: runs a worker with a handler for job `p` (args `[ms]`: sleeps that
//!   long, then succeeds) until the next line on stdin, then prints its report.

use std::io::{BufRead, Write};

use std::sync::Arc;
use std::time::Duration;

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob, PeriodicJob, Registry, ScheduleKey, Worker};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: duraq-test-proc <db-path> <action> [arg] [arg]");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let code = rt.block_on(run(&args));
    std::process::exit(code);
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .expect("stdout");
}

fn wait_for_line() -> bool {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
}

async fn run(args: &[String]) -> i32 {
    let store = match SqliteStore::open(&args[1], SqliteOptions::default()) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("open failed: {e:?}");
            return 1;
        }
    };
    say("ready");
    if !wait_for_line() {
        eprintln!("no start signal");
        return 1;
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let result = match args[2].as_str() {
        "replace" => {
            let key = ScheduleKey::new(arg(3)).expect("key");
            let n: i64 = arg(4).parse().expect("n");
            let job = NewJob::new("j", json!([n]), EnqueueOptions::new()).expect("job");
            store
                .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
                .await
                .map(|o| serde_json::to_value(o).unwrap())
        }
        "enqueue-idem" => {
            let job = NewJob::new(
                "j",
                json!([1]),
                EnqueueOptions::new().idempotency_key(arg(3)),
            )
            .expect("job");
            store
                .enqueue(job)
                .await
                .map(|o| serde_json::to_value(o).unwrap())
        }
        "enqueue-many" => {
            let n: usize = arg(3).parse().expect("n");
            let mut ids = Vec::new();
            for i in 0..n {
                let job = NewJob::new("j", json!([i]), EnqueueOptions::new()).expect("job");
                match store.enqueue(job).await {
                    Ok(out) => ids.push(out.job_id().to_owned()),
                    Err(e) => {
                        eprintln!("enqueue failed: {e:?}");
                        return 1;
                    }
                }
            }
            Ok(json!(ids))
        }
        "claim-and-hang" => {
            let req = ClaimRequest {
                worker_id: format!("proc-{}", std::process::id()),
                job_names: vec![arg(3)],
                limit: 1,
                ..ClaimRequest::default()
            };
            match store.claim(&req).await {
                Ok(jobs) => {
                    say(&serde_json::to_string(&jobs).unwrap());
                    wait_for_line();
                    return 3; // Only reached if the test did not kill us.
                }
                Err(e) => Err(e),
            }
        }
        "periodic" => {
            let period: u64 = arg(3).parse().expect("period ms");
            let run_for: u64 = arg(4).parse().expect("run ms");
            let store: Arc<dyn Store> = Arc::new(store);
            let registry = Registry::new()
                .register_fn("tick", |_ctx, _args| async { Ok(()) })
                .expect("registry");
            let beat = PeriodicJob::every("beat", Duration::from_millis(period), "tick")
                .expect("periodic");
            let worker = Worker::builder(store, registry)
                .periodic(beat)
                .build()
                .expect("worker");
            // The run time is the workload: the worker must keep enqueuing ticks.
            let report = worker
                .run(tokio::time::sleep(Duration::from_millis(run_for)))
                .await
                .expect("worker run");
            Ok(json!({"created": report.periodic_enqueued}))
        }
        "work" => {
            let store: Arc<dyn Store> = Arc::new(store);
            let registry = Registry::new()
                .register_fn("p", |_ctx, args: serde_json::Value| async move {
                    let ms = args[0].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(())
                })
                .expect("registry");
            let worker = Worker::builder(store, registry).build().expect("worker");
            let stop = tokio::task::spawn_blocking(wait_for_line);
            let report = worker
                .run(async {
                    let _ = stop.await;
                })
                .await
                .expect("worker run");
            Ok(json!({"completed": report.completed}))
        }
        other => {
            eprintln!("unknown action {other}");
            return 2;
        }
    };
    match result {
        Ok(value) => {
            say(&value.to_string());
            0
        }
        Err(e) => {
            eprintln!("error[{}]: {e}", e.code());
            1
        }
    }
}
