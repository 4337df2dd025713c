//! What a new user ran into with workflows and bad input ("found when tried
//! as a new user would"), each through the real `duraq` binary on a real
//! SQLite file, judged by exit codes, error codes and JSON answers: workflow
//! files that ignored keys they did not know, options in milliseconds, a
//! name shown nowhere, no id prefixes, no way to wait for a workflow, and
//! input checks that pointed the wrong way.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, wait_exit, Db};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(60);

/// A migrated database and a file `name` in its folder holding `text`.
fn with_file(name: &str, text: &str) -> (Db, String) {
    let db = Db::new();
    db.json(&["migrate"]);
    let path = db.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (db, path.to_str().unwrap().to_owned())
}

fn write(db: &Db, name: &str, text: &str) -> String {
    let path = db.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn unknown_keys_in_a_workflow_file_are_refused_and_nothing_is_written() {
    let (db, _) = with_file("none.json", "{}");
    for step in [
        r#"{"step": "b", "job": "duraq.noop", "depends_on": ["a"]}"#,
        r#"{"step": "b", "job": "duraq.noop", "runInMs": 300000}"#,
        r#"{"step": "b", "job": "duraq.noop", "max_retries": 2}"#,
    ] {
        let file =
            format!(r#"{{"name": "w", "steps": [{{"step": "a", "job": "duraq.noop"}}, {step}]}}"#);
        let path = write(&db, "bad.json", &file);
        db.fails(&["workflows", "enqueue", &path], "invalid-workflow-file");
    }
    let top = write(
        &db,
        "top.json",
        r#"{"name": "w", "schedule": "now", "steps": [{"step": "a", "job": "duraq.noop"}]}"#,
    );
    db.fails(&["workflows", "enqueue", &top], "invalid-workflow-file");
    let list = db.json(&["workflows", "list"]);
    assert_eq!(list["workflows"], Value::Array(vec![]), "{list}");
}

#[test]
fn step_options_take_the_flags_spellings_and_units() {
    let (db, path) = with_file(
        "w.json",
        r#"{"name": "nightly", "steps": [
            {"step": "a", "job": "duraq.noop", "runIn": "5m", "maxRetries": 2, "timeout": "30s"},
            {"step": "b", "job": "duraq.noop", "runAt": "2099-01-01T00:00:00Z", "cost": 3,
             "keepCompleted": false}
        ]}"#,
    );
    let out = db.json(&["workflows", "enqueue", &path]);
    let a = db.job(out["jobs"]["a"].as_str().unwrap());
    let delay = a["scheduledAtMs"].as_i64().unwrap() - a["createdAtMs"].as_i64().unwrap();
    assert_eq!(delay, 300_000, "{a}");
    assert_eq!(
        (&a["maxRetries"], &a["timeoutMs"]),
        (&2.into(), &30_000.into())
    );
    let b = db.job(out["jobs"]["b"].as_str().unwrap());
    assert_eq!(b["scheduledAtMs"], 4_070_908_800_000_i64);
    assert_eq!(
        (&b["cost"], &b["keepCompleted"]),
        (&3.into(), &false.into())
    );
    for (step, code) in [
        (r#""job": "duraq.noop", "runIn": "-5m""#, "invalid-duration"),
        (
            r#""job": "duraq.noop", "runIn": 300000"#,
            "invalid-workflow-file",
        ),
        (
            r#""job": "duraq.noop", "runAt": "tomorrow""#,
            "invalid-time",
        ),
        (
            r#""job": "duraq.sleep", "args": {"ms": "fast"}"#,
            "invalid-args",
        ),
        (r#""job": "duraq.noop", "cost": 0"#, "invalid-cost"),
        (
            r#""job": "duraq.noop", "cost": "2""#,
            "invalid-workflow-file",
        ),
    ] {
        let file = format!(r#"{{"name": "w", "steps": [{{"step": "a", {step}}}]}}"#);
        let bad = write(&db, "bad.json", &file);
        db.fails(&["workflows", "enqueue", &bad], code);
    }
}

#[test]
fn a_workflows_name_is_shown_and_searchable_and_its_id_prefix_is_enough() {
    let (db, nightly) = with_file(
        "n.json",
        r#"{"name": "nightly", "steps": [{"step": "a", "job": "duraq.noop"}]}"#,
    );
    let onboard = write(
        &db,
        "o.json",
        r#"{"name": "onboard", "steps": [{"step": "a", "job": "duraq.noop"}]}"#,
    );
    let first = db.json(&["workflows", "enqueue", &nightly])["workflowId"].clone();
    let second = db.json(&["workflows", "enqueue", &onboard])["workflowId"].clone();
    let second = second.as_str().unwrap();

    let list = db.json(&["workflows", "list"]);
    let names: Vec<&Value> = (list["workflows"].as_array().unwrap().iter())
        .map(|w| &w["name"])
        .collect();
    assert_eq!(names, [&Value::from("onboard"), &Value::from("nightly")]);
    let named = db.json(&["workflows", "list", "--name", "nightly"]);
    let found = named["workflows"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{named}");
    assert_eq!(found[0]["workflowId"], first);

    let shown = db.json(&["workflows", "show", &second[..13]]);
    assert_eq!(
        (shown["workflowId"].as_str(), &shown["name"]),
        (Some(second), &"onboard".into())
    );
    // Both ids are UUIDv7s of this second: they share their first digit.
    db.fails(&["workflows", "show", &second[..1]], "ambiguous-id");
    db.fails(
        &["workflows", "show", "ffffffff-ffff"],
        "workflow-not-found",
    );
    db.fails(&["workflows", "cancel", "ffffffff"], "workflow-not-found");
}

/// `show --watch` of `kind` (`workflows` or `jobs`) of `id`, started before a
/// worker drains it: the watch exits 0 by itself, its last line finished.
fn watch_until_finished(db: &Db, kind: &str, id: &str) -> Value {
    let mut watch = Command::new(bin())
        .args([
            "--database",
            &db.url(),
            kind,
            "show",
            id,
            "--watch",
            "--json",
        ])
        .env_remove("DURAQ_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut worker = db.spawn_worker(&[]);
    let status = wait_exit(&mut watch, LONG);
    common::signal(&worker, libc::SIGTERM);
    wait_exit(&mut worker, LONG);
    let out = watch.wait_with_output().unwrap();
    assert!(status.success(), "{status:?}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn show_watch_exits_once_the_workflow_or_the_job_has_finished() {
    let (db, path) = with_file(
        "w.json",
        r#"{"name": "w", "steps": [
            {"step": "a", "job": "duraq.sleep", "args": {"ms": 200}},
            {"step": "b", "job": "duraq.echo", "after": ["a"]}
        ]}"#,
    );
    let id = db.json(&["workflows", "enqueue", &path])["workflowId"].clone();
    let last = watch_until_finished(&db, "workflows", id.as_str().unwrap());
    assert_eq!(last["counts"]["completed"], 2, "{last}");

    let job = db.enqueue(&["duraq.sleep", "--args", r#"{"ms": 200}"#]);
    let last = watch_until_finished(&db, "jobs", &job);
    assert_eq!(last["job"]["status"], "completed", "{last}");
}

#[test]
fn bad_input_says_what_to_fix() {
    let (db, _) = with_file("none.json", "{}");
    // A synonym of a flag names the real one (a usage error, exit 2).
    for (typed, real) in [("--delay", "--run-in"), ("--retries", "--max-retries")] {
        let out = db.run(&["enqueue", "duraq.noop", typed, "5"]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(real),
            "{out:?}"
        );
    }
    // A negative duration, however it is typed.
    for args in [
        &["--run-in", "-5s"][..],
        &["--run-in=-5s"],
        &["--timeout", "-1s"],
    ] {
        let mut all = vec!["enqueue", "duraq.noop"];
        all.extend_from_slice(args);
        db.fails(&all, "invalid-duration");
    }
    // Missing or unreadable files name their path.
    let missing = db.dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    db.fails(&["workflows", "enqueue", missing], "file-not-found");
    let folder = db.dir.path().to_str().unwrap();
    db.fails(&["workflows", "enqueue", folder], "file-unreadable");
    db.fails(&["worker", "--schedule", missing], "file-not-found");
    // A built-in job's args are checked when it is enqueued.
    db.fails(
        &["enqueue", "duraq.sleep", "--args", r#"{"ms":"fast"}"#],
        "invalid-args",
    );
    db.fails(
        &["schedule", "replace", "k", "duraq.http", "--args", "{}"],
        "invalid-args",
    );
}
