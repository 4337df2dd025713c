//! Every command's `--json` answer against its schema in `tests/schemas/` (one
//! file per command; `job.json`, `status-counts.json` and `error.json` are
//! shared), and the exit code of every documented outcome: 0 for an answer
//! (including "nothing to do", such as cancelling a key with no owner), 1 for an
//! error, 2 for a usage error, 3 for `tenants pending --fail-on-pending` with
//! pending migrations.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::schema::assert_matches;
use common::{parse_one, signal, wait_exit, Db};
use serde_json::{json, Value};

/// Runs `args --json`, checks the exit code, and validates stdout (or, for
/// failures, stderr) against `schema`.
fn shape(db: &Db, args: &[&str], code: i32, schema: &str) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = db.run(&all);
    assert_eq!(out.status.code(), Some(code), "duraq {args:?}: {out:?}");
    let value = if code == 0 {
        parse_one(&out.stdout)
    } else {
        parse_one(&out.stderr)
    };
    assert_matches(schema, &value);
    value
}

#[test]
fn every_command_prints_its_documented_shape() {
    let db = Db::new();
    shape(&db, &["migrate"], 0, "migrate.json");
    let first = shape(
        &db,
        &["enqueue", "x", "--idempotency-key", "k1"],
        0,
        "enqueue.json",
    );
    assert_eq!(first["replayed"], false);
    let again = shape(
        &db,
        &["enqueue", "x", "--idempotency-key", "k1"],
        0,
        "enqueue.json",
    );
    assert_eq!(
        (&again["jobId"], &again["replayed"]),
        (&first["jobId"], &Value::Bool(true))
    );
    shape(
        &db,
        &["enqueue", "y", "--dedupe-while-queued"],
        0,
        "enqueue.json",
    );
    let dup = shape(
        &db,
        &["enqueue", "y", "--dedupe-while-queued"],
        0,
        "enqueue.json",
    );
    assert_eq!(dup["deduplicated"], true);

    shape(
        &db,
        &["schedule", "replace", "e:1", "x", "--run-in", "1h"],
        0,
        "schedule-replace.json",
    );
    shape(
        &db,
        &["schedule", "replace", "e:1", "x", "--run-in", "1h"],
        0,
        "schedule-replace.json",
    );
    shape(
        &db,
        &["schedule", "get", "e:1", "--include-latest-terminal"],
        0,
        "schedule-get.json",
    );
    shape(&db, &["schedule", "wake", "e:1"], 0, "schedule-wake.json");
    shape(
        &db,
        &["schedule", "cancel", "e:1"],
        0,
        "schedule-cancel.json",
    );

    let list = shape(&db, &["jobs", "list", "--limit", "2"], 0, "jobs-list.json");
    assert_eq!(list["total"], 4);
    let next = list["nextAfter"]
        .as_str()
        .expect("a full page names the next");
    let rest = shape(&db, &["jobs", "list", "--after", next], 0, "jobs-list.json");
    assert_eq!(rest["jobs"].as_array().unwrap().len(), 2);
    assert!(rest["nextAfter"].is_null());
    let filtered = shape(&db, &["jobs", "list", "--name", "x"], 0, "jobs-list.json");
    assert!(
        filtered["total"].is_null(),
        "only a status filter has an O(1) total"
    );
    let id = first["jobId"].as_str().unwrap();
    shape(&db, &["jobs", "show", id], 0, "jobs-show.json");
    shape(
        &db,
        &["jobs", "signal", id, "go", "--payload", "[1]"],
        0,
        "jobs-signal.json",
    );
    let shown = shape(&db, &["jobs", "show", id], 0, "jobs-show.json");
    assert_eq!(shown["signals"].as_array().map(Vec::len), Some(1));
    shape(&db, &["jobs", "cancel", id], 0, "jobs-show.json");
    shape(&db, &["jobs", "retry", id], 0, "jobs-show.json");
    shape(
        &db,
        &["jobs", "prune", "--cancelled-older-than", "1d"],
        0,
        "jobs-prune.json",
    );
    shape(&db, &["counts"], 0, "counts.json");
    let queues = shape(&db, &["queues"], 0, "queues.json");
    let names: Vec<&str> = queues["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default"], "{queues}");
    // No worker has registered: every due job's name is reported.
    let unhandled: Vec<(&str, &str)> = queues["unhandled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["queue"].as_str().unwrap(), g["jobName"].as_str().unwrap()))
        .collect();
    assert_eq!(unhandled, [("default", "x"), ("default", "y")], "{queues}");
    let workers = shape(&db, &["workers"], 0, "workers.json");
    assert_eq!(workers["workers"], json!([]), "{workers}");
    assert_eq!(workers["staleAfterMs"], 60_000);
    let longer = shape(&db, &["workers", "--stale-after", "5m"], 0, "workers.json");
    assert_eq!(longer["staleAfterMs"], 300_000);
    for command in ["workers", "queues"] {
        let bad = shape(&db, &[command, "--stale-after", "soon"], 1, "error.json");
        assert_eq!(bad["error"]["code"], "invalid-duration", "{bad}");
    }
    assert_eq!(
        queues["revision"],
        shape(&db, &["counts"], 0, "counts.json")["revision"]
    );
    // Pause and resume answer with the state and whether it changed (JSON even
    // without --json), and `queues` lists a paused queue that holds no job.
    let paused = shape(&db, &["queues", "pause", "idle"], 0, "queues-pause.json");
    assert_eq!(
        (&paused["queue"], &paused["paused"], &paused["changed"]),
        (&json!("idle"), &json!(true), &json!(true))
    );
    let again = shape(&db, &["queues", "pause", "idle"], 0, "queues-pause.json");
    assert_eq!(again["changed"], false);
    let plain = db.run(&["queues", "pause", "default"]);
    assert!(plain.status.success(), "{plain:?}");
    assert_matches("queues-pause.json", &parse_one(&plain.stdout));
    let listed = shape(&db, &["queues"], 0, "queues.json");
    let flags: Vec<(&str, bool)> = listed["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| (q["queue"].as_str().unwrap(), q["paused"].as_bool().unwrap()))
        .collect();
    assert_eq!(flags, [("default", true), ("idle", true)], "{listed}");
    assert_eq!(
        listed["revision"], queues["revision"],
        "pausing is no count mutation"
    );
    let resumed = shape(&db, &["queues", "resume", "idle"], 0, "queues-pause.json");
    assert_eq!(
        (&resumed["paused"], &resumed["changed"]),
        (&json!(false), &json!(true))
    );
    let idle = shape(&db, &["queues", "resume", "idle"], 0, "queues-pause.json");
    assert_eq!(idle["changed"], false);
    shape(
        &db,
        &["queues", "resume", "default"],
        0,
        "queues-pause.json",
    );
    let bad = shape(&db, &["queues", "pause", "a\u{1b}[2J"], 1, "error.json");
    assert_eq!(bad["error"]["code"], "invalid-queue", "{bad}");
    shape(&db, &["jobs", "show", "nope"], 1, "error.json");
}

#[test]
fn outcomes_have_documented_exit_codes() {
    let db = Db::new();
    let id = db.enqueue(&["x"]);
    // Answers: the state asked for already holds, or there is nothing to do.
    let missing_key = shape(
        &db,
        &["schedule", "cancel", "no-owner"],
        0,
        "schedule-cancel.json",
    );
    assert_eq!(missing_key["outcome"], "not_found");
    shape(
        &db,
        &["schedule", "wake", "no-owner"],
        0,
        "schedule-wake.json",
    );
    shape(&db, &["jobs", "cancel", &id], 0, "jobs-show.json");
    let twice = shape(&db, &["jobs", "cancel", &id], 0, "jobs-show.json");
    assert_eq!(
        twice["job"]["status"], "cancelled",
        "cancelling is idempotent"
    );
    // Errors: a missing id, an action the job's status forbids, bad input.
    shape(&db, &["jobs", "cancel", "no-such-id"], 1, "error.json");
    let queued = db.enqueue(&["x"]);
    shape(&db, &["jobs", "retry", &queued], 1, "error.json");
    let err = shape(&db, &["enqueue", "x", "--timeout", "0s"], 1, "error.json");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--timeout"),
        "{err}"
    );
    let err = shape(
        &db,
        &["enqueue", "x", "--max-retries", "-1"],
        1,
        "error.json",
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-retries"),
        "{err}"
    );
    // Usage errors.
    assert_eq!(
        db.run(&["jobs", "list", "--limit", "many"]).status.code(),
        Some(2)
    );
}

#[test]
fn worker_and_demo_and_mail_shapes() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let mut worker = Command::new(common::bin())
        .args(["--database", &db.url(), "worker", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    db.wait_job(
        db.json(&["jobs", "list"])["jobs"][0]["id"]
            .as_str()
            .unwrap(),
        Duration::from_secs(60),
        |j| j["status"] == "completed",
    );
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, Duration::from_secs(60)).success());
    let mut out = String::new();
    std::io::Read::read_to_string(&mut worker.stdout.take().unwrap(), &mut out).unwrap();
    assert_matches("worker.json", &parse_one(out.as_bytes()));

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::bin())
        .args(["demo", "--jobs", "40", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_matches("demo.json", &parse_one(&out.stdout));

    // `mail send --later` enqueues without touching the network.
    let out = Command::new(common::bin())
        .args(["--database", &db.url(), "mail", "send", "--later", "--json"])
        .args([
            "--to",
            "a@example.com",
            "--from",
            "b@example.com",
            "--subject",
            "hi",
            "--text",
            "x",
        ])
        .env("DURAQ_MAIL_BACKEND", "smtp")
        .env("DURAQ_SMTP_HOST", "127.0.0.1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_matches("mail-send-later.json", &parse_one(&out.stdout));

    let tenants = dir.path().join("tenants.json");
    std::fs::write(&tenants, r#"{"tenants":[]}"#).unwrap();
    std::fs::create_dir(dir.path().join("migrations")).unwrap();
    let out = Command::new(common::bin())
        .args(["tenants", "pending", "projectTenant", "--tenants"])
        .arg(&tenants)
        .arg("--migrations")
        .arg(dir.path().join("migrations"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_matches("tenants-pending.json", &parse_one(&out.stdout));
}
