//! Faults on PostgreSQL, with real processes: a fan-out of one root
//! job into 3,000 dependents, run by three `duraq worker` processes, while the
//! server is crash-restarted (`pg_ctl restart -m immediate`) twice: once in the
//! middle of the transaction that completes the root and releases its
//! dependents, once while the dependents run. The workers reconnect on their
//! own, and afterwards no dependent was released twice, none was lost, none was
//! released before the root completed, and the counts are exact.
//!
//! The test restarts its server, so it cannot use the shared one behind
//! `DATABASE_URL` (other tests run against it meanwhile): it starts its own
//! throwaway server ([`TempServer`], as `cargo xtask` does in `xtask/src/pg.rs`)
//! on a free port with a private socket directory, and removes it afterwards,
//! also when the test panics or its process is killed. It runs wherever the
//! server binaries are installed (`pg_config --bindir`, `/usr/lib/postgresql/*/bin`,
//! `PATH`); without them it says so and passes, except under `CI=true`, where
//! it fails. `cargo xtask test-all --skip-postgres` filters it out by name.
//!
//! The test lives in `duraq-cli` rather than next to the SQLite fan-in test in
//! `duraq-tests` because it runs the real `duraq` program, whose path cargo
//! gives only to this package's tests (`CARGO_BIN_EXE_duraq`), built fresh.
//!
//! Every wait polls the database's state; the first crash is placed by a row
//! lock this test holds on one dependent (the release locks the dependents in
//! id order, so it waits there, its transaction open), never by timing.

mod common;
#[path = "support/temp_server.rs"]
mod temp_server;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, parse_one, signal, wait_exit};
use duraq_core::inspect::{OutcomeTotals, QueueTotals};
use duraq_core::{Inspect, Producer};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use serde_json::{json, Value};
use temp_server::TempServer;

/// Dependents of the root.
const FAN_OUT: usize = 3_000;
/// `duraq worker` processes.
const WORKERS: usize = 3;
/// Each worker's `--concurrency`.
const CONCURRENCY: usize = 16;
/// How long each dependent sleeps: 3,000 of them on 48 slots take at least
/// three seconds, so the second crash (after 300 completions) lands while
/// most of them are still to run.
const DEPENDENT_MS: u64 = 50;
/// Completed dependents before the second crash.
const SECOND_CRASH_AFTER: i64 = 300;
/// The most any one wait may take before the test fails, saying what it
/// waited for.
const PATIENCE: Duration = Duration::from_secs(90);

/// Plain SQL next to the system under test: the row lock that holds the
/// release, and recounts that do not go through duraq's code. A connection
/// the server dropped is replaced at the next call, so it works across
/// restarts.
struct Sql {
    rt: tokio::runtime::Runtime,
    url: String,
    client: RefCell<Option<tokio_postgres::Client>>,
}

impl Sql {
    fn new(url: String) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        Self {
            rt,
            url,
            client: RefCell::new(None),
        }
    }

    fn connect(&self) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        self.rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(client)
        })
    }

    /// The rows of `sql`, or the error (the server may be restarting).
    fn query(&self, sql: &str) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        let mut slot = self.client.borrow_mut();
        if slot.as_ref().is_none_or(|c| c.is_closed()) {
            *slot = Some(self.connect()?);
        }
        let rows = self
            .rt
            .block_on(slot.as_ref().expect("connected above").query(sql, &[]));
        if rows.is_err() {
            *slot = None;
        }
        rows
    }

    /// One `bigint` from `sql`, or `None` while the server cannot answer.
    fn count(&self, sql: &str) -> Option<i64> {
        self.query(sql).ok().map(|rows| rows[0].get(0))
    }

    /// Opens a transaction that holds `FOR UPDATE` on job `id` until the
    /// returned client is dropped or the server goes away.
    fn lock_job(&self, id: &str) -> tokio_postgres::Client {
        let client = self.connect().expect("connect to lock a job");
        self.rt.block_on(async {
            client.batch_execute("BEGIN").await.expect("begin");
            let rows = client
                .query("SELECT id FROM duraq_jobs WHERE id = $1 FOR UPDATE", &[&id])
                .await
                .expect("lock the job");
            assert_eq!(rows.len(), 1, "job {id} to lock");
        });
        client
    }

    /// Each queue's outcome totals, as the store reads them.
    fn outcome_totals(&self) -> Vec<QueueTotals> {
        self.rt.block_on(async {
            let store = PostgresStore::connect_existing(&self.url, PostgresOptions::default())
                .await
                .expect("open the store");
            let totals = store.outcome_totals().await.expect("outcome totals");
            store.close().await.expect("close the store");
            totals
        })
    }

    /// Jobs per status, counted from the rows.
    fn recount(&self) -> BTreeMap<String, i64> {
        self.query("SELECT status, count(*) FROM duraq_jobs GROUP BY status")
            .expect("recount the rows")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }
}

/// The `duraq worker` processes, each with its output in files; killed on drop
/// (a failing test leaves no worker behind) and when this process dies.
struct Workers {
    children: Vec<Child>,
    logs: Vec<(PathBuf, PathBuf)>,
}

impl Workers {
    fn start(url: &str, dir: &Path, n: usize) -> Self {
        let mut workers = Self {
            children: Vec::new(),
            logs: Vec::new(),
        };
        for i in 0..n {
            let out = dir.join(format!("worker-{i}.out"));
            let err = dir.join(format!("worker-{i}.err"));
            let mut cmd = duraq(url);
            cmd.args(["worker", "--json", "--concurrency"])
                .arg(CONCURRENCY.to_string())
                .stdout(File::create(&out).expect("worker stdout file"))
                .stderr(File::create(&err).expect("worker stderr file"));
            // Should this process be killed (no drop runs), the kernel kills
            // the workers too rather than leave them retrying a dead server.
            #[cfg(target_os = "linux")]
            unsafe {
                use std::os::unix::process::CommandExt;
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let child = cmd.spawn().expect("spawn duraq worker");
            workers.children.push(child);
            workers.logs.push((out, err));
        }
        workers
    }

    /// Each worker's stderr, for a failure message: its last lines.
    fn tails(&self) -> String {
        self.logs
            .iter()
            .enumerate()
            .map(|(i, (_, err))| {
                let text = std::fs::read_to_string(err).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                format!("--- worker {i} stderr (last lines) ---\n{tail}\n")
            })
            .collect()
    }

    /// How many lines of the workers' stderr contain `needle`.
    fn log_lines(&self, needle: &str) -> usize {
        self.logs
            .iter()
            .map(|(_, err)| {
                std::fs::read_to_string(err)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.contains(needle))
                    .count()
            })
            .sum()
    }

    /// SIGTERM to each; each must exit cleanly and print its totals.
    fn stop(mut self) -> Vec<Value> {
        for child in &self.children {
            signal(child, libc::SIGTERM);
        }
        let mut reports = Vec::new();
        for (i, child) in self.children.iter_mut().enumerate() {
            let status = wait_exit(child, PATIENCE);
            let out = std::fs::read(&self.logs[i].0).expect("worker stdout");
            assert!(
                status.success(),
                "worker {i} exited with {status}\n{}",
                std::fs::read_to_string(&self.logs[i].1).unwrap_or_default()
            );
            reports.push(parse_one(&out)["report"].clone());
        }
        reports
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `duraq --database URL`, deaf to the caller's settings that would point it
/// elsewhere (another database, schema or LISTEN address).
fn duraq(url: &str) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["--database", url])
        .env_remove("DURAQ_DATABASE_URL")
        .env_remove("DURAQ_SCHEMA")
        .env_remove("DURAQ_LISTEN_URL")
        .stdin(Stdio::null());
    cmd
}

/// `duraq counts --json`, or `None` while the server cannot answer.
fn try_counts(url: &str) -> Option<Value> {
    let out = duraq(url)
        .args(["counts", "--json"])
        .output()
        .expect("run duraq");
    out.status.success().then(|| parse_one(&out.stdout))
}

/// `duraq <args> --json`, which must succeed.
fn duraq_json(url: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = duraq(url).args(&all).output().expect("run duraq");
    assert!(
        out.status.success(),
        "duraq {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)
}

/// Polls `f` every 20 ms until it returns `Some`; after [`PATIENCE`], fails
/// with `what`, the server's last counts and the workers' last log lines.
fn wait_until<T>(what: &str, url: &str, workers: &Workers, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!(
                "timed out after {PATIENCE:?} waiting for {what}; counts now: {:?}\n{}",
                try_counts(url),
                workers.tails()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_fan_out_survives_postgres_crash_restarts() {
    let Some(server) = TempServer::start() else {
        return;
    };
    let started = Instant::now();
    let url = server.url();
    let sql = Sql::new(url.clone());
    let files = tempfile::tempdir().expect("tempdir");
    let n = FAN_OUT as i64;

    duraq_json(&url, &["migrate"]);
    // The fan-out, inserted at once by the CLI: one root and its dependents.
    let mut steps = vec![json!({"step": "root", "job": "duraq.sleep", "args": {"ms": 200}})];
    steps.extend((0..FAN_OUT).map(|i| {
        json!({"step": format!("d{i:04}"), "job": "duraq.sleep",
               "args": {"ms": DEPENDENT_MS}, "after": ["root"]})
    }));
    let flow = files.path().join("fan-out.json");
    std::fs::write(
        &flow,
        json!({"name": "fan-out", "steps": steps}).to_string(),
    )
    .unwrap();
    let enqueued = duraq_json(&url, &["workflows", "enqueue", flow.to_str().unwrap()]);
    let ids = enqueued["jobs"].as_object().expect("the step ids");
    let root = ids["root"].as_str().unwrap().to_owned();
    let dependents: BTreeSet<String> = ids
        .iter()
        .filter(|(step, _)| *step != "root")
        .map(|(_, id)| id.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dependents.len(), FAN_OUT);
    let counts = duraq_json(&url, &["counts"]);
    assert_eq!(
        (
            counts["counts"]["pending"].as_i64(),
            counts["counts"]["queued"].as_i64()
        ),
        (Some(n), Some(1)),
        "{counts}"
    );

    // The release locks the dependents in id order: holding the first one
    // stops it with the root's completion written but not committed (the
    // first is in the first bounded batch of a release, whatever its size).
    let first = dependents.iter().next().unwrap();
    let lock = sql.lock_job(first);
    let workers = Workers::start(&url, files.path(), WORKERS);
    wait_until(
        "the root's completion to wait on the held dependent",
        &url,
        &workers,
        || {
            let waiting = sql.count(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE '%duraq_job_dependents%'",
            )?;
            (waiting > 0).then_some(())
        },
    );
    let before = duraq_json(&url, &["counts"])["counts"].clone();
    assert_eq!(
        (
            before["pending"].as_i64(),
            before["handedOff"].as_i64(),
            before["completed"].as_i64()
        ),
        (Some(n), Some(1), Some(0)),
        "nothing is released before the root's completion commits: {before}"
    );
    let to_first = started.elapsed();
    // Crash 1: the release's transaction dies with the server.
    server.crash_restart();
    drop(lock);
    let restarted_1 = started.elapsed();

    // Crash 2: while the dependents run (claims and reports in flight).
    let completed_sql = "SELECT count(*) FROM duraq_jobs WHERE status = 'completed'";
    wait_until("the first dependents to complete", &url, &workers, || {
        let done = sql.count(completed_sql)?;
        (done > SECOND_CRASH_AFTER).then_some(())
    });
    server.crash_restart();
    let restarted_2 = started.elapsed();
    let after_crash = wait_until(
        "the server to answer after the second crash",
        &url,
        &workers,
        || sql.count(completed_sql),
    );
    assert!(
        after_crash < n + 1,
        "the second crash landed after the fan-out had finished ({after_crash} completed)"
    );

    // The workers reconnect and finish on their own.
    wait_until("every job to complete", &url, &workers, || {
        let done = sql.count(completed_sql)?;
        (done == n + 1).then_some(())
    });
    let finished = started.elapsed();
    let report_warnings = workers.log_lines("reporting failed");
    let claim_warnings = workers.log_lines("claim failed");
    let reports = workers.stop();

    // Every row: nothing lost, nothing extra, each dependent run exactly once
    // and only after the root completed.
    let listed = duraq_json(&url, &["jobs", "list", "--limit", "10000"]);
    let jobs = listed["jobs"].as_array().expect("jobs");
    assert_eq!(listed["nextAfter"], Value::Null, "one page holds every job");
    let by_id: BTreeMap<&str, &Value> = jobs
        .iter()
        .map(|j| (j["id"].as_str().unwrap(), j))
        .collect();
    assert_eq!(by_id.len(), jobs.len(), "a job listed twice");
    let mut expected: BTreeSet<&str> = dependents.iter().map(String::as_str).collect();
    expected.insert(&root);
    assert_eq!(
        by_id.keys().copied().collect::<BTreeSet<_>>(),
        expected,
        "the rows are exactly the jobs enqueued"
    );
    let root_row = by_id[root.as_str()];
    assert_eq!(root_row["status"], "completed", "{root_row}");
    assert_eq!(root_row["attempts"], 1, "the root ran once: {root_row}");
    let root_done = root_row["completedAtMs"]
        .as_i64()
        .expect("root completedAtMs");
    for id in &dependents {
        let job = by_id[id.as_str()];
        assert_eq!(job["status"], "completed", "{job}");
        assert_eq!(job["attempts"], 1, "a dependent ran more than once: {job}");
        assert_eq!(job["errors"], json!([]), "{job}");
        let handed = job["handedOffAtMs"].as_i64().expect("handedOffAtMs");
        assert!(
            handed >= root_done,
            "released before the root completed ({handed} < {root_done}): {job}"
        );
        assert_eq!(job["dependsOn"][0]["jobId"], root.as_str(), "{job}");
        assert_eq!(job.get("openDependencies"), None, "{job}");
        assert!(job["completedAtMs"].as_i64().unwrap() >= handed, "{job}");
    }

    // The counts: exact, and equal to a recount of the rows.
    let snapshot = duraq_json(&url, &["counts"]);
    let counts = &snapshot["counts"];
    assert_eq!(
        counts,
        &json!({"queued": 0, "handedOff": 0, "completed": n + 1, "failed": 0,
                "cancelled": 0, "orphaned": 0, "pending": 0}),
        "{snapshot}"
    );
    assert_eq!(snapshot["total"], n + 1, "{snapshot}");
    let recount = sql.recount();
    assert_eq!(
        recount,
        BTreeMap::from([("completed".to_owned(), n + 1)]),
        "the rows, counted"
    );
    // The monotonic outcome totals (`docs/history.md`): each job entered
    // `completed` once, none went back to the queue for another attempt.
    let totals = sql.outcome_totals();
    assert_eq!(
        totals,
        vec![QueueTotals {
            queue: "default".into(),
            totals: OutcomeTotals {
                enqueued: n + 1,
                completed: n + 1,
                ..OutcomeTotals::default()
            },
        }],
        "outcome totals"
    );
    // And the workers' own totals: each job claimed once in all, and run to
    // its report once. A completion can commit just as the server dies, its
    // answer lost: the retried report then finds the job done and is counted
    // a lost lease, not a completion (the rows above say it completed once).
    let sum = |field: &str| -> i64 { reports.iter().map(|r| r[field].as_i64().unwrap()).sum() };
    assert_eq!(sum("claimed"), n + 1, "{reports:?}");
    assert_eq!(sum("completed") + sum("lostLeases"), n + 1, "{reports:?}");
    for field in [
        "retried",
        "failed",
        "returnedToQueue",
        "unreported",
        "recovered",
    ] {
        assert_eq!(sum(field), 0, "{field}: {reports:?}");
    }
    eprintln!(
        "fan-out of {FAN_OUT}: release held and crash 1 at {to_first:.1?}, server back at \
         {restarted_1:.1?}; crash 2 after {SECOND_CRASH_AFTER}+ completions, back at \
         {restarted_2:.1?} ({after_crash} completed); all completed at {finished:.1?}; \
         workers logged {report_warnings} failed reports and {claim_warnings} failed claims, \
         {} completions' answers lost",
        sum("lostLeases")
    );
}
