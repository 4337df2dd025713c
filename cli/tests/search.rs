//! `jobs list` search flags, id prefixes and their error paths,
//! on a real SQLite file and, when `DATABASE_URL` is set, on
//! PostgreSQL in a schema of its own (otherwise that test says so and passes).

mod common;

use std::time::Duration;

use common::{json_at, run_with_url, signal, spawn_worker_at, wait_exit, wait_for, Db};
use serde_json::Value;

fn ids(list: &Value) -> Vec<String> {
    let jobs = list["jobs"].as_array().expect("jobs");
    jobs.iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect()
}

fn fails(url: &str, args: &[&str], code: &str) {
    let out = run_with_url(url, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "duraq {args:?}: {stderr}");
    assert!(
        stderr.contains(&format!("error[{code}]")),
        "duraq {args:?}: {stderr}"
    );
}

/// The whole scenario on the database at `url`.
fn search_scenario(url: &str) {
    json_at(url, &["migrate"]);
    let enqueue = |args: &[&str]| -> String {
        let mut all = vec!["enqueue"];
        all.extend_from_slice(args);
        json_at(url, &all)["jobId"].as_str().unwrap().to_owned()
    };
    let vip = enqueue(&[
        "mail.send",
        "--queue",
        "mail",
        "--args",
        r#"{"user":{"id":7},"tags":["vip"]}"#,
    ]);
    let plain = enqueue(&[
        "mail.send",
        "--queue",
        "mail",
        "--args",
        r#"{"user":{"id":8}}"#,
    ]);
    let bad = enqueue(&[
        "duraq.http",
        "--args",
        r#"{"url":"http://127.0.0.1:1/closed"}"#,
        "--max-retries",
        "0",
    ]);
    let cancelled = enqueue(&["report", "--args", "[1,2]"]);
    json_at(url, &["jobs", "cancel", &cancelled]);

    // A real worker fails the bad job with its handler's error.
    let mut worker = spawn_worker_at(url, &["--queues", "default"]);
    wait_for(Duration::from_secs(30), "the bad job to fail", || {
        let job = json_at(url, &["jobs", "show", &bad])["job"].clone();
        (job["status"] == "failed").then_some(())
    });
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, Duration::from_secs(30)).success());

    let list = |args: &[&str]| -> Value {
        let mut all = vec!["jobs", "list"];
        all.extend_from_slice(args);
        json_at(url, &all)
    };
    assert_eq!(
        ids(&list(&["--status", "failed,cancelled"])),
        [cancelled.as_str(), bad.as_str()]
    );
    assert_eq!(
        ids(&list(&["--args-contains", r#"{"user":{"id":7}}"#])),
        [vip.as_str()]
    );
    assert_eq!(
        ids(&list(&[
            "--args-contains",
            r#"{"tags":["vip"]}"#,
            "--queue",
            "mail"
        ])),
        [vip.as_str()]
    );
    assert_eq!(
        ids(&list(&["--args-contains", "[2]"])),
        [cancelled.as_str()]
    );
    assert_eq!(
        ids(&list(&["--error-contains", "DURAQ.HTTP: REQUEST TO"])),
        [bad.as_str()]
    );
    assert_eq!(
        ids(&list(&["--finished-after", "1h"])),
        [cancelled.as_str(), bad.as_str()]
    );
    assert_eq!(
        ids(&list(&["--finished-before", "1h"])),
        Vec::<String>::new()
    );
    assert_eq!(
        ids(&list(&[
            "--created-after",
            "2000-01-01T00:00:00Z",
            "--name",
            "mail.send"
        ])),
        [plain.as_str(), vip.as_str()]
    );
    assert_eq!(
        ids(&list(&["--created-before", "1h"])),
        Vec::<String>::new()
    );

    // A budget smaller than the candidates stops early and says where to go on.
    let first = list(&["--args-contains", r#"{"user":{}}"#, "--scan-limit", "2"]);
    let resume = first["resume"].as_str().expect("stopped early").to_owned();
    assert_eq!(first["scanned"], 2);
    let rest = list(&[
        "--args-contains",
        r#"{"user":{}}"#,
        "--scan-limit",
        "2",
        "--after",
        &resume,
    ]);
    let mut found = ids(&first);
    found.extend(ids(&rest));
    let rest_resume = rest["resume"].as_str().map(str::to_owned);
    if let Some(r) = rest_resume {
        found.extend(ids(&list(&[
            "--args-contains",
            r#"{"user":{}}"#,
            "--after",
            &r,
        ])));
    }
    assert_eq!(
        found,
        [plain.as_str(), vip.as_str()],
        "each match once, newest first"
    );
    let table = run_with_url(
        url,
        &[
            "jobs",
            "list",
            "--args-contains",
            r#"{"user":{}}"#,
            "--scan-limit",
            "2",
        ],
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains(&format!("--after {resume}")), "{text}");
    // The failed list shows the error's first line.
    let failed = run_with_url(url, &["jobs", "list", "--status", "failed"]);
    assert!(String::from_utf8_lossy(&failed.stdout).contains("duraq.http: request to"));

    // Prefixes: a unique one names the job; a shared one is ambiguous.
    let shown = json_at(url, &["jobs", "show", &bad[..bad.len() - 4]]);
    assert_eq!(shown["job"]["id"], bad.as_str());
    let common_len = vip
        .bytes()
        .zip(plain.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let shared = &vip[..common_len.max(1)];
    fails(url, &["jobs", "show", shared], "ambiguous-id");
    fails(url, &["jobs", "cancel", shared], "ambiguous-id");
    fails(url, &["jobs", "show", "zzzz"], "job-not-found");
    fails(url, &["jobs", "show", "a b"], "invalid-id");
    let retried = json_at(url, &["jobs", "retry", &bad[..bad.len() - 2]]);
    assert_eq!(retried["job"]["status"], "queued");

    // Bad flags are refused before anything is read or written.
    fails(
        url,
        &["jobs", "list", "--args-contains", "{nope"],
        "invalid-args",
    );
    fails(
        url,
        &["jobs", "cancel", "--args-contains", "{nope"],
        "invalid-args",
    );
    fails(
        url,
        &["jobs", "list", "--created-after", "yesterday"],
        "invalid-time",
    );
    fails(
        url,
        &[
            "jobs",
            "delete",
            "--finished-before",
            "2026-13-01T00:00:00Z",
        ],
        "invalid-time",
    );
    fails(url, &["jobs", "list", "--scan-limit", "0"], "invalid-limit");
    assert_eq!(
        json_at(url, &["jobs", "show", &vip])["job"]["status"],
        "queued"
    );
    assert_eq!(
        json_at(url, &["jobs", "show", &plain])["job"]["status"],
        "queued"
    );

    // The bulk actions take the same filters.
    let dry = json_at(
        url,
        &[
            "jobs",
            "cancel",
            "--args-contains",
            r#"{"user":{"id":8}}"#,
            "--dry-run",
        ],
    );
    assert_eq!(
        (dry["matched"].as_i64(), dry["changed"].as_i64()),
        (Some(1), Some(1))
    );
    let done = json_at(
        url,
        &[
            "jobs",
            "cancel",
            "--queue",
            "mail",
            "--args-contains",
            r#"{"user":{"id":8}}"#,
        ],
    );
    assert_eq!(done["changed"], 1);
    assert_eq!(
        json_at(url, &["jobs", "show", &plain])["job"]["status"],
        "cancelled"
    );
    assert_eq!(
        json_at(url, &["jobs", "show", &vip])["job"]["status"],
        "queued"
    );
}

#[test]
fn search_flags_and_prefixes_on_sqlite() {
    let db = Db::new();
    search_scenario(&db.url());
}

#[test]
fn search_flags_and_prefixes_on_postgres() {
    let Ok(base) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL search test");
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!(
        "{base}{sep}schema=cli_search_{}_{nanos}",
        std::process::id()
    );
    search_scenario(&url);
}

#[test]
fn usage_errors_exit_2() {
    let db = Db::new();
    for args in [
        &["jobs", "retry"][..],
        &["jobs", "delete", "some-id", "--error-contains", "x"][..],
    ] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "duraq {args:?}: {out:?}");
    }
}
