//! `duraq stats` (`docs/history.md`, `docs/cli.md`) on a real SQLite file, and
//! on PostgreSQL when `DATABASE_URL` is set: after a real worker completed and
//! failed jobs and an operator cancelled one, the sums of the view are exactly
//! what happened since the first sample, per queue with `--queue`, in the
//! 1 h, 24 h and 7 d views alike; the table has its header and total row; a
//! bad `--since` is `invalid-range` and an empty `--queue` is `invalid-queue`;
//! every answer matches `tests/schemas/stats.json`.

mod common;

use std::time::Duration;

use common::schema::assert_matches;
use common::{json_at, run_with_url, signal, spawn_worker_at, wait_exit, wait_for};
use serde_json::{json, Value};

const LONG: Duration = Duration::from_secs(60);

/// Runs the scenario on the database at `url` (with `extra` global flags,
/// e.g. `--schema`).
fn scenario(url: &str, extra: &[&str]) {
    let cmd = |args: &[&str]| -> Vec<String> {
        extra.iter().chain(args).map(|s| (*s).to_owned()).collect()
    };
    let j = |args: &[&str]| -> Value {
        let all = cmd(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        json_at(url, &all)
    };
    j(&["migrate"]);
    let enqueue = |args: &[&str]| -> String {
        let mut all = vec!["enqueue"];
        all.extend_from_slice(args);
        j(&all)["jobId"].as_str().unwrap().to_owned()
    };
    // A job before the first sample: the first sampler writes a baseline
    // before it, so the views count it too.
    enqueue(&["duraq.noop", "--queue", "mail"]);
    let first = j(&["stats"]);
    assert_matches("stats.json", &first);
    assert_eq!(first["range"], "1h");
    assert_eq!(first["bucketMs"], 60_000);
    assert_eq!(first["points"].as_array().unwrap().len(), 60);

    for _ in 0..3 {
        enqueue(&["duraq.noop", "--queue", "mail"]);
    }
    let bad_url = json!({"url": "http://127.0.0.1:9/closed"}).to_string();
    for _ in 0..2 {
        enqueue(&[
            "duraq.http",
            "--queue",
            "hooks",
            "--max-retries",
            "0",
            "--args",
            &bad_url,
        ]);
    }
    let later = enqueue(&["duraq.noop", "--queue", "mail", "--run-in", "1h"]);
    j(&["jobs", "cancel", &later]);

    let worker_args = cmd(&["--concurrency", "4"]);
    let worker_args: Vec<&str> = worker_args.iter().map(String::as_str).collect();
    let mut worker = spawn_worker_at(url, &worker_args);
    wait_for(LONG, "the jobs to finish", || {
        let c = j(&["counts"]);
        (c["counts"]["completed"].as_i64() == Some(4) && c["counts"]["failed"].as_i64() == Some(2))
            .then_some(())
    });
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());

    for since in ["1h", "24h", "7d"] {
        let all = j(&["stats", "--since", since]);
        assert_matches("stats.json", &all);
        let t = &all["totals"];
        assert_eq!(all["range"], since);
        assert_eq!(t["enqueued"], 7, "{since}: {all}");
        assert_eq!(t["completed"], 4, "{since}");
        assert_eq!(t["failed"], 2, "{since}");
        assert_eq!(t["cancelled"], 1, "{since}");
        assert_eq!(
            (t["retried"].clone(), t["orphaned"].clone()),
            (json!(0), json!(0))
        );
    }
    let hooks = j(&["stats", "--queue", "hooks"]);
    assert_eq!(hooks["queue"], "hooks");
    assert_eq!(hooks["totals"]["failed"], 2);
    assert_eq!(hooks["totals"]["completed"], 0);

    let table = cmd(&["stats"]);
    let table: Vec<&str> = table.iter().map(String::as_str).collect();
    let out = run_with_url(url, &table);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("FROM (UTC)"), "{text}");
    assert!(text.contains("COMPLETED") && text.contains("RETRIED"));
    assert!(
        text.lines().last().unwrap().starts_with("total, last 1h"),
        "{text}"
    );

    for (args, code) in [
        (vec!["stats", "--since", "2h"], "invalid-range"),
        (vec!["stats", "--queue", ""], "invalid-queue"),
    ] {
        let all = cmd(&args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = run_with_url(url, &all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("error[{code}]")),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn stats_sums_what_ran_on_sqlite() {
    let db = common::Db::new();
    scenario(&db.url(), &[]);
}

#[test]
fn stats_sums_what_ran_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL stats test");
        return;
    };
    let schema = format!("cli_stats_{}", std::process::id());
    scenario(&url, &["--schema", &schema]);
}
