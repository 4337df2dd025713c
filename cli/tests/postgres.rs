//! The CLI against PostgreSQL, when `DATABASE_URL` names one (as `cargo xtask
//! test-all` arranges). Without it there is nothing to connect to and the test
//! says so and passes. Job names and keys are unique per run, so the shared
//! database may hold other suites' rows; counts are compared as differences.

mod common;

use common::{parse_one, run_with_url};
use serde_json::Value;

fn json(url: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run_with_url(url, &all);
    assert!(
        out.status.success(),
        "duraq {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)
}

#[test]
fn commands_work_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    let tag = format!("cli-{}-{}", std::process::id(), common_now());
    let migrated = json(&url, &["migrate"]);
    assert!(migrated["version"].as_i64().unwrap() >= 1, "{migrated}");

    let before = json(&url, &["counts"]);
    let name = format!("{tag}.job");
    let id = json(
        &url,
        &["enqueue", &name, "--args", "[1]", "--idempotency-key", &tag],
    )["jobId"]
        .clone();
    let replay = json(
        &url,
        &["enqueue", &name, "--args", "[1]", "--idempotency-key", &tag],
    );
    assert_eq!(replay["jobId"], id);
    let after = json(&url, &["counts"]);
    assert!(after["revision"].as_i64() > before["revision"].as_i64());

    let shown = json(&url, &["jobs", "show", id.as_str().unwrap()]);
    assert_eq!(shown["job"]["jobName"], name.as_str());
    let listed = json(&url, &["jobs", "list", "--name", &name]);
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);

    let key = format!("{tag}:reminder");
    let first = json(
        &url,
        &["schedule", "replace", &key, &name, "--run-in", "1h"],
    );
    let second = json(
        &url,
        &["schedule", "replace", &key, &name, "--run-in", "1h"],
    );
    assert_eq!(second["previousJobId"], first["jobId"]);
    assert_eq!(json(&url, &["schedule", "wake", &key])["outcome"], "woken");
    assert_eq!(
        json(&url, &["schedule", "cancel", &key])["outcome"],
        "cancelled"
    );
    assert_eq!(
        json(&url, &["jobs", "cancel", id.as_str().unwrap()])["job"]["status"],
        "cancelled"
    );

    let out = run_with_url(
        &url,
        &["jobs", "show", "00000000-0000-0000-0000-000000000000"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error[job-not-found]: "));
}

fn common_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
