//! The dashboard's guard against a hostile web page and a hostile store, through
//! a real `duraq web` process (`SECURITY.md`): a rebound domain (`Host` other
//! than a loopback name) reads and changes nothing, the `?token=` login never
//! redirects off the dashboard, a token too short to be a secret is refused at
//! start, and `/metrics` escapes label values.

mod common;

use common::web::{get, header, request, spawn_web};
use common::*;

const TOKEN: &str = "a-test-token-of-32-bytes-0123456";

/// The form token of a page, as a browser would submit it.
fn csrf(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a form token") + 19;
    page[at..].split('"').next().unwrap().to_string()
}

#[test]
fn a_rebound_domain_reads_and_changes_nothing_without_a_token() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let (child, addr) = spawn_web(&db, None, &["--allowed-host", "jobs.internal"]);
    let port = addr.port();
    let evil = format!("evil.example:{port}");
    let origin = format!("http://{evil}");
    for path in ["/", "/queues", "/jobs", "/metrics", "/events", "/nowhere"] {
        let (status, answer) = get(addr, path, &[("Host", &evil)]);
        assert!(matches!(status, 403 | 421), "{path}: {answer}");
        assert!(!answer.contains("name=\"csrf\""), "{path}: {answer}");
    }
    // The form token a loopback visitor sees, replayed through the rebound name.
    let (_, page) = get(addr, "/queues", &[]);
    let form = format!("csrf={}", csrf(&page));
    let form_headers = [
        ("Host", evil.as_str()),
        ("Origin", origin.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let (status, answer) = request(addr, "POST", "/queues/default/pause", &form_headers, &form);
    assert!(matches!(status, 403 | 421), "{answer}");
    let queues = db.json(&["queues"]);
    assert_eq!(queues["queues"][0]["paused"], false, "{queues}");

    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
        format!("jobs.internal:{port}"),
    ] {
        let (status, answer) = get(addr, "/queues", &[("Host", &host)]);
        assert_eq!(status, 200, "{host}: {answer}");
    }
    child.stop();
}

#[test]
fn the_token_login_never_redirects_off_the_dashboard() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let (child, addr) = spawn_web(&db, Some(TOKEN), &[]);
    for path in [
        "//evil.example/x",
        "/\\evil.example/x",
        "/\\/evil.example",
        "///evil.example",
    ] {
        let (status, answer) = get(addr, &format!("{path}?token={TOKEN}"), &[]);
        assert_eq!(status, 303, "{path}: {answer}");
        assert_eq!(header(&answer, "location"), Some("/"), "{path}: {answer}");
    }
    let (_, answer) = get(addr, &format!("/jobs?status=failed&token={TOKEN}"), &[]);
    assert_eq!(header(&answer, "location"), Some("/jobs?status=failed"));
    child.stop();
}

#[test]
fn a_token_too_short_to_be_a_secret_is_refused_at_start() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    for short in ["e", "fifteen-bytes!!"] {
        let out = std::process::Command::new(bin())
            .arg("--database")
            .arg(db.url())
            .args(["web", "--listen", "127.0.0.1:0"])
            .env("DURAQ_WEB_TOKEN", short)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error[web-token-too-short]:"),
            "{stderr}"
        );
    }
}

#[test]
fn metrics_escape_quotes_and_backslashes_in_label_values() {
    let db = Db::new();
    db.enqueue(&["send\"mail", "--queue", "m\"q"]);
    db.enqueue(&["back\\slash", "--queue", "c:\\jobs"]);
    let (child, addr) = spawn_web(&db, None, &[]);
    for accept in ["*/*", "application/openmetrics-text; version=1.0.0"] {
        let (status, scrape) = get(addr, "/metrics", &[("Accept", accept)]);
        assert_eq!(status, 200, "{scrape}");
        for line in [
            "duraq_queue_jobs{queue=\"m\\\"q\",status=\"queued\"} 1",
            "duraq_queue_jobs{queue=\"c:\\\\jobs\",status=\"queued\"} 1",
        ] {
            assert!(scrape.contains(line), "{accept}: no {line} in\n{scrape}");
        }
    }
    child.stop();
}
