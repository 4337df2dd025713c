//! `duraq demo` end to end (small), and `counts --watch` following another
//! process's writes.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, parse_one, signal, wait_exit, Db};

#[test]
fn demo_drains_a_small_mix_and_summarizes() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["demo", "--jobs", "300", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no progress bar or noise off a terminal: {out:?}"
    );
    let s = parse_one(&out.stdout);
    let counts = &s["counts"];
    assert_eq!(s["total"], 300, "{s}");
    assert_eq!(counts["queued"], 0);
    assert_eq!(counts["handedOff"], 0);
    assert_eq!(counts["failed"], 0);
    assert_eq!(counts["orphaned"], 0);
    assert!(
        counts["cancelled"].as_i64().unwrap() > 0,
        "keyed replacements cancel: {s}"
    );
    assert_eq!(s["mix"]["idempotentReplays"], s["mix"]["idempotent"]);
    assert!(s["mix"]["flaky"].as_i64().unwrap() > 0);
    assert!(
        s["attempts"].as_i64().unwrap() > counts["completed"].as_i64().unwrap(),
        "flaky jobs retried: {s}"
    );
    assert!(s["attemptsPerSecond"].as_f64().unwrap() > 0.0);
    assert!(s["busySeconds"].as_f64().unwrap() <= s["drainSeconds"].as_f64().unwrap());
    assert!(s["latencyMs"]["p99"].as_i64().unwrap() >= s["latencyMs"]["p50"].as_i64().unwrap());
    assert!(dir.path().join("duraq-demo.db").exists());

    // The human form prints a table and the latency line; the file is replaced.
    let out = Command::new(bin())
        .args(["demo", "--jobs", "60", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("completed") && text.contains("p99"), "{text}");
    let db = format!("sqlite:{}", dir.path().join("duraq-demo.db").display());
    let snap = parse_one(&common::run_with_url(&db, &["counts", "--json"]).stdout);
    assert_eq!(snap["total"], 60, "a fresh file each run: {snap}");
}

#[test]
fn counts_watch_follows_other_processes() {
    let db = Db::new();
    db.json(&["migrate"]);
    let mut watch = Command::new(bin())
        .args(["--database", &db.url(), "counts", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Lines arrive through a channel so every wait has a deadline.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next_line = || -> serde_json::Value {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a snapshot line in time");
        serde_json::from_str(&line).unwrap()
    };
    let first = next_line();
    assert_eq!(first["total"], 0);
    db.enqueue(&["x"]);
    // The next line arrives once the watcher polls the new revision.
    let next = next_line();
    assert_eq!(next["total"], 1);
    assert!(next["revision"].as_i64() > first["revision"].as_i64());
    signal(&watch, libc::SIGINT);
    assert!(wait_exit(&mut watch, Duration::from_secs(30)).success());
}

#[test]
fn demo_honours_an_explicit_database_and_never_overwrites_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("here.db");
    let url = format!("sqlite:{}", path.display());
    let out = Command::new(bin())
        .args(["--database", &url, "demo", "--jobs", "30", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        parse_one(&out.stdout)["database"],
        path.display().to_string()
    );
    let snap = parse_one(&common::run_with_url(&url, &["counts", "--json"]).stdout);
    assert_eq!(
        snap["total"], 30,
        "the demo wrote where it was told: {snap}"
    );

    // A second run would overwrite it: refused, and the data is untouched.
    let out = Command::new(bin())
        .args(["--database", &url, "demo", "--jobs", "30", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        parse_one(&out.stderr)["error"]["code"],
        "demo-database-exists"
    );
    let again = parse_one(&common::run_with_url(&url, &["counts", "--json"]).stdout);
    assert_eq!(again, snap);

    let out = Command::new(bin())
        .args(["--database", "postgres://h/db", "demo", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        parse_one(&out.stderr)["error"]["code"],
        "invalid-database-url"
    );
}
