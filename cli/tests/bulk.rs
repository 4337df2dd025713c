//! `duraq jobs retry|cancel|delete|run-now` on ids or a filter, against a real
//! SQLite file: the answer's shape and numbers, dry runs, batches, and the
//! error paths writing nothing.

mod common;

use common::Db;
use serde_json::Value;

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

const BULK_KEYS: [&str; 7] = [
    "action", "batches", "changed", "dryRun", "matched", "sample", "skipped",
];

#[test]
fn several_ids_or_a_filter_in_batches() {
    let db = Db::new();
    let a: Vec<String> = (0..5)
        .map(|i| db.enqueue(&["report", "--args", &format!("[{i}]"), "--queue", "a"]))
        .collect();
    let b = db.enqueue(&["report", "--args", "[9]", "--queue", "b"]);

    let cancelled = db.json(&[
        "jobs",
        "cancel",
        "--queue",
        "a",
        "--status",
        "queued",
        "--batch-size",
        "2",
    ]);
    assert_eq!(keys(&cancelled), BULK_KEYS);
    assert_eq!(cancelled["action"], "cancel");
    assert_eq!(
        (
            &cancelled["matched"],
            &cancelled["changed"],
            &cancelled["skipped"]
        ),
        (&Value::from(5), &Value::from(5), &Value::from(0))
    );
    assert_eq!(cancelled["batches"], 3, "5 jobs in batches of 2");
    assert_eq!(db.status(&b), "queued", "another queue is left alone");

    // Several ids: the queued one is skipped, not an error.
    let retried = db.json(&["jobs", "retry", &a[0], &a[1], &b]);
    assert_eq!(
        (&retried["changed"], &retried["skipped"]),
        (&Value::from(2), &Value::from(1))
    );
    assert_eq!(db.status(&a[0]), "queued");

    // A dry run counts and changes nothing.
    let before = db.counts();
    let dry = db.json(&[
        "jobs",
        "delete",
        "--status",
        "cancelled,queued",
        "--dry-run",
    ]);
    assert_eq!(dry["dryRun"], true);
    assert_eq!(
        (&dry["matched"], &dry["changed"]),
        (&Value::from(6), &Value::from(3))
    );
    assert_eq!(dry["sample"].as_array().map(Vec::len), Some(5));
    assert_eq!(db.counts(), before);
    let people = db.run(&["jobs", "delete", "--status", "cancelled", "--dry-run"]);
    assert!(people.status.success());
    assert!(!people.stdout.is_empty());

    let deleted = db.json(&["jobs", "delete", "--status", "cancelled"]);
    assert_eq!(deleted["changed"], 3);
    assert_eq!(db.counts()["counts"]["cancelled"], 0);
    assert_eq!(db.counts()["total"], 3);
}

#[test]
fn running_is_accepted_for_handed_off() {
    let db = Db::new();
    db.enqueue(&["report"]);
    let dry = db.json(&["jobs", "cancel", "--status", "running", "--dry-run"]);
    assert_eq!(dry["matched"], 0, "nothing runs");
    let dry = db.json(&[
        "jobs",
        "cancel",
        "--status",
        "handed_off,queued",
        "--dry-run",
    ]);
    assert_eq!(dry["matched"], 1);
}

#[test]
fn errors_change_nothing() {
    let db = Db::new();
    let queued = db.enqueue(&["report"]);
    let done = db.enqueue(&["report", "--args", "[1]"]);
    db.json(&["jobs", "cancel", &done]);

    db.fails(&["jobs", "delete", &queued], "invalid-job-state");
    db.fails(&["jobs", "retry", &done, "no-such-job"], "job-not-found");
    db.fails(&["jobs", "cancel", "--status", "bogus"], "invalid-status");
    db.fails(
        &["jobs", "retry", "--status", "failed", "--batch-size", "0"],
        "invalid-batch-size",
    );
    // Usage errors: no target, or ids and a filter together.
    for args in [
        &["jobs", "retry"][..],
        &["jobs", "delete", &done, "--status", "cancelled"][..],
    ] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "duraq {args:?}: {out:?}");
    }
    assert_eq!(db.status(&queued), "queued");
    assert_eq!(db.status(&done), "cancelled");
}

#[test]
fn run_now_makes_jobs_due_later_due() {
    let db = Db::new();
    let later: Vec<String> = (0..3)
        .map(|i| db.enqueue(&["report", "--args", &format!("[{i}]"), "--run-in", "1h"]))
        .collect();
    let due = db.enqueue(&["report", "--args", "[9]"]);
    let scheduled = |id: &str| db.job(id)["scheduledAtMs"].as_i64().expect("ms");
    let first = scheduled(&later[0]);

    // A dry run by filter counts the jobs due later and changes nothing.
    let dry = db.json(&["jobs", "run-now", "--status", "queued", "--dry-run"]);
    assert_eq!(keys(&dry), BULK_KEYS);
    assert_eq!(
        (&dry["action"], &dry["dryRun"]),
        (&"run-now".into(), &true.into())
    );
    assert_eq!(
        (&dry["matched"], &dry["changed"], &dry["skipped"]),
        (&Value::from(4), &Value::from(3), &Value::from(1))
    );
    assert_eq!(scheduled(&later[0]), first);

    // By ids: the job already due is skipped, not an error.
    let by_ids = db.json(&["jobs", "run-now", &later[0], &due]);
    assert_eq!(keys(&by_ids), BULK_KEYS);
    assert_eq!(
        (&by_ids["changed"], &by_ids["skipped"]),
        (&Value::from(1), &Value::from(1))
    );
    assert!(scheduled(&later[0]) < first, "due now");
    assert_eq!(db.status(&later[0]), "queued", "only the time moved");

    // By filter, in batches: exact counts.
    let by_filter = db.json(&["jobs", "run-now", "--status", "queued", "--batch-size", "3"]);
    assert_eq!(
        (
            &by_filter["matched"],
            &by_filter["changed"],
            &by_filter["skipped"],
            &by_filter["batches"]
        ),
        (
            &Value::from(4),
            &Value::from(2),
            &Value::from(2),
            &Value::from(2)
        )
    );
    for id in &later {
        assert!(scheduled(id) < first, "{id} is due now");
    }
    let people = db.run(&["jobs", "run-now", &later[1]]);
    assert!(people.status.success(), "{people:?}");

    // A finished job named alone is refused, and nothing changes.
    db.json(&["jobs", "cancel", &due]);
    db.fails(&["jobs", "run-now", &due], "invalid-job-state");
    db.fails(&["jobs", "run-now", "no-such-job"], "job-not-found");
    assert_eq!(db.status(&due), "cancelled");
}
