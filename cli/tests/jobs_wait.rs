//! `duraq jobs wait`: a process that waits for a job another process runs
//! (a `duraq worker` on the same SQLite file, so the wait sees the other
//! process's commit through its bounded polling), and the exit code and
//! error of each way a wait ends.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;

/// Starts `duraq jobs wait <id> <extra> --json` in the background.
fn spawn_wait(db: &Db, id: &str, extra: &[&str]) -> std::process::Child {
    Command::new(bin())
        .args(["--database", &db.url(), "jobs", "wait", id, "--json"])
        .args(extra)
        .env_remove("DURAQ_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn jobs wait")
}

/// The job printed on stdout and the error code on stderr (if any).
fn outcome(out: &Output) -> (serde_json::Value, Option<String>) {
    let job = parse_one(&out.stdout)["job"].clone();
    let code = (!out.stderr.is_empty()).then(|| {
        parse_one(&out.stderr)["error"]["code"]
            .as_str()
            .unwrap()
            .to_owned()
    });
    (job, code)
}

#[test]
fn a_wait_ends_when_a_worker_process_completes_the_job() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.sleep", "--args", r#"{"ms": 50}"#]);
    let waiting = spawn_wait(&db, &id, &["--timeout", "60s"]);
    let mut worker = db.spawn_worker(&[]);
    let out = waiting.wait_with_output().unwrap();
    signal(&worker, libc::SIGTERM);
    wait_exit(&mut worker, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (job, code) = outcome(&out);
    assert_eq!(
        (job["id"].as_str(), job["status"].as_str()),
        (Some(id.as_str()), Some("completed"))
    );
    assert_eq!(code, None);
}

#[test]
fn each_way_a_wait_ends_has_its_exit_code() {
    let db = Db::new();

    // Still queued when the time runs out: the job as it is, wait-timeout.
    let queued = db.enqueue(&["duraq.noop"]);
    let out = spawn_wait(&db, &queued, &["--timeout", "200ms"])
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let (job, code) = outcome(&out);
    assert_eq!(
        (job["status"].as_str(), code.as_deref()),
        (Some("queued"), Some("wait-timeout"))
    );

    // Cancelled: job-cancelled, at once.
    db.json(&["jobs", "cancel", &queued]);
    let out = spawn_wait(&db, &queued, &[]).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let (job, code) = outcome(&out);
    assert_eq!(
        (job["status"].as_str(), code.as_deref()),
        (Some("cancelled"), Some("job-cancelled"))
    );

    // Failed (nothing listens on port 1, no retries): job-failed.
    let failing = db.enqueue(&[
        "duraq.http",
        "--args",
        r#"{"url": "http://127.0.0.1:1/"}"#,
        "--max-retries",
        "0",
    ]);
    let waiting = spawn_wait(&db, &failing, &["--timeout", "60s"]);
    let mut worker = db.spawn_worker(&[]);
    let out = waiting.wait_with_output().unwrap();
    signal(&worker, libc::SIGTERM);
    wait_exit(&mut worker, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let (job, code) = outcome(&out);
    assert_eq!(
        (job["status"].as_str(), code.as_deref()),
        (Some("failed"), Some("job-failed"))
    );

    // No such job: job-not-found, nothing on stdout.
    let out = db.run(&[
        "jobs",
        "wait",
        "0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(parse_one(&out.stderr)["error"]["code"], "job-not-found");

    // A timeout that is no duration: invalid-duration, nothing opened.
    let out = db.run(&["jobs", "wait", &failing, "--timeout", "soon", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(parse_one(&out.stderr)["error"]["code"], "invalid-duration");
}
