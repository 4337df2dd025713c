//! End-to-end tests of every non-worker command: JSON shapes, human output, every
//! error code the CLI can surface (with a check that nothing was written), and
//! usage errors (exit 2).

mod common;

use common::{run_with_url, Db};
use serde_json::{json, Value};

const JOB_FIELDS: [&str; 29] = [
    "priority",
    "rateKey",
    "rateMax",
    "ratePeriodMs",
    "traceParent",
    "id",
    "jobName",
    "args",
    "queue",
    "status",
    "attempts",
    "maxRetries",
    "scheduledAtMs",
    "createdAtMs",
    "handedOffAtMs",
    "completedAtMs",
    "failedAtMs",
    "cancelledAtMs",
    "orphanedAtMs",
    "lastError",
    "errors",
    "workerId",
    "handoffId",
    "scheduleKey",
    "scheduleOrder",
    "concurrencyKey",
    "maxConcurrency",
    "idempotencyKey",
    "timeoutMs",
];

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

#[test]
fn migrate_reports_applied_versions_once() {
    let db = Db::new();
    let first = db.json(&["migrate"]);
    assert_eq!(keys(&first), sorted(&["applied", "version"]));
    let version = first["version"].as_i64().unwrap();
    assert!(version >= 1);
    let second = db.json(&["migrate"]);
    assert_eq!(second, json!({"applied": [], "version": version}));
}

#[test]
fn enqueue_and_show_every_field() {
    let db = Db::new();
    let id = db.enqueue(&[
        "mail.send",
        "--args",
        r#"{"to":"a@example.com"}"#,
        "--queue",
        " mail ",
        "--max-retries",
        "3",
        "--concurrency-key",
        "tenant:7",
        "--max-concurrency",
        "2",
        "--timeout",
        "30s",
        "--run-at",
        "2030-01-02T03:04:05Z",
        "--priority",
        "-7",
        "--rate-key",
        "smtp",
        "--rate",
        "30/1m",
    ]);
    let shown = db.json(&["jobs", "show", &id]);
    assert_eq!(keys(&shown), ["job", "progress", "signals", "steps"]);
    // A job that never ran has said nothing and recorded no step.
    assert_eq!(shown["progress"], serde_json::Value::Null);
    assert_eq!(shown["steps"], serde_json::json!([]));
    assert_eq!(shown["signals"], serde_json::json!([]));
    let job = &shown["job"];
    assert_eq!(keys(job), sorted(&JOB_FIELDS));
    assert_eq!(job["id"], id.as_str());
    assert_eq!(job["jobName"], "mail.send");
    assert_eq!(job["args"], json!({"to": "a@example.com"}));
    assert_eq!(job["queue"], "mail");
    assert_eq!(job["status"], "queued");
    assert_eq!(job["attempts"], 0);
    assert_eq!(job["maxRetries"], 3);
    assert_eq!(job["scheduledAtMs"], 1_893_553_445_000i64);
    assert_eq!(job["concurrencyKey"], "tenant:7");
    assert_eq!(job["maxConcurrency"], 2);
    assert_eq!(job["timeoutMs"], 30_000);
    assert_eq!(job["priority"], -7);
    assert_eq!(
        (&job["rateKey"], &job["rateMax"], &job["ratePeriodMs"]),
        (&json!("smtp"), &json!(30), &json!(60_000))
    );
    assert_eq!(job["handedOffAtMs"], Value::Null);

    let human = db.run(&["jobs", "show", &id]);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&id)
            && text.contains("mail.send")
            && text.contains("2030-01-02 03:04:05 UTC")
    );

    let defaults = db.job(&db.enqueue(&["duraq.noop"]));
    assert_eq!(defaults["args"], json!([]));
    assert_eq!(defaults["queue"], "default");
    assert_eq!(defaults["maxRetries"], 10);
    assert_eq!(defaults["priority"], 0);
    assert_eq!(defaults["rateKey"], Value::Null);
}

#[test]
fn run_in_and_offsets_schedule_in_the_future() {
    let db = Db::new();
    let before = common_now_ms();
    let id = db.enqueue(&["x", "--run-in", "10m"]);
    let at = db.job(&id)["scheduledAtMs"].as_i64().unwrap();
    assert!(
        at >= before + 600_000 && at <= common_now_ms() + 600_000,
        "{at}"
    );
    let id = db.enqueue(&["x", "--run-at", "2030-01-02T05:04:05+02:00"]);
    assert_eq!(db.job(&id)["scheduledAtMs"], 1_893_553_445_000i64);
    assert_eq!(db.job(&id).get("expiresAtMs"), None, "no expiry, no field");

    let before = common_now_ms();
    let id = db.enqueue(&["x", "--expires-in", "10m"]);
    let at = db.job(&id)["expiresAtMs"].as_i64().unwrap();
    assert!(
        at >= before + 600_000 && at <= common_now_ms() + 600_000,
        "{at}"
    );
    let id = db.enqueue(&["x", "--expires-at", "2030-01-02T05:04:05+02:00"]);
    assert_eq!(db.job(&id)["expiresAtMs"], 1_893_553_445_000i64);
}

#[test]
fn a_fairness_key_is_stored_shown_searched_and_checked() {
    let db = Db::new();
    let id = db.enqueue(&["x", "--fairness-key", "tenant:42", "--sequence", "s"]);
    db.enqueue(&["x", "--fairness-key", "tenant:7"]);
    assert_eq!(db.job(&id)["fairnessKey"], "tenant:42");
    let human = String::from_utf8(db.run(&["jobs", "show", &id]).stdout).unwrap();
    assert!(
        human.contains("fairnessKey") && human.contains("tenant:42"),
        "{human}"
    );
    assert!(human.contains("s (on failure: hold)"), "{human}");
    let listed = db.json(&["jobs", "list", "--fairness-key", "tenant:42"]);
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["jobs"][0]["id"], id.as_str());
    let before = db.counts()["total"].clone();
    db.fails(
        &["enqueue", "x", "--fairness-key", "bad\u{7}key"],
        "invalid-fairness-key",
    );
    db.fails(
        &["enqueue", "x", "--fairness-key", ""],
        "invalid-fairness-key",
    );
    assert_eq!(db.counts()["total"], before, "nothing written");
    let refused = db.run(&["worker", "--fairness-weight", "tenant:42=0"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("invalid-worker-config"), "{stderr}");
}

#[test]
fn a_sequence_is_stored_with_its_failure_policy_and_checked() {
    let db = Db::new();
    let id = db.enqueue(&["x", "--sequence", "account:7"]);
    let job = db.job(&id);
    assert_eq!(job["sequenceKey"], "account:7");
    assert_eq!(job.get("sequenceContinues"), None, "hold is the default");
    let id = db.enqueue(&["x", "--sequence", "s", "--on-sequence-failure", "continue"]);
    assert_eq!(db.job(&id)["sequenceContinues"], true);
    let listed = db.json(&["jobs", "list", "--sequence", "s"]);
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["jobs"][0]["id"], id.as_str());
    let before = db.counts()["total"].clone();
    db.fails(
        &[
            "enqueue",
            "x",
            "--sequence",
            "s",
            "--on-sequence-failure",
            "later",
        ],
        "invalid-sequence",
    );
    db.fails(
        &["enqueue", "x", "--sequence", "bad\u{7}key"],
        "invalid-sequence",
    );
    db.fails(
        &["enqueue", "x", "--sequence", "s", "--after", &id],
        "unsupported-option",
    );
    assert_eq!(db.counts()["total"], before, "nothing written");
    let usage = db.run(&["enqueue", "x", "--on-sequence-failure", "continue"]);
    assert_eq!(usage.status.code(), Some(2), "a policy without a sequence");
}

#[test]
fn a_cost_is_stored_and_checked_against_the_jobs_own_limits() {
    let db = Db::new();
    let plain = db.enqueue(&["x"]);
    assert_eq!(db.job(&plain).get("cost"), None, "cost 1 is left out");
    let cap = ["--concurrency-key", "k", "--max-concurrency", "2"];
    let id = db.enqueue(&[&["x", "--cost", "2"][..], &cap].concat());
    assert_eq!(db.job(&id)["cost"], 2);
    let id = db.enqueue(&["x", "--rate-key", "r", "--rate", "5/1s", "--cost", "5"]);
    assert_eq!(db.job(&id)["cost"], 5);
    let before = db.counts()["total"].clone();
    db.fails(
        &[&["enqueue", "x", "--cost", "3"][..], &cap].concat(),
        "invalid-cost",
    );
    db.fails(&["enqueue", "x", "--cost", "0"], "invalid-cost");
    db.fails(&["enqueue", "x", "--cost", "-2"], "invalid-cost");
    db.fails(
        &[
            "enqueue",
            "x",
            "--rate-key",
            "r",
            "--rate",
            "5/1s",
            "--cost",
            "6",
        ],
        "invalid-cost",
    );
    assert_eq!(db.counts()["total"], before, "nothing written");
}

fn common_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn idempotent_replays_and_dedupe() {
    let db = Db::new();
    let a = db.enqueue(&["report", "--args", "[1]", "--idempotency-key", "k1"]);
    let b = db.enqueue(&["report", "--args", "[1]", "--idempotency-key", "k1"]);
    assert_eq!(a, b);
    db.fails(
        &[
            "enqueue",
            "report",
            "--args",
            "[2]",
            "--idempotency-key",
            "k1",
        ],
        "idempotency-conflict",
    );

    let c = db.enqueue(&["digest", "--args", "[9]", "--dedupe-while-queued"]);
    let d = db.enqueue(&["digest", "--args", "[9]", "--dedupe-while-queued"]);
    assert_eq!(c, d);
    assert_eq!(db.counts()["counts"]["queued"], 2);
}

#[test]
fn counts_shape_and_table() {
    let db = Db::new();
    db.enqueue(&["x"]);
    let snap = db.counts();
    assert_eq!(keys(&snap), sorted(&["counts", "revision", "total"]));
    assert_eq!(
        keys(&snap["counts"]),
        sorted(&[
            "queued",
            "handedOff",
            "completed",
            "failed",
            "cancelled",
            "orphaned",
            "pending"
        ])
    );
    assert_eq!(snap["counts"]["queued"], 1);
    assert_eq!(snap["total"], 1);
    assert!(snap["revision"].as_i64().unwrap() >= 1);
    let human = db.run(&["counts"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("queued") && text.contains("revision"),
        "{text}"
    );
}

#[test]
fn schedule_keys_round_trip() {
    let db = Db::new();
    let key = "event:42:reminder:24h";
    let first = db.json(&[
        "schedule", "replace", key, "remind", "--args", "[1]", "--run-in", "1h",
    ]);
    assert_eq!(
        keys(&first),
        sorted(&[
            "jobId",
            "previousJobId",
            "previousStatus",
            "previousStopped"
        ])
    );
    assert_eq!(first["previousJobId"], Value::Null);
    assert_eq!(first["previousStatus"], Value::Null);
    let second = db.json(&[
        "schedule", "replace", key, "remind", "--args", "[2]", "--run-in", "1h",
    ]);
    assert_eq!(second["previousJobId"], first["jobId"]);
    assert_eq!(second["previousStatus"], "queued");
    assert_eq!(db.status(first["jobId"].as_str().unwrap()), "cancelled");

    let got = db.json(&["schedule", "get", key]);
    assert_eq!(keys(&got), sorted(&["currentJob", "latestTerminalJob"]));
    assert_eq!(got["currentJob"]["id"], second["jobId"]);
    assert_eq!(got["currentJob"]["scheduleOrder"], 2);
    assert_eq!(got["latestTerminalJob"], Value::Null);
    let got = db.json(&["schedule", "get", key, "--include-latest-terminal"]);
    assert_eq!(got["latestTerminalJob"]["id"], first["jobId"]);

    let woken = db.json(&["schedule", "wake", key]);
    assert_eq!(woken, json!({"jobId": second["jobId"], "outcome": "woken"}));
    assert_eq!(
        db.json(&["schedule", "wake", key])["outcome"],
        "already_due"
    );
    let cancelled = db.json(&["schedule", "cancel", key]);
    assert_eq!(
        cancelled,
        json!({"jobId": second["jobId"], "outcome": "cancelled"})
    );
    assert_eq!(
        db.json(&["schedule", "cancel", key]),
        json!({"jobId": null, "outcome": "not_found"})
    );
    assert_eq!(
        db.json(&["schedule", "wake", key]),
        json!({"jobId": null, "outcome": "not_found"})
    );
    assert_eq!(
        db.json(&["schedule", "get", key])["currentJob"],
        Value::Null
    );
}

#[test]
fn jobs_list_filters_and_table() {
    let db = Db::new();
    let a = db.enqueue(&["alpha", "--queue", "q1"]);
    let b = db.enqueue(&["beta", "--queue", "q2"]);
    let all = db.json(&["jobs", "list"]);
    assert_eq!(
        keys(&all),
        sorted(&["jobs", "nextAfter", "resume", "scanned", "total"])
    );
    let ids: Vec<&str> = all["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b.as_str(), a.as_str()], "newest first");
    assert_eq!(keys(&all["jobs"][0]), sorted(&JOB_FIELDS));
    let q1 = db.json(&["jobs", "list", "--queue", "q1"]);
    assert_eq!(q1["jobs"].as_array().unwrap().len(), 1);
    let beta = db.json(&[
        "jobs", "list", "--name", "beta", "--status", "queued", "--limit", "5",
    ]);
    assert_eq!(beta["jobs"][0]["id"], b.as_str());
    let none = db.json(&["jobs", "list", "--status", "completed"]);
    assert_eq!(
        none,
        json!({"jobs": [], "total": 0, "nextAfter": null, "resume": null, "scanned": 0})
    );
    assert_eq!(
        db.json(&["jobs", "list", "--limit", "1"])["jobs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let human = db.run(&["jobs", "list"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.starts_with("ID") && text.contains(&a) && text.contains("beta"),
        "{text}"
    );
}

#[test]
fn cancel_retry_and_prune() {
    let db = Db::new();
    let id = db.enqueue(&["x"]);
    let cancelled = db.json(&["jobs", "cancel", &id]);
    assert_eq!(cancelled["job"]["status"], "cancelled");
    assert_eq!(cancelled["job"]["cancelReason"], "operator");
    let with_reason: Vec<&str> = JOB_FIELDS.iter().copied().chain(["cancelReason"]).collect();
    assert_eq!(keys(&cancelled["job"]), sorted(&with_reason));
    // Cancelling again is an answer, not an error: the job is cancelled.
    assert_eq!(db.json(&["jobs", "cancel", &id]), cancelled);
    let retried = db.json(&["jobs", "retry", &id]);
    assert_eq!(retried["job"]["status"], "queued");
    assert_eq!(
        keys(&retried["job"]),
        sorted(&JOB_FIELDS),
        "the reason is cleared"
    );
    assert_eq!(retried["job"]["attempts"], 0);
    db.fails(&["jobs", "retry", &id], "invalid-job-state");
    db.json(&["jobs", "cancel", &id]);

    let report = common::wait_for(std::time::Duration::from_secs(10), "prune", || {
        let r = db.json(&["jobs", "prune", "--cancelled-older-than", "0s"]);
        (r["deleted"] == 1).then_some(r)
    });
    assert_eq!(keys(&report), sorted(&["batches", "deleted"]));
    let out = db.run(&[
        "jobs",
        "prune",
        "--completed-older-than",
        "7d",
        "--failed-older-than",
        "1h",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted 0"));
    db.fails(&["jobs", "show", &id], "job-not-found");
    assert_eq!(db.counts()["total"], 0);
}

#[test]
fn every_cli_error_code_writes_nothing() {
    // Before the database exists: nothing may create it.
    let db = Db::new();
    db.fails(&["enqueue", "x", "--args", "{nope"], "invalid-args");
    db.fails(&["enqueue", "x", "--run-in", "soon"], "invalid-duration");
    db.fails(&["enqueue", "x", "--run-at", "tomorrow"], "invalid-time");
    db.fails(&["enqueue", "x", "--timeout", "0s"], "invalid-timeout");
    db.fails(&["enqueue", "x", "--expires-in", "-1m"], "invalid-duration");
    db.fails(&["enqueue", "x", "--expires-at", "later"], "invalid-time");
    db.fails(
        &["enqueue", "x", "--expires-at", "1969-12-31T00:00:00Z"],
        "invalid-expiry",
    );
    db.fails(&["enqueue", "x", "--priority", "101"], "invalid-priority");
    db.fails(&["enqueue", "x", "--priority", "-101"], "invalid-priority");
    for rate in ["0/1s", "5/0s", "many/1s", "5"] {
        db.fails(
            &["enqueue", "x", "--rate-key", "k", "--rate", rate],
            "invalid-rate-limit",
        );
    }
    db.fails(
        &["enqueue", "x", "--max-retries", "-1"],
        "invalid-max-retries",
    );
    db.fails(
        &["enqueue", "x", "--concurrency-key", "k"],
        "invalid-concurrency",
    );
    db.fails(
        &[
            "enqueue",
            "x",
            "--concurrency-key",
            "queue:x",
            "--max-concurrency",
            "1",
        ],
        "invalid-concurrency",
    );
    db.fails(
        &["enqueue", "x", "--idempotency-key", ""],
        "invalid-idempotency-key",
    );
    db.fails(
        &[
            "enqueue",
            "x",
            "--idempotency-key",
            "k",
            "--dedupe-while-queued",
        ],
        "unsupported-option",
    );
    db.fails(&["enqueue", " "], "invalid-job-name");
    db.fails(&["schedule", "replace", "", "x"], "invalid-schedule-key");
    db.fails(&["schedule", "wake", "bad\u{7}key"], "invalid-schedule-key");
    db.fails(
        &["schedule", "replace", "k", "x", "--args", "["],
        "invalid-args",
    );
    db.fails(&["jobs", "list", "--status", "done"], "invalid-status");
    db.fails(
        &["jobs", "prune", "--completed-older-than", "forever"],
        "invalid-duration",
    );

    // With data: errors from the store change nothing either.
    db.enqueue(&["x", "--concurrency-key", "k", "--max-concurrency", "2"]);
    assert!(db.path.exists());
    db.fails(
        &[
            "enqueue",
            "x",
            "--concurrency-key",
            "k",
            "--max-concurrency",
            "3",
        ],
        "concurrency-cap-conflict",
    );
    db.enqueue(&["x", "--rate-key", "api", "--rate", "10/1s"]);
    db.fails(
        &["enqueue", "x", "--rate-key", "api", "--rate", "10/2s"],
        "rate-limit-conflict",
    );
    db.fails(&["jobs", "show", "no-such-job"], "job-not-found");
    db.fails(&["jobs", "retry", "no-such-job"], "job-not-found");
    db.fails(&["jobs", "cancel", "no-such-job"], "job-not-found");
    let queued = db.json(&["jobs", "list"])["jobs"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    db.fails(&["jobs", "retry", &queued], "invalid-job-state");
    db.fails(
        &["enqueue", "x", "--run-at", "2030-13-01T00:00:00Z"],
        "invalid-time",
    );
}

#[test]
fn bad_database_urls() {
    for url in ["mysql://localhost/db", "sqlite:", "duraq.db"] {
        let out = run_with_url(url, &["counts"]);
        assert_eq!(out.status.code(), Some(1), "{url}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error[invalid-database-url]: "), "{err}");
    }
    let out = run_with_url("mysql://x", &["counts", "--json"]);
    assert_eq!(
        common::parse_one(&out.stderr)["error"]["code"],
        "invalid-database-url"
    );

    // The environment variable is honoured.
    let db = Db::new();
    let out = std::process::Command::new(common::bin())
        .args(["enqueue", "x", "--json"])
        .env("DURAQ_DATABASE_URL", db.url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(db.counts()["total"], 1);
}

#[test]
fn unreachable_postgres_is_a_typed_error() {
    // Port 9 (discard) is closed: whether or not this build has the PostgreSQL
    // store, the answer is one typed error line and exit 1, never a panic.
    let out = run_with_url("postgres://duraq@127.0.0.1:9/duraq", &["counts"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error[") && err.lines().count() == 1,
        "{err}"
    );
    let out = run_with_url("postgres://duraq@127.0.0.1:9/duraq", &["counts", "--json"]);
    assert!(common::parse_one(&out.stderr)["error"]["code"].is_string());
}

#[test]
fn in_memory_database_works() {
    let out = run_with_url("sqlite::memory:", &["counts", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(common::parse_one(&out.stdout)["total"], 0);
}

#[test]
fn usage_errors_exit_2() {
    let db = Db::new();
    for args in [
        &["frobnicate"][..],
        &["enqueue"],
        &[
            "enqueue",
            "x",
            "--run-at",
            "2030-01-01T00:00:00Z",
            "--run-in",
            "1m",
        ],
        &["jobs", "prune"],
        &["jobs", "list", "--limit", "many"],
        &["schedule", "get"],
        &["worker", "--concurrency", "lots"],
    ] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "duraq {args:?}: {out:?}");
    }
    assert!(!db.path.exists());
}

#[test]
fn jobs_show_prints_the_error_history() {
    use std::time::Duration;
    let db = Db::new();
    // A request to a closed port fails its only attempt.
    let id = db.enqueue(&[
        "duraq.http",
        "--args",
        r#"{"url":"http://127.0.0.1:1/closed"}"#,
        "--max-retries",
        "0",
    ]);
    let mut worker = db.spawn_worker(&[]);
    let job = db.wait_job(&id, Duration::from_secs(60), |j| j["status"] == "failed");
    common::signal(&worker, libc::SIGTERM);
    assert!(common::wait_exit(&mut worker, Duration::from_secs(60)).success());
    let errors = job["errors"].as_array().expect("errors is a list");
    assert_eq!(errors.len(), 1, "{job}");
    assert_eq!(
        keys(&errors[0]),
        sorted(&["attempt", "atMs", "error", "workerId"])
    );
    assert_eq!(errors[0]["attempt"], 1);
    assert_eq!(errors[0]["error"], job["lastError"]);
    assert_eq!(errors[0]["workerId"], job["workerId"]);
    assert_eq!(errors[0]["atMs"], job["failedAtMs"]);

    let out = db.run(&["jobs", "show", &id]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let history = text
        .split("Error history (newest first):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no history in:\n{text}"));
    let lines: Vec<&str> = history.lines().collect();
    assert!(lines[0].starts_with("ATTEMPT  WHEN"), "{text}");
    let worker_id = job["workerId"].as_str().unwrap();
    assert!(
        lines[1].starts_with("1 ")
            && lines[1].contains(worker_id)
            && lines[1].contains("duraq.http"),
        "{text}"
    );
    assert_eq!(lines.len(), 2, "{text}");
}
