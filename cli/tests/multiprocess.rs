//! Promises that span processes, with real `duraq worker` processes sharing one
//! database, on SQLite and on PostgreSQL (when `DATABASE_URL` names one, as
//! `cargo xtask test-all` arranges; each test then works in a fresh schema):
//!
//! - a rate limit holds across four workers: no window of one period ever holds
//!   more starts than the limit, and jobs without the key are not held up;
//! - a paused queue is skipped by every worker while jobs enqueued after the
//!   pause run, and runs once resumed;
//! - a sequence of 1,000 jobs runs strictly in order across three workers,
//!   one of them killed with SIGKILL halfway, each job completed once;
//! - fair turns hold across three workers: a trickle of key B is not kept
//!   waiting behind 100,000 queued jobs of key A (checked in the order of
//!   handoffs: no B job is passed by more than one claim per slot).
//!
//! Waiting is by polling the database's state, never by sleeping a guessed time.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use common::recorder::Recorder;
use common::{bin, parse_one, run_with_url, signal, wait_exit, wait_for};
use serde_json::Value;

/// The fair-turns tests each run alone, not beside the other tests' worker
/// processes on the same cores: their 50 ms jobs and 50 ms arrivals are meant
/// to keep every slot busy and the claims short, and on a two-core machine
/// shared with twelve more workers a claim waited longer for a core than
/// for the database. The other tests share the machine among themselves.
static MACHINE: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(PoisonError::into_inner)
}

fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(PoisonError::into_inner)
}

/// One database for one test: a SQLite file, or a fresh PostgreSQL schema.
struct Target {
    url: String,
    _dir: tempfile::TempDir,
}

fn sqlite() -> Target {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("duraq.db").display());
    Target { url, _dir: dir }
}

/// `None` (the test passes, saying so) when no PostgreSQL is configured.
fn postgres(test: &str) -> Option<Target> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let Ok(base) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: {test} on PostgreSQL skipped");
        return None;
    };
    let schema = format!(
        "duraq_mp_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(Target {
        url: format!("{base}{sep}schema={schema}"),
        _dir: tempfile::tempdir().expect("tempdir"),
    })
}

impl Target {
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = run_with_url(&self.url, &all);
        assert!(
            out.status.success(),
            "duraq {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        parse_one(&out.stdout)
    }

    fn enqueue(&self, args: &[&str]) -> String {
        let mut all = vec!["enqueue", "duraq.noop"];
        all.extend_from_slice(args);
        self.json(&all)["jobId"].as_str().expect("jobId").to_owned()
    }

    fn worker(&self) -> Child {
        Command::new(bin())
            .args(["--database", &self.url, "worker", "--concurrency", "4"])
            .env_remove("DURAQ_DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn worker")
    }

    fn status(&self, id: &str) -> String {
        self.json(&["jobs", "show", id])["job"]["status"]
            .as_str()
            .expect("status")
            .to_owned()
    }

    fn jobs(&self) -> Vec<Value> {
        self.json(&["jobs", "list", "--limit", "1000"])["jobs"]
            .as_array()
            .expect("jobs")
            .clone()
    }

    fn completed(&self) -> i64 {
        self.json(&["counts"])["counts"]["completed"]
            .as_i64()
            .expect("completed")
    }
}

fn stop(workers: Vec<Child>) {
    for mut w in workers {
        signal(&w, libc::SIGTERM);
        let status = wait_exit(&mut w, Duration::from_secs(30));
        assert!(status.success(), "worker exit: {status}");
    }
}

/// The most starts any half-open window `[t, t + period)` holds.
fn busiest_window(mut starts: Vec<i64>, period_ms: i64) -> usize {
    starts.sort_unstable();
    (0..starts.len())
        .map(|i| {
            starts[i..]
                .iter()
                .take_while(|t| **t < starts[i] + period_ms)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn rate_limit_holds_across_four_workers(t: &Target) {
    const LIMITED: usize = 16;
    const FREE: usize = 8;
    t.json(&["migrate"]);
    for _ in 0..LIMITED {
        t.enqueue(&["--rate-key", "partner-api", "--rate", "4/1s"]);
    }
    for _ in 0..FREE {
        t.enqueue(&[]);
    }
    let workers: Vec<Child> = (0..4).map(|_| t.worker()).collect();
    wait_for(Duration::from_secs(60), "every job completed", || {
        (t.completed() == (LIMITED + FREE) as i64).then_some(())
    });
    stop(workers);

    let jobs = t.jobs();
    let limited: Vec<&Value> = jobs
        .iter()
        .filter(|j| j["rateKey"] == "partner-api")
        .collect();
    assert_eq!(limited.len(), LIMITED);
    for j in &jobs {
        assert_eq!(j["attempts"], 1, "a postponed job used no attempt: {j}");
    }
    let starts: Vec<i64> = limited
        .iter()
        .map(|j| j["handedOffAtMs"].as_i64().expect("handedOffAtMs"))
        .collect();
    let busiest = busiest_window(starts.clone(), 1_000);
    assert!(
        busiest <= 4,
        "{busiest} starts within one second (limit 4): {starts:?}"
    );
    // Sixteen starts at four per second span at least three whole periods.
    let span = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert!(span >= 3_000, "starts span only {span} ms");
    // The free jobs did not queue behind the limited ones.
    let free_last = jobs
        .iter()
        .filter(|j| j["rateKey"].is_null())
        .map(|j| j["handedOffAtMs"].as_i64().unwrap())
        .max()
        .unwrap();
    assert!(
        free_last < *starts.iter().max().unwrap(),
        "the free jobs ran before the limited backlog was through"
    );
}

fn paused_queue_is_skipped_by_every_worker(t: &Target) {
    t.json(&["migrate"]);
    t.json(&["queues", "pause", "mail"]);
    let workers: Vec<Child> = (0..3).map(|_| t.worker()).collect();
    let held: Vec<String> = (0..3).map(|_| t.enqueue(&["--queue", "mail"])).collect();
    // Enqueued after the paused jobs: once these ran, every worker has claimed
    // since the mail jobs were due, and skipped them.
    let markers: Vec<String> = (0..6).map(|_| t.enqueue(&[])).collect();
    wait_for(Duration::from_secs(30), "the markers completed", || {
        markers
            .iter()
            .all(|id| t.status(id) == "completed")
            .then_some(())
    });
    for id in &held {
        assert_eq!(t.status(id), "queued", "{id} was claimed while paused");
    }
    t.json(&["queues", "resume", "mail"]);
    wait_for(Duration::from_secs(30), "the mail jobs completed", || {
        held.iter()
            .all(|id| t.status(id) == "completed")
            .then_some(())
    });
    stop(workers);
}

/// One workflow of `n` steps, all of sequence `s`, each posting its index to
/// `url`: inserted by one process in one transaction, so ordered by id.
fn enqueue_sequence(t: &Target, n: usize, url: &str) {
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let args = serde_json::json!({"url": url, "body": {"i": i}});
            serde_json::json!({"step": format!("s{i:04}"), "job": "duraq.http", "args": args,
                               "sequenceKey": "s", "maxRetries": 3})
        })
        .collect();
    let file = t._dir.path().join("sequence.json");
    let text = serde_json::json!({"name": "sequence", "steps": steps}).to_string();
    std::fs::write(&file, text).unwrap();
    t.json(&["workflows", "enqueue", file.to_str().unwrap()]);
}

fn sequence_worker(t: &Target) -> Child {
    Command::new(bin())
        .args([
            "--database",
            &t.url,
            "worker",
            "--concurrency",
            "2",
            "--prefetch",
            "0",
        ])
        .args(["--stale-after", "3s"])
        .env_remove("DURAQ_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn worker")
}

/// Three workers run a sequence of 1,000 jobs; one is killed with SIGKILL
/// once a third has completed (a job it held is recovered by the others and
/// run again in its place). Every job completes once, the jobs' requests
/// arrive in the sequence's order, a request repeated only where the killed
/// worker's attempt was lost, and never two at once.
fn a_sequence_runs_in_order_across_workers_with_one_killed(t: &Target) {
    const N: usize = 1_000;
    t.json(&["migrate"]);
    let hook = Recorder::start();
    enqueue_sequence(t, N, &hook.url);
    let mut workers: Vec<Child> = (0..3).map(|_| sequence_worker(t)).collect();
    wait_for(Duration::from_secs(120), "a third completed", || {
        (t.completed() >= (N / 3) as i64).then_some(())
    });
    let mut killed = workers.remove(0);
    signal(&killed, libc::SIGKILL);
    wait_exit(&mut killed, Duration::from_secs(30));
    wait_for(Duration::from_secs(300), "every job completed", || {
        (t.completed() == N as i64).then_some(())
    });
    stop(workers);
    assert_eq!(t.jobs().len(), N, "each job once");
    let mut arrivals = hook.order();
    let repeats = arrivals.len() - N;
    assert!(
        repeats <= 1,
        "only the killed worker's attempt repeats: {repeats}"
    );
    arrivals.dedup();
    let expected: Vec<i64> = (0..N as i64).collect();
    assert_eq!(arrivals, expected, "in the sequence's order");
    assert_eq!(
        hook.max_active.load(Ordering::SeqCst),
        1,
        "never two at once"
    );
}

/// The store behind `t`, opened in this process (to enqueue a backlog fast).
async fn open(t: &Target) -> std::sync::Arc<dyn duraq_core::Store> {
    if let Some(path) = t.url.strip_prefix("sqlite:") {
        let opts = duraq_store_sqlite::SqliteOptions::default();
        return std::sync::Arc::new(duraq_store_sqlite::SqliteStore::open(path, opts).unwrap());
    }
    let (base, schema) = t.url.rsplit_once("schema=").expect("a schema in the URL");
    let options = duraq_store_postgres::PostgresOptions {
        schema: Some(schema.to_owned()),
        ..Default::default()
    };
    let base = base.trim_end_matches(['?', '&']);
    let store = duraq_store_postgres::PostgresStore::connect_existing(base, options).await;
    std::sync::Arc::new(store.unwrap())
}

/// Enqueues `n` jobs of key B, one every 50 ms as a producer would (well
/// within B's share of the slots, so none waits for an earlier B), each
/// posting to the recorder; returns their ids.
async fn trickle(store: &dyn duraq_core::Store, hook: &Recorder, n: i64) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let args = serde_json::json!({"url": hook.url, "body": {"i": i}});
        let opts = duraq_core::EnqueueOptions::new().fairness_key("B");
        let job = duraq_core::NewJob::new("duraq.http", args, opts).unwrap();
        ids.push(store.enqueue(job).await.unwrap().job_id().to_owned());
        // The pace of arrivals, not a wait for anything.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ids
}

/// The `p`th percentile (0 to 100) of `values`.
fn percentile(mut values: Vec<i64>, p: usize) -> i64 {
    values.sort_unstable();
    values[(values.len() * p / 100).min(values.len() - 1)]
}

/// When each job of fairness key `key` that a worker took was handed to it.
async fn handoffs(store: &dyn duraq_core::Store, key: &str) -> Vec<i64> {
    use duraq_core::inspect::{JobCursor, JobFilter};
    use duraq_core::JobStatus;
    const PAGE: usize = 1_000;
    let mut filter = JobFilter {
        statuses: vec![JobStatus::HandedOff, JobStatus::Completed],
        fairness_key: Some(key.to_owned()),
        limit: Some(PAGE),
        ..JobFilter::default()
    };
    let mut at = Vec::new();
    loop {
        let page = store.search_jobs(&filter).await.unwrap();
        at.extend(page.jobs.iter().filter_map(|job| job.handed_off_at_ms));
        filter.after = match (page.resume, page.jobs.last()) {
            (Some(resume), _) => Some(resume),
            (None, Some(last)) if page.jobs.len() == PAGE => Some(JobCursor::after(last)),
            _ => return at,
        };
    }
}

/// Three workers of two slots each; key B trickles 100 jobs, one every
/// 50 ms, while key A has 100,000 jobs of 50 ms queued ahead of them. Without
/// turns each B job would wait for the whole backlog. With them, a B job that
/// arrives while every slot runs an A job is the next job taken: the claims
/// already under way when it arrives cannot see it (at most one per worker,
/// each taking up to two jobs), and the first claim after them takes it. So
/// no B job is overtaken by more than one claim per slot of A jobs.
///
/// The promise is checked in the order of handoffs, not in milliseconds: a
/// busy machine stretches every wait alike, but not who goes first.
fn fair_turns_hold_across_three_workers(t: &Target) {
    const BACKLOG: usize = 100_000;
    const SLOTS: usize = 3 * 2;
    t.json(&["migrate"]);
    let hook = Recorder::start();
    // No claiming ahead: a job claimed ahead waits for one of its own
    // worker's slots, which is prefetch's trade, not the turns'.
    let workers: Vec<Child> = (0..3)
        .map(|_| {
            Command::new(bin())
                .args(["--database", &t.url, "worker", "--concurrency", "2"])
                .args(["--prefetch", "0"])
                .env_remove("DURAQ_DATABASE_URL")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(open(t));
    // The backlog goes in while the queue is paused: the workers drain no
    // slower than it is enqueued, so it would never build up otherwise.
    t.json(&["queues", "pause", "default"]);
    rt.block_on(async {
        let keyed = duraq_core::EnqueueOptions::new().fairness_key("A");
        for _ in 0..BACKLOG / 1_000 {
            let batch = (0..1_000)
                .map(|_| {
                    let args = serde_json::json!({ "ms": 50 });
                    duraq_core::NewJob::new("duraq.sleep", args, keyed.clone()).unwrap()
                })
                .collect();
            store.enqueue_batch(batch).await.unwrap();
        }
    });
    t.json(&["queues", "resume", "default"]);
    let trickled = rt.block_on(trickle(&*store, &hook, 100));
    wait_for(Duration::from_secs(120), "the trickle", || {
        (hook.count() == 100).then_some(())
    });
    let queued = t.json(&["counts"])["counts"]["queued"].as_i64().unwrap();
    stop(workers);
    assert!(queued > 0, "the backlog outlived the trickle");
    let a_handoffs = rt.block_on(handoffs(&*store, "A"));
    let (mut overtaken, mut waits) = (Vec::new(), Vec::new());
    for id in &trickled {
        let b = rt.block_on(store.get_job(id)).unwrap().expect("the B job");
        let (due, taken) = (b.scheduled_at_ms, b.handed_off_at_ms.expect("taken"));
        let passed = a_handoffs.iter().filter(|at| (due + 1..taken).contains(at));
        overtaken.push(passed.count() as i64);
        waits.push(taken - due);
    }
    eprintln!(
        "behind {queued} queued of A ({} taken): B waited p50 {} ms, p99 {} ms; \
         A jobs taken while a B job waited: p50 {}, p99 {}, max {}",
        a_handoffs.len(),
        percentile(waits.clone(), 50),
        percentile(waits, 99),
        percentile(overtaken.clone(), 50),
        percentile(overtaken.clone(), 99),
        percentile(overtaken.clone(), 100),
    );
    let worst = percentile(overtaken, 100);
    assert!(
        worst <= SLOTS as i64,
        "a B job waited while {worst} A jobs were taken (one claim per slot: {SLOTS})"
    );
}

#[test]
fn rate_limit_holds_across_four_workers_on_sqlite() {
    let _shared = shared();
    rate_limit_holds_across_four_workers(&sqlite());
}

#[test]
fn rate_limit_holds_across_four_workers_on_postgres() {
    let _shared = shared();
    if let Some(t) = postgres("rate_limit_holds_across_four_workers") {
        rate_limit_holds_across_four_workers(&t);
    }
}

#[test]
fn paused_queue_is_skipped_by_every_worker_on_sqlite() {
    let _shared = shared();
    paused_queue_is_skipped_by_every_worker(&sqlite());
}

#[test]
fn paused_queue_is_skipped_by_every_worker_on_postgres() {
    let _shared = shared();
    if let Some(t) = postgres("paused_queue_is_skipped_by_every_worker") {
        paused_queue_is_skipped_by_every_worker(&t);
    }
}

#[test]
fn a_sequence_runs_in_order_across_workers_with_one_killed_on_sqlite() {
    let _shared = shared();
    a_sequence_runs_in_order_across_workers_with_one_killed(&sqlite());
}

#[test]
fn a_sequence_runs_in_order_across_workers_with_one_killed_on_postgres() {
    let _shared = shared();
    if let Some(t) = postgres("a sequence across workers") {
        a_sequence_runs_in_order_across_workers_with_one_killed(&t);
    }
}

#[test]
fn fair_turns_hold_across_three_workers_on_sqlite() {
    let _alone = alone();
    fair_turns_hold_across_three_workers(&sqlite());
}

#[test]
fn fair_turns_hold_across_three_workers_on_postgres() {
    let _alone = alone();
    if let Some(t) = postgres("fair turns") {
        fair_turns_hold_across_three_workers(&t);
    }
}
