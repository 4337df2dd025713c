//! The CLI against PostgreSQL, when `DATABASE_URL` names one (as `cargo xtask
//! test-all` arranges). Without it there is nothing to connect to and the test
//! says so and passes. Job names and keys are unique per run, so the shared
//! database may hold other suites' rows; counts are compared as differences.

mod common;

use std::future::poll_fn;
use std::sync::mpsc;
use std::time::Duration;

use common::{parse_one, run_with_url};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use serde_json::Value;
use tokio_postgres::AsyncMessage;

fn json(url: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run_with_url(url, &all);
    assert!(
        out.status.success(),
        "duraq {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)
}

#[test]
fn commands_work_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    let tag = format!("cli-{}-{}", std::process::id(), common_now());
    let migrated = json(&url, &["migrate"]);
    assert!(migrated["version"].as_i64().unwrap() >= 1, "{migrated}");

    let before = json(&url, &["counts"]);
    let (_runtime, announcements) = listen_to_default_schema(&url);
    let name = format!("{tag}.job");
    let id = json(
        &url,
        &["enqueue", &name, "--args", "[1]", "--idempotency-key", &tag],
    )["jobId"]
        .clone();
    // The process exited right after its commit; its NOTIFY (sent by a
    // background task) must have left before it did, or idle workers would only
    // notice the job at their next poll. Nothing else writes to this schema now.
    let payload = announcements
        .recv_timeout(Duration::from_secs(10))
        .expect("the enqueue's announcement arrives although its process exited");
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["w"], true, "{payload}");
    let replay = json(
        &url,
        &["enqueue", &name, "--args", "[1]", "--idempotency-key", &tag],
    );
    assert_eq!(replay["jobId"], id);
    let after = json(&url, &["counts"]);
    assert!(after["revision"].as_i64() > before["revision"].as_i64());

    let shown = json(&url, &["jobs", "show", id.as_str().unwrap()]);
    assert_eq!(shown["job"]["jobName"], name.as_str());
    let listed = json(&url, &["jobs", "list", "--name", &name]);
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);

    let key = format!("{tag}:reminder");
    let first = json(
        &url,
        &["schedule", "replace", &key, &name, "--run-in", "1h"],
    );
    let second = json(
        &url,
        &["schedule", "replace", &key, &name, "--run-in", "1h"],
    );
    assert_eq!(second["previousJobId"], first["jobId"]);
    assert_eq!(json(&url, &["schedule", "wake", &key])["outcome"], "woken");
    assert_eq!(
        json(&url, &["schedule", "cancel", &key])["outcome"],
        "cancelled"
    );
    assert_eq!(
        json(&url, &["jobs", "cancel", id.as_str().unwrap()])["job"]["status"],
        "cancelled"
    );

    let out = run_with_url(
        &url,
        &["jobs", "show", "00000000-0000-0000-0000-000000000000"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error[job-not-found]: "));
}

/// LISTENs on the default schema's channel; every payload is sent to the receiver.
fn listen_to_default_schema(url: &str) -> (tokio::runtime::Runtime, mpsc::Receiver<String>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel();
    runtime.block_on(async {
        let options = PostgresOptions {
            listen: false,
            ..PostgresOptions::default()
        };
        let store = PostgresStore::connect(url, options).await.unwrap();
        let channel = store.notify_channel().to_owned();
        let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(async move {
            while let Some(Ok(message)) = poll_fn(|cx| connection.poll_message(cx)).await {
                if let AsyncMessage::Notification(n) = message {
                    let _ = tx.send(n.payload().to_owned());
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .await
            .unwrap();
        // Keep the client (and so the LISTEN) alive as long as the runtime.
        tokio::spawn(async move {
            let _client = client;
            std::future::pending::<()>().await
        });
    });
    (runtime, rx)
}

fn common_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Runs `sql` on `url` (a fresh runtime per call keeps the test synchronous).
fn execute(url: &str, sql: &str) -> Vec<tokio_postgres::SimpleQueryMessage> {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client.simple_query(sql).await.unwrap()
    })
}

/// The first column of the first row `sql` returns.
fn scalar(url: &str, sql: &str) -> Option<String> {
    execute(url, sql).iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
        _ => None,
    })
}

#[test]
fn reading_commands_never_create_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    // A fresh, empty database of our own: nothing else may create tables in it.
    let name = format!("duraq_cli_read_{}", std::process::id());
    execute(&url, &format!("DROP DATABASE IF EXISTS {name}"));
    execute(&url, &format!("CREATE DATABASE {name}"));
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.dbname(&name);
    let (host, port) = (url_host(&url), config.get_ports()[0]);
    let fresh = format!("postgres://postgres@{host}:{port}/{name}");

    for args in [
        &["counts"][..],
        &["jobs", "list"],
        &["jobs", "show", "some-id"],
        &["schedule", "get", "k"],
        &["schedule", "cancel", "k"],
    ] {
        let out = run_with_url(&fresh, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error[database-not-found]: "), "{err}");
    }
    let count = scalar(
        &fresh,
        "SELECT count(*)::text FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert_eq!(
        count.as_deref(),
        Some("0"),
        "a reading command created tables"
    );

    // A database that does not exist at all.
    let out = run_with_url(
        &format!("postgres://postgres@{host}:{port}/{name}_missing"),
        &["counts"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error[database-not-found]: "), "{err}");

    // Writing commands still need no set-up; then reading works.
    json(&fresh, &["enqueue", "duraq.noop"]);
    assert_eq!(json(&fresh, &["counts"])["total"], 1);
    execute(&url, &format!("DROP DATABASE {name} WITH (FORCE)"));
}

/// The host of a `postgres://` URL (the tests' server listens on TCP).
fn url_host(url: &str) -> String {
    let config: tokio_postgres::Config = url.parse().unwrap();
    match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
    }
}

#[test]
fn jobs_cancel_from_another_process_stops_the_running_job_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    in_own_schema(
        &url,
        "cancel",
        common::a_cancelled_running_job_is_stopped_by_its_worker,
    );
}

/// Runs `case` against a freshly migrated schema of its own (no other suite's
/// jobs for its worker to run), dropped afterwards.
fn in_own_schema(url: &str, name: &str, case: fn(&str)) {
    let schema = format!("duraq_cli_{name}_{}", std::process::id());
    execute(url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    let sep = if url.contains('?') { '&' } else { '?' };
    let in_schema = format!("{url}{sep}schema={schema}");
    json(&in_schema, &["migrate"]);
    case(&in_schema);
    execute(url, &format!("DROP SCHEMA {schema} CASCADE"));
}

#[test]
fn prefetched_jobs_go_back_unstarted_when_the_worker_stops() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    in_own_schema(
        &url,
        "prefetch",
        common::prefetched_jobs_go_back_unstarted_at_shutdown,
    );
}

#[test]
fn flow_control_holds_in_a_worker_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    in_own_schema(&url, "flow", common::flow_control_in_a_worker);
}

#[test]
fn schema_flag_and_url_parameter_choose_the_schema() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL CLI test");
        return;
    };
    let schema = format!("duraq_cli_schema_{}", std::process::id());
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    execute(&url, &format!("CREATE SCHEMA {schema}"));
    // Nothing there yet: a reading command finds no duraq database in it.
    let out = run_with_url(&url, &["--schema", &schema, "counts"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error[database-not-found]: "), "{err}");

    json(&url, &["--schema", &schema, "migrate"]);
    json(&url, &["--schema", &schema, "enqueue", "duraq.noop"]);
    let sep = if url.contains('?') { '&' } else { '?' };
    let in_url = format!("{url}{sep}schema={schema}");
    assert_eq!(json(&in_url, &["counts"])["total"], 1);
    let count = scalar(
        &url,
        &format!(
            "SELECT count(*)::text FROM information_schema.tables \
             WHERE table_schema = '{schema}' AND table_name = 'duraq_jobs'"
        ),
    );
    assert_eq!(
        count.as_deref(),
        Some("1"),
        "the jobs table lives in {schema}"
    );
    execute(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}

/// A real `duraq worker` on PostgreSQL (its own schema) is listed by `duraq
/// workers` with its running job, `duraq queues` reports the due job whose name
/// it does not handle, and a graceful stop removes it.
#[test]
fn workers_are_visible_on_postgres() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set; skipping the PostgreSQL workers test");
        return;
    };
    let schema = format!("cli_workers_{}_{}", std::process::id(), common_now());
    let with_schema = |args: &[&str]| -> Vec<String> {
        ["--schema", schema.as_str()]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: &[&str]| {
        let all = with_schema(args);
        json(&url, &all.iter().map(String::as_str).collect::<Vec<_>>())
    };
    run(&["migrate"]);
    run(&["enqueue", "duraq.noopp"]);
    let long = run(&["enqueue", "duraq.sleep", "--args", r#"{"ms":60000}"#])["jobId"].clone();
    let mut worker = std::process::Command::new(common::bin())
        .arg("--database")
        .arg(&url)
        .args(with_schema(&[
            "worker",
            "--concurrency",
            "2",
            "--drain-timeout",
            "1s",
        ]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn worker");
    let listed = common::wait_for(
        Duration::from_secs(60),
        "the worker in `duraq workers`",
        || {
            let w = run(&["workers"])["workers"].as_array()?.first()?.clone();
            (w["runningCount"] == 1).then_some(w)
        },
    );
    assert_eq!(listed["pid"], worker.id(), "{listed}");
    assert_eq!(listed["state"], "alive");
    assert!(listed["queues"].is_null(), "every queue: {listed}");
    assert_eq!(listed["running"][0]["id"], long);
    let queues = run(&["queues"]);
    let unhandled: Vec<(&str, &str)> = queues["unhandled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["queue"].as_str().unwrap(), g["jobName"].as_str().unwrap()))
        .collect();
    assert_eq!(unhandled, [("default", "duraq.noopp")], "{queues}");

    common::signal(&worker, libc::SIGTERM);
    assert!(common::wait_exit(&mut worker, Duration::from_secs(60)).success());
    assert_eq!(run(&["workers"])["workers"], serde_json::json!([]));
    execute(&url, &format!("DROP SCHEMA {schema} CASCADE"));
}
