//! `duraq worker --schedule FILE.toml` with the built binary:
//!
//! - a bad file stops the worker with the mistake's code and a message starting
//!   `FILE:LINE:`, before the database is created;
//! - a good file's ticks run with the entry's args and options, and a cron
//!   entry's next tick waits in the queue on its zone's wall clock (SQLite);
//! - three worker processes loading one file enqueue every tick exactly once and
//!   miss none, on SQLite and on PostgreSQL (`DATABASE_URL`, a fresh schema per
//!   test; without it the PostgreSQL case skips, except under `CI=true`, where
//!   it fails).
//!
//! Waiting is by polling the database with a deadline, never a guessed sleep.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{bin, json_at, parse_one, signal, wait_exit, wait_for, Db};
use serde_json::Value;

fn write(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("schedules.toml");
    std::fs::write(&path, text).expect("write the schedule file");
    path
}

/// `duraq worker --json --schedule FILE` on `url`, logging only warnings (so a
/// full stderr pipe never stalls it).
fn spawn(url: &str, file: &Path) -> Child {
    Command::new(bin())
        .args(["--database", url, "worker", "--json", "--schedule"])
        .arg(file)
        .env_remove("DURAQ_DATABASE_URL")
        .env("DURAQ_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker")
}

/// SIGTERM, a clean exit, and the totals the worker printed.
fn stop(mut worker: Child) -> Value {
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, Duration::from_secs(60));
    let out = worker.wait_with_output().expect("worker output");
    assert!(
        status.success(),
        "{status}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)["report"].clone()
}

fn jobs(url: &str, name: &str) -> Vec<Value> {
    json_at(url, &["jobs", "list", "--name", name, "--limit", "1000"])["jobs"]
        .as_array()
        .expect("jobs")
        .clone()
}

/// The tick a periodic job's idempotency key names, checked against the job.
fn tick_of(job: &Value, name: &str) -> i64 {
    let key = job["idempotencyKey"].as_str().expect("idempotencyKey");
    let tick: i64 = key
        .strip_prefix(&format!("periodic:{name}:"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("not a tick key of {name}: {key}"));
    assert_eq!(job["scheduledAtMs"], tick, "{job}");
    tick
}

#[test]
fn a_bad_file_stops_the_worker_before_the_database_is_created() {
    let db = Db::new();
    let head = "[[job]]\nname = \"beat\"\njob = \"duraq.noop\"\n";
    for (body, code, line) in [
        (
            "every = \"1s\"\nevry = \"2s\"\n",
            "invalid-schedule-file",
            5,
        ),
        (
            "every = \"1s\"\ncron = \"* * * * *\"\n",
            "invalid-schedule-file",
            5,
        ),
        ("every = \"1 fortnight-ish\"\n", "invalid-duration", 4),
        ("cron = \"0 25 * * *\"\n", "invalid-cron", 4),
        (
            "cron = \"0 9 * * *\"\nzone = \"Europe/Atlantis\"\n",
            "invalid-time-zone",
            5,
        ),
        ("every = \"1s\"\npriority = 1000\n", "invalid-priority", 5),
        ("every = \"1s\"\ncost = 0\n", "invalid-cost", 5),
        (
            "every = \"1s\"\nsequence_key = \"\"\n",
            "invalid-sequence",
            5,
        ),
        (
            "every = \"1s\"\nkeep_completed = \"no\"\n",
            "invalid-schedule-file",
            5,
        ),
        (
            "every = \"1s\"\nexpires_in = \"-1m\"\n",
            "invalid-duration",
            5,
        ),
        (
            "every = \"1s\"\n\n[[job]]\nname = \"beat\"\njob = \"duraq.noop\"\nevery = \"1m\"\n",
            "invalid-schedule-file",
            7,
        ),
    ] {
        let file = write(db.dir.path(), &format!("{head}{body}"));
        let file = file.to_str().unwrap();
        // Exit 1 with the code in both error forms, and no database file.
        db.fails(&["worker", "--schedule", file], code);
        let out = db.run(&["worker", "--schedule", file, "--json"]);
        let message = parse_one(&out.stderr)["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned();
        assert!(
            message.starts_with(&format!("{file}:{line}:")),
            "{body}: {message}"
        );
    }
    let job = "[[job]]\nname = \"x\"\njob = \"app.report\"\nevery = \"1h\"\n";
    let file = write(db.dir.path(), job);
    db.fails(
        &["worker", "--schedule", file.to_str().unwrap()],
        "invalid-schedule-file",
    );
    let sleep =
        "[[job]]\nname = \"x\"\njob = \"duraq.sleep\"\nevery = \"1h\"\nargs = { ms = \"soon\" }\n";
    let file = write(db.dir.path(), sleep);
    db.fails(
        &["worker", "--schedule", file.to_str().unwrap()],
        "invalid-args",
    );
    let missing = db.dir.path().join("missing.toml");
    db.fails(
        &["worker", "--schedule", missing.to_str().unwrap()],
        "file-not-found",
    );
}

#[test]
fn scheduled_ticks_run_with_the_entry_options_on_sqlite() {
    let db = Db::new();
    db.json(&["migrate"]);
    let file = write(
        db.dir.path(),
        r#"
[[job]]
name = "beat"
job = "duraq.noop"
every = "1s"
args = { source = "file", n = 1, tags = ["a", "b"] }
queue = "ticks"
max_retries = 2
priority = 7
timeout = "45s"
cost = 2
expires_in = "1h"
keep_completed = true
sequence_key = "beats"

[[job]]
name = "kolkata-hourly"
job = "duraq.sleep"
cron = "0 * * * *"
zone = "Asia/Kolkata"
args = { ms = 1 }
"#,
    );
    let url = db.url();
    let worker = spawn(&url, &file);
    let done = wait_for(Duration::from_secs(60), "a tick completed", || {
        jobs(&url, "duraq.noop")
            .into_iter()
            .find(|j| j["status"] == "completed")
    });
    // The cron entry's next tick waits in its queue: the top of an hour in
    // Kolkata (UTC+05:30) is half past an hour in UTC.
    let hourly = jobs(&url, "duraq.sleep");
    let report = stop(worker);
    assert!(report["completed"].as_i64().unwrap() >= 1, "{report}");

    let tick = tick_of(&done, "beat");
    assert_eq!(tick % 1_000, 0, "on a multiple of the period: {done}");
    assert_eq!(done["queue"], "ticks", "{done}");
    assert_eq!(done["maxRetries"], 2, "{done}");
    assert_eq!(done["priority"], 7, "{done}");
    assert_eq!(done["timeoutMs"], 45_000, "{done}");
    assert_eq!(done["cost"], 2, "{done}");
    assert_eq!(done["sequenceKey"], "beats", "{done}");
    let ttl = done["expiresAtMs"].as_i64().unwrap() - done["createdAtMs"].as_i64().unwrap();
    assert_eq!(ttl, 3_600_000, "{done}");
    assert_eq!(
        done["args"],
        serde_json::json!({ "source": "file", "n": 1, "tags": ["a", "b"] })
    );

    assert_eq!(hourly.len(), 1, "{hourly:?}");
    assert_eq!(hourly[0]["status"], "queued", "{}", hourly[0]);
    let next = tick_of(&hourly[0], "kolkata-hourly");
    assert_eq!(next % 3_600_000, 1_800_000, "{}", hourly[0]);
    assert_eq!(hourly[0]["args"], serde_json::json!({ "ms": 1 }));
}

/// Three workers load one file with a one-second tick; after several ticks
/// ran, every tick is one job (one idempotency key, run once) and no tick
/// between the first and the last is missing.
fn ticks_are_enqueued_once_across_three_workers(url: &str) {
    json_at(url, &["migrate"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "[[job]]\nname = \"beat\"\njob = \"duraq.noop\"\nevery = \"1s\"\n",
    );
    let workers: Vec<Child> = (0..3).map(|_| spawn(url, &file)).collect();
    wait_for(Duration::from_secs(120), "five ticks completed", || {
        let counts = json_at(url, &["counts"])["counts"].clone();
        (counts["completed"].as_i64().unwrap() >= 5).then_some(())
    });
    let ran: i64 = workers
        .into_iter()
        .map(|w| stop(w)["completed"].as_i64().expect("completed"))
        .sum();

    let all = jobs(url, "duraq.noop");
    let mut ticks: Vec<i64> = all.iter().map(|j| tick_of(j, "beat")).collect();
    ticks.sort_unstable();
    let distinct = {
        let mut d = ticks.clone();
        d.dedup();
        d
    };
    assert_eq!(distinct, ticks, "a tick was enqueued twice");
    assert!(
        ticks.windows(2).all(|w| w[1] - w[0] == 1_000),
        "ticks are not consecutive: {ticks:?}"
    );
    let completed = all.iter().filter(|j| j["status"] == "completed").count() as i64;
    assert!(completed >= 5, "{all:?}");
    assert_eq!(ran, completed, "every completed tick ran exactly once");
    for j in &all {
        assert!(
            j["status"] == "completed" || j["status"] == "queued",
            "only the next tick waits: {j}"
        );
        assert!(j["attempts"].as_i64().unwrap() <= 1, "{j}");
    }
}

#[test]
fn ticks_are_enqueued_once_across_three_workers_on_sqlite() {
    let db = Db::new();
    ticks_are_enqueued_once_across_three_workers(&db.url());
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[test]
fn ticks_are_enqueued_once_across_three_workers_on_postgres() {
    let Ok(base) = std::env::var("DATABASE_URL") else {
        assert!(
            !ci(),
            "CI=true but DATABASE_URL is not set: the PostgreSQL schedule test needs it"
        );
        eprintln!("DATABASE_URL is not set: the PostgreSQL schedule test skipped");
        return;
    };
    let schema = format!("duraq_sched_{}", std::process::id());
    let sep = if base.contains('?') { '&' } else { '?' };
    ticks_are_enqueued_once_across_three_workers(&format!("{base}{sep}schema={schema}"));
}
