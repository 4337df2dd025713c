//! Durable execution under SIGKILL, with real worker processes sharing one
//! database (`docs/durable.md`), on SQLite and on PostgreSQL (when
//! `DATABASE_URL` names one; each run in a fresh schema).
//!
//! 1,000 jobs of a program of three steps, a signal, a spawned child and an
//! exactly-once step (`duraq-durable-proc`, handler `saga`) run on three
//! worker processes while the test delivers every job's signal and SIGKILLs
//! a worker (starting another) each time the log has grown by a few hundred
//! lines, six times over. Then, read outside the store from the log the
//! closures append to and from the application's own table:
//!
//! - every job completed, with its own signal's payload (none lost or
//!   crossed) and its own child's output, and the counts are exact: one
//!   child per job, enqueued once;
//! - the exactly-once step wrote its application row once per job, by the
//!   attempt its record names;
//! - a step's closure ran again only in place of an attempt that died before
//!   recording it: every run of a step but the recorded one belongs to an
//!   attempt that never finished, and there are at most as many such runs as
//!   attempts the kills cut short;
//! - every attempt that finished a job saw the same step outputs and signal:
//!   replays never change their mind.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use duraq_core::{EnqueueOptions, NewJob, Store};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

const JOBS: usize = 1_000;
const WORKERS: usize = 3;
const KILLS: usize = 6;
/// Each worker's slots (`duraq-durable-proc`): the most attempts one kill cuts short.
const SLOTS: usize = 4;
/// Turns a hang into a failure; a correct run takes a fraction of it.
const PATIENCE: Duration = Duration::from_secs(240);
/// The application's table the exactly-once step writes to.
const LEDGER: &str = "CREATE TABLE app_ledger (job_id text NOT NULL, handoff_id text NOT NULL)";

struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
}

/// Starts a worker process and returns once it said `ready`.
fn spawn(target: &str, schema: &str, log: &Path) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraq-durable-proc"))
        .arg(target)
        .arg(schema)
        .arg(log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn duraq-durable-proc");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .expect("read ready");
    assert_eq!(ready.trim(), "ready");
    let stdin = child.stdin.take();
    Proc { child, stdin }
}

fn log_lines(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().map(str::to_owned).collect()
}

/// Polls `f` until it answers or [`PATIENCE`] runs out.
fn wait_until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(started.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The application's table of the exactly-once step: (job, handoff) rows.
type Ledger<'a> = &'a dyn Fn() -> Vec<(String, String)>;

fn durable_jobs_survive_kills(
    target: &str,
    schema: &str,
    store: Arc<dyn Store>,
    log: PathBuf,
    ledger: Ledger<'_>,
) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ids: Vec<String> = rt.block_on(async {
        let opts = EnqueueOptions::new().max_retries(50);
        let jobs = (0..JOBS)
            .map(|n| NewJob::new("saga", json!([n]), opts.clone()).unwrap())
            .collect();
        let outcomes = store.enqueue_batch(jobs).await.unwrap();
        outcomes.iter().map(|o| o.job_id().to_owned()).collect()
    });
    let mut workers: Vec<Proc> = (0..WORKERS).map(|_| spawn(target, schema, &log)).collect();
    // Signals go out while workers run and die: some before the wait, some
    // to pending jobs, some while the attempt that will wait still runs.
    let sender = {
        let (store, ids) = (store.clone(), ids.clone());
        rt.spawn(async move {
            for k in 0..JOBS {
                let n = (k * 7) % JOBS;
                let sent = store
                    .signal(&ids[n], "go", json!({ "n": n }))
                    .await
                    .unwrap();
                assert!(!sent.replayed);
            }
        })
    };
    let mut seen = 0;
    for kill in 0..KILLS {
        seen = wait_until("the log to grow", || {
            let now = log_lines(&log).len();
            (now >= seen + 300).then_some(now)
        });
        let victim = &mut workers[kill % WORKERS];
        victim.child.kill().expect("SIGKILL a worker");
        victim.child.wait().unwrap();
        workers[kill % WORKERS] = spawn(target, schema, &log);
    }
    rt.block_on(sender).unwrap();
    wait_until("every job and child to complete", || {
        let counts = rt.block_on(store.count_snapshot()).unwrap().counts;
        (counts.completed == 2 * JOBS as i64).then_some(())
    });
    for mut w in workers {
        drop(w.stdin.take());
        assert!(w.child.wait().unwrap().success());
    }
    let counts = rt.block_on(store.count_snapshot()).unwrap();
    assert_eq!(
        (counts.total, counts.counts.completed),
        (2 * JOBS as i64, 2 * JOBS as i64),
        "one child per job"
    );
    let mut written: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (job, handoff) in ledger() {
        written.entry(job).or_default().push(handoff);
    }

    // Who ran what, from the log.
    let mut runs: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut ends: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in log_lines(&log) {
        let mut parts = line.splitn(4, ' ');
        let (kind, job, handoff) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        if kind == "end" {
            finished.insert(handoff.to_owned());
            ends.entry(job.to_owned())
                .or_default()
                .insert(parts.next().unwrap().to_owned());
        } else {
            let step = kind.trim_start_matches("run-").to_owned();
            runs.entry((job.to_owned(), step))
                .or_default()
                .push(handoff.to_owned());
        }
    }
    let mut again = 0;
    for (n, id) in ids.iter().enumerate() {
        let job = rt.block_on(store.get_job(id)).unwrap().expect("the job");
        let output = job.output.expect("an output");
        assert_eq!(output["signal"], json!({ "n": n }), "job {id}'s own signal");
        let seen_by: Vec<&String> = ends[id].iter().collect();
        assert_eq!(
            seen_by.len(),
            1,
            "every finished attempt of {id} saw the same: {seen_by:?}"
        );
        let records = rt.block_on(store.job_steps(id)).unwrap();
        let spawn = records.iter().find(|r| r.name == "duraq.spawn.leaf");
        let child_id = spawn.expect("the spawn recorded").output.as_str().unwrap();
        let child = rt
            .block_on(store.get_job(child_id))
            .unwrap()
            .expect("the child");
        assert_eq!(child.parent_id.as_deref(), Some(id.as_str()));
        assert_eq!(output["child"], json!(2 * n), "{id}'s own child's output");
        assert_eq!(child.output, Some(json!(2 * n)));
        let d = records.iter().find(|r| r.name == "d").expect("d recorded");
        assert_eq!(
            written.get(id).map(Vec::as_slice),
            Some([d.output["by"].as_str().unwrap().to_owned()].as_slice()),
            "{id}'s application row, written once by the attempt its record names"
        );
        assert_eq!(output["d"], d.output);
        for step in ["a", "b", "c"] {
            let record = records.iter().find(|r| r.name == step).expect("recorded");
            let by = record.output["by"].as_str().unwrap();
            assert_eq!(output[step]["by"], by);
            let ran = &runs[&(id.clone(), step.to_owned())];
            assert!(
                ran.iter().any(|h| h == by),
                "the recorded run of {id}/{step} ran"
            );
            for other in ran.iter().filter(|h| *h != by) {
                assert!(
                    !finished.contains(other),
                    "{id}/{step} ran again in attempt {other}, which finished"
                );
                again += 1;
            }
        }
    }
    eprintln!("{KILLS} kills; steps run again in place of a killed attempt: {again}");
    assert!(
        again <= KILLS * SLOTS,
        "{again} runs again for {KILLS} kills"
    );
}

#[test]
fn durable_jobs_survive_kills_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("duraq.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db, SqliteOptions::default()).unwrap());
    let target = db.to_str().unwrap().to_owned();
    let app = rusqlite::Connection::open(&db).unwrap();
    app.execute_batch(LEDGER).unwrap();
    let ledger = || {
        let mut read = app
            .prepare("SELECT job_id, handoff_id FROM app_ledger")
            .unwrap();
        let rows = read.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap()
    };
    durable_jobs_survive_kills(&target, "-", store, dir.path().join("log"), &ledger);
}

#[test]
fn durable_jobs_survive_kills_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: the PostgreSQL run is skipped");
        return;
    };
    let schema = format!("duraq_kill_{}", std::process::id());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let options = PostgresOptions {
        schema: Some(schema.clone()),
        pool_size: 4,
        ..PostgresOptions::default()
    };
    let store: Arc<dyn Store> =
        Arc::new(rt.block_on(PostgresStore::connect(&url, options)).unwrap());
    let (app, connection) = rt
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(connection);
    let create = LEDGER.replace("app_ledger", &format!("{schema}.app_ledger"));
    rt.block_on(app.batch_execute(&create)).unwrap();
    let read = format!("SELECT job_id, handoff_id FROM {schema}.app_ledger");
    let ledger = || {
        let rows = rt.block_on(app.query(&read, &[])).unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let dir = tempfile::tempdir().unwrap();
    durable_jobs_survive_kills(&url, &schema, store, dir.path().join("log"), &ledger);
}
