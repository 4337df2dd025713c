//! `duraq web` as a real process on a real TCP port: it refuses a non-loopback
//! address without a token (before opening anything), serves the dashboard and
//! `/metrics` from an existing database, and requires the token when one is set.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::web::{get, request, spawn_web};
use common::*;

#[test]
fn refuses_a_public_address_without_a_token_and_creates_nothing() {
    let db = Db::new();
    let out = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .args(["web", "--listen", "0.0.0.0:0"])
        .env_remove("DURAQ_WEB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error[web-token-required]:"), "{stderr}");
    assert!(!db.path.exists(), "no database created");
}

#[test]
fn serves_pages_and_metrics_from_an_existing_database() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.noop"]);
    let (web, addr) = spawn_web(&db, None, &["--read-only"]);
    let (status, page) = get(addr, "/", &[]);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<main data-page=\"overview\">"));
    assert!(page.contains("data-count=\"queued\">1<"), "{page}");
    let (_, job) = get(addr, &format!("/jobs/{id}"), &[]);
    assert!(job.contains("data-field=\"status\""));
    assert!(!job.contains("data-action="), "read-only: no actions");
    let (status, metrics) = get(addr, "/metrics", &[]);
    assert_eq!(status, 200);
    assert!(
        metrics.contains("duraq_jobs{status=\"queued\"} 1"),
        "{metrics}"
    );
    web.stop();
}

#[test]
fn a_token_guards_every_request() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let token = "t0ken-for-the-test-4b1d";
    let (web, addr) = spawn_web(&db, Some(token), &[]);
    assert_eq!(get(addr, "/", &[]).0, 401);
    assert_eq!(
        get(addr, "/metrics", &[("Authorization", "Bearer wrong")]).0,
        401
    );
    let (status, page) = get(addr, "/", &[("Authorization", &format!("Bearer {token}"))]);
    assert_eq!(status, 200);
    let body = page.split("\r\n\r\n").nth(1).unwrap();
    assert!(!body.contains(token), "the token is never rendered");
    let (status, login) = get(addr, &format!("/jobs?token={token}"), &[]);
    assert_eq!(status, 303);
    assert!(
        login.to_ascii_lowercase().contains("location: /jobs\r\n"),
        "{login}"
    );
    assert!(login.contains("HttpOnly; SameSite=Strict"), "{login}");
    let cookie = format!("duraq_token={token}");
    assert_eq!(get(addr, "/jobs", &[("Cookie", &cookie)]).0, 200);
    web.stop();
}

/// The HTTP API of `duraq web` checks args as `duraq enqueue` does,
/// `duraq.mail.deliver`'s payload included, on jobs and workflows alike.
#[test]
fn the_api_refuses_the_args_the_program_refuses() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let (web, addr) = spawn_web(&db, None, &[]);
    let json_type = [("Content-Type", "application/json")];
    let mail = r#"{"job": "duraq.mail.deliver", "args": {"payload": {}}}"#;
    let workflow = format!(
        r#"{{"name": "w", "steps": [{{"step": "a", {}}}]}}"#,
        &mail[1..mail.len() - 1]
    );
    for (path, body) in [("/api/v1/jobs", mail), ("/api/v1/workflows", &workflow)] {
        let (status, answer) = request(addr, "POST", path, &json_type, body);
        assert_eq!(status, 422, "{answer}");
        assert!(answer.contains(r#""code":"invalid-args""#), "{answer}");
    }
    let sleep =
        r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.sleep", "args": {"ms": 1}}]}"#;
    let (status, answer) = request(addr, "POST", "/api/v1/workflows", &json_type, sleep);
    assert_eq!(status, 201, "{answer}");
    web.stop();
}

#[test]
fn a_worker_serves_its_metrics_and_refuses_a_public_address_without_a_token() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.noop"]);
    let out = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .args(["worker", "--metrics-listen", "0.0.0.0:0"])
        .env_remove("DURAQ_WEB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error[web-token-required]:"), "{stderr}");

    let mut child = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .args([
            "worker",
            "--concurrency",
            "3",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .env_remove("DURAQ_WEB_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("metrics on http://") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "worker exited");
    }
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    db.wait_job(&id, Duration::from_secs(60), |j| j["status"] == "completed");
    let (status, metrics) = get(addr, "/metrics", &[]);
    assert_eq!(status, 200);
    assert!(metrics.contains("duraq_worker_slots 3"), "{metrics}");
    assert!(
        metrics.contains("duraq_queue_jobs{queue=\"default\",status=\"completed\"} 1"),
        "{metrics}"
    );
    signal(&child, libc::SIGTERM);
    assert!(wait_exit(&mut child, Duration::from_secs(30)).success());
}
