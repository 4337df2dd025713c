//! `--log-format json`: a real worker process whose job fails writes the
//! failed-attempt warning as one JSON object on one line, with the job's id,
//! name, attempt and error as top-level fields.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

#[test]
fn a_failed_attempt_is_one_json_object_with_the_jobs_fields() {
    let db = Db::new();
    // Nothing listens on port 1 of the loopback interface: connection refused.
    let id = db.enqueue(&[
        "duraq.http",
        "--args",
        r#"{"url":"http://127.0.0.1:1/hook"}"#,
        "--max-retries",
        "0",
    ]);
    let mut worker = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .args(["--log-format", "json", "worker"])
        .env_remove("DURAQ_LOG")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker");
    db.wait_job(&id, Duration::from_secs(60), |j| j["status"] == "failed");
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, Duration::from_secs(30)).success());
    let mut stderr = String::new();
    worker
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();

    let events: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let failed = events
        .iter()
        .find(|e| e["message"] == "attempt failed")
        .unwrap_or_else(|| panic!("no failed-attempt event in:\n{stderr}"));
    assert_eq!(failed["level"], "WARN");
    assert_eq!(failed["job_id"], id.as_str());
    assert_eq!(failed["job_name"], "duraq.http");
    assert_eq!(failed["attempt"], 1);
    assert!(
        failed["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{failed}"
    );
    // Only the program's own plain lines (drain notice) are not JSON.
    for line in stderr.lines().filter(|l| !l.starts_with('{')) {
        assert!(
            line.starts_with("duraq worker"),
            "non-JSON log line: {line}"
        );
    }
}
