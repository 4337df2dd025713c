//! `duraq jobs signal` against a real `duraq worker` process on the same
//! SQLite file: the built-in `duraq.await_signal` waits as `pending` until
//! the signal is sent from another process, then completes with its
//! payload; the same signal again replays (before and after the job
//! finished), another payload, a new signal to a finished job, bad input and
//! no job each fail with their code and change nothing.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;

#[test]
fn a_signal_from_the_command_line_wakes_a_waiting_job() {
    let db = Db::new();
    let id = db.enqueue(&[
        "duraq.await_signal",
        "--args",
        r#"{"name": "shipped", "timeoutMs": 600000}"#,
    ]);
    let mut worker = db.spawn_worker(&[]);
    let waiting = db.wait_job(&id, Duration::from_secs(60), |j| j["status"] == "pending");
    assert_eq!(waiting["awaitingSignal"], "shipped");
    assert_eq!(waiting["attempts"], 0, "the wait used no attempt");
    db.fails(
        &["jobs", "signal", &id, "shipped", "--payload", "{not json"],
        "invalid-signal",
    );
    db.fails(
        &["jobs", "signal", &id, "", "--payload", "1"],
        "invalid-signal",
    );
    db.fails(
        &[
            "jobs",
            "signal",
            "0191d2b4-0000-7000-8000-000000000000",
            "shipped",
        ],
        "job-not-found",
    );

    let sent = db.json(&[
        "jobs",
        "signal",
        &id,
        "shipped",
        "--payload",
        r#"{"tracking": "1Z"}"#,
    ]);
    assert_eq!(
        sent,
        json!({"jobId": id, "signal": "shipped", "delivered": true, "replayed": false, "woke": true})
    );
    let again = db.json(&[
        "jobs",
        "signal",
        &id,
        "shipped",
        "--payload",
        r#"{"tracking": "1Z"}"#,
    ]);
    assert_eq!(again["replayed"], true);
    let waited = db.json(&["jobs", "wait", &id, "--timeout", "60s"]);
    assert_eq!(waited["job"]["status"], "completed");
    assert_eq!(waited["job"]["output"], json!({"tracking": "1Z"}));
    signal(&worker, libc::SIGTERM);
    wait_exit(&mut worker, Duration::from_secs(30));

    db.fails(&["jobs", "signal", &id, "late"], "job-finished");
    let late = db.json(&[
        "jobs",
        "signal",
        &id,
        "shipped",
        "--payload",
        r#"{"tracking": "1Z"}"#,
    ]);
    assert_eq!(
        late["replayed"], true,
        "a retried delivery is answered alike"
    );
    let shown = db.json(&["jobs", "show", &id]);
    let steps: Vec<&str> = (shown["steps"].as_array().unwrap().iter())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["duraq.wait.shipped", "duraq.signal.shipped"]);
}

#[test]
fn a_signal_to_a_queued_job_is_kept_for_its_wait() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.await_signal", "--args", r#"{"name": "go"}"#]);
    let sent = db.json(&["jobs", "signal", &id, "go"]);
    assert_eq!(
        (sent["woke"].as_bool(), sent["replayed"].as_bool()),
        (Some(false), Some(false))
    );
    db.fails(
        &["jobs", "signal", &id, "go", "--payload", "\"other\""],
        "signal-conflict",
    );
    db.fails(
        &[
            "enqueue",
            "duraq.await_signal",
            "--args",
            r#"{"name": "go", "timeout": 1}"#,
        ],
        "invalid-args",
    );
    let mut worker = db.spawn_worker(&[]);
    let done = db.wait_job(&id, Duration::from_secs(60), |j| j["status"] == "completed");
    assert_eq!(
        (done["output"].clone(), done["attempts"].clone()),
        (json!(null), json!(1))
    );
    signal(&worker, libc::SIGTERM);
    wait_exit(&mut worker, Duration::from_secs(30));
}
