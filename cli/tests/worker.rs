//! Worker processes against one SQLite file: built-in handlers, graceful drain on
//! SIGTERM, no lost job after SIGKILL, a queue cap honoured across processes, a
//! running job cancelled by another process stopped by its worker.
//! Every wait polls the database (or the test's own listener) with a deadline.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{signal, wait_exit, Db};
use serde_json::json;

const LONG: Duration = Duration::from_secs(60);

/// A local HTTP server answering every request with `status` after `hold`,
/// counting requests and the most it saw at once.
struct Listener {
    url: String,
    requests: Arc<AtomicUsize>,
    max_active: Arc<AtomicUsize>,
}

fn listen(status: u16, hold: Duration) -> Listener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let active = Arc::new(AtomicUsize::new(0));
    let max_active = Arc::new(AtomicUsize::new(0));
    let (r, a, m) = (requests.clone(), active.clone(), max_active.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (r, a, m) = (r.clone(), a.clone(), m.clone());
            std::thread::spawn(move || serve(stream, status, hold, &r, &a, &m));
        }
    });
    Listener {
        url,
        requests,
        max_active,
    }
}

fn serve(
    mut s: TcpStream,
    status: u16,
    hold: Duration,
    requests: &AtomicUsize,
    active: &AtomicUsize,
    max_active: &AtomicUsize,
) {
    // Read the head and a Content-Length body.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = s.read(&mut chunk) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                break;
            }
        }
    }
    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
    max_active.fetch_max(now, Ordering::SeqCst);
    requests.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(hold);
    active.fetch_sub(1, Ordering::SeqCst);
    let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    let _ = s.write_all(reply.as_bytes());
}

#[test]
fn builtin_handlers_run_and_http_errors_fail_attempts() {
    let db = Db::new();
    let ok = listen(200, Duration::ZERO);
    let broken = listen(500, Duration::ZERO);
    let noop = db.enqueue(&["duraq.noop", "--args", r#"{"anything":[1,2]}"#]);
    let sleep = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":50}"#]);
    // Args its handler would refuse are refused when enqueued instead.
    db.fails(
        &["enqueue", "duraq.sleep", "--args", r#"{"ms":"x"}"#],
        "invalid-args",
    );
    let hook = db.enqueue(&[
        "duraq.http",
        "--args",
        &json!({"url": ok.url, "body": {"a": 1}}).to_string(),
    ]);
    let get = db.enqueue(&[
        "duraq.http",
        "--args",
        &json!({"url": ok.url, "method": "GET"}).to_string(),
    ]);
    let failing = db.enqueue(&[
        "duraq.http",
        "--max-retries",
        "0",
        "--args",
        &json!({"url": broken.url}).to_string(),
    ]);
    let unreachable = db.enqueue(&[
        "duraq.http",
        "--max-retries",
        "1",
        "--args",
        &json!({"url": "http://127.0.0.1:9/closed"}).to_string(),
    ]);
    let mut worker = db.spawn_worker(&["--concurrency", "4", "--json"]);
    for id in [&noop, &sleep, &hook, &get] {
        db.wait_job(id, LONG, |j| j["status"] == "completed");
    }
    let failed = db.wait_job(&failing, LONG, |j| j["status"] == "failed");
    assert!(
        failed["lastError"].as_str().unwrap().contains("500"),
        "{failed}"
    );
    let retrying = db.wait_job(&unreachable, LONG, |j| {
        j["attempts"] == 1 && j["status"] == "queued"
    });
    assert!(
        retrying["lastError"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{retrying}"
    );
    assert_eq!(ok.requests.load(Ordering::SeqCst), 2);
    assert_eq!(broken.requests.load(Ordering::SeqCst), 1);

    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, LONG);
    assert!(status.success(), "{status:?}");
    let out = worker.wait_with_output().unwrap();
    let report = common::parse_one(&out.stdout);
    assert!(report["workerId"].is_string(), "{report}");
    assert!(
        report["report"]["completed"].as_u64().unwrap() >= 4,
        "{report}"
    );
}

#[test]
fn an_ephemeral_job_leaves_no_row_once_a_worker_completes_it() {
    let db = Db::new();
    let gone = db.enqueue(&["duraq.noop", "--no-keep-completed"]);
    assert_eq!(db.job(&gone)["keepCompleted"], false);
    let kept = db.enqueue(&["duraq.noop"]);
    assert_eq!(db.job(&kept).get("keepCompleted"), None, "true is left out");
    let mut worker = db.spawn_worker(&["--json"]);
    db.wait_job(&kept, LONG, |j| j["status"] == "completed");
    common::wait_for(LONG, "the ephemeral job's row is deleted", || {
        (!db.run(&["jobs", "show", &gone]).status.success()).then_some(())
    });
    db.fails(&["jobs", "show", &gone], "job-not-found");
    let counts = db.counts();
    assert_eq!(
        (&counts["counts"]["completed"], &counts["total"]),
        (&1.into(), &1.into())
    );
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    let out = worker.wait_with_output().unwrap();
    let report = common::parse_one(&out.stdout);
    assert_eq!(report["report"]["completed"], 2, "both ran: {report}");
}

#[test]
fn a_worker_ages_the_priorities_of_the_queues_it_is_told_to() {
    let db = Db::new();
    // Due since 2020: the worker's first pass finds it has earned every step.
    let past = [
        "--queue",
        "q",
        "--priority",
        "-5",
        "--run-at",
        "2020-01-01T00:00:00Z",
    ];
    let old = db.enqueue(&[&["app.report"][..], &past].concat());
    let elsewhere = db.enqueue(&["app.report", "--run-at", "2020-01-01T00:00:00Z"]);
    db.fails(
        &["worker", "--priority-aging", "q=1m:0"],
        "invalid-worker-config",
    );
    let mut worker = db.spawn_worker(&["--priority-aging", "q=1m:3", "--json"]);
    let aged = db.wait_job(&old, LONG, |j| j["agedSteps"] == 3);
    assert_eq!(aged["priority"], -2, "{aged}");
    assert_eq!(db.job(&elsewhere).get("agedSteps"), None, "another queue");
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
}

#[test]
fn sigterm_drains_running_jobs_and_exits_0() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":1500}"#]);
    let mut worker = db.spawn_worker(&["--drain-timeout", "30s"]);
    db.wait_job(&id, LONG, |j| j["status"] == "handed_off");
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, LONG);
    assert!(status.success(), "{status:?}");
    let job = db.job(&id);
    assert_eq!(
        job["status"], "completed",
        "the running job finished before exit: {job}"
    );
    assert_eq!(job["attempts"], 1);
}

#[test]
fn a_second_signal_stops_the_drain() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":60000}"#]);
    let mut worker = db.spawn_worker(&["--drain-timeout", "120s"]);
    db.wait_job(&id, LONG, |j| j["status"] == "handed_off");
    // Wait until the worker says it is draining, then signal again.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = worker.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    signal(&worker, libc::SIGTERM);
    let deadline = std::time::Instant::now() + LONG;
    loop {
        let line = rx
            .recv_timeout(deadline - std::time::Instant::now())
            .expect("drain log line");
        if line.contains("signal again") {
            break;
        }
    }
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, LONG);
    assert_eq!(status.code(), Some(1), "{status:?}");
    let rest: Vec<String> = rx.iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.starts_with("error[drain-interrupted]: ")),
        "{rest:?}"
    );
    assert_eq!(db.status(&id), "handed_off", "left for stale recovery");
}

#[test]
fn prefetched_jobs_go_back_unstarted_when_the_worker_stops() {
    let db = Db::new();
    db.json(&["migrate"]);
    common::prefetched_jobs_go_back_unstarted_at_shutdown(&db.url());
}

#[test]
fn jobs_cancel_from_another_process_stops_the_running_job() {
    let db = Db::new();
    db.json(&["migrate"]);
    common::a_cancelled_running_job_is_stopped_by_its_worker(&db.url());
}

#[test]
fn schedule_commands_stop_a_running_owner_only_with_stop_running() {
    let db = Db::new();
    let sleep = r#"{"ms":600000}"#;
    let a = db.json(&["schedule", "replace", "k1", "duraq.sleep", "--args", sleep])["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    let c = db.json(&["schedule", "replace", "k2", "duraq.sleep", "--args", sleep])["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut worker = db.spawn_worker(&[
        "--json",
        "--concurrency",
        "2",
        "--drain-timeout",
        "20m",
        "--cancel-grace",
        "20m",
    ]);
    db.wait_job(&a, LONG, |j| j["status"] == "handed_off");
    db.wait_job(&c, LONG, |j| j["status"] == "handed_off");
    // Without the flag: only the key moves, the running owner runs on.
    let kept = db.json(&["schedule", "replace", "k1", "duraq.noop", "--run-in", "1h"]);
    assert_eq!(kept["previousJobId"], a.as_str());
    assert_eq!(kept["previousStatus"], "handed_off");
    assert_eq!(kept["previousStopped"], false);
    assert_eq!(db.status(&a), "handed_off");
    // With it: the running owner is cancelled and its worker stops it.
    let stopped = db.json(&["schedule", "cancel", "k2", "--stop-running"]);
    assert_eq!(stopped["outcome"], "stopped", "{stopped}");
    assert_eq!(stopped["jobId"], c.as_str());
    assert_eq!(db.status(&c), "cancelled");
    assert_eq!(
        db.json(&["jobs", "cancel", &a])["job"]["status"],
        "cancelled"
    );
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, LONG);
    let out = worker.wait_with_output().unwrap();
    assert!(status.success(), "{status:?}");
    let report = common::parse_one(&out.stdout)["report"].clone();
    assert_eq!(
        (&report["cancelled"], &report["cancelAborted"]),
        (&json!(2), &json!(0)),
        "{report}"
    );
}

#[test]
fn sigkill_mid_job_loses_nothing() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":4000}"#]);
    let mut doomed = db.spawn_worker(&["--stale-after", "60s"]);
    let claimed = db.wait_job(&id, LONG, |j| j["status"] == "handed_off");
    signal(&doomed, libc::SIGKILL);
    let status = wait_exit(&mut doomed, LONG);
    assert!(!status.success());
    assert_eq!(
        db.status(&id),
        "handed_off",
        "the killed worker never reported"
    );

    let mut rescuer = db.spawn_worker(&["--stale-after", "1s"]);
    let done = db.wait_job(&id, Duration::from_secs(90), |j| j["status"] == "completed");
    assert_ne!(done["workerId"], claimed["workerId"], "{done}");
    assert_eq!(
        done["attempts"], 2,
        "the lost attempt counts as a failed one: {done}"
    );
    signal(&rescuer, libc::SIGTERM);
    assert!(wait_exit(&mut rescuer, LONG).success());
}

#[test]
fn queue_cap_holds_across_worker_processes() {
    let db = Db::new();
    let hook = listen(200, Duration::from_millis(300));
    let args = json!({"url": hook.url}).to_string();
    let ids: Vec<String> = (0..8)
        .map(|_| db.enqueue(&["duraq.http", "--queue", "capped", "--args", &args]))
        .collect();
    let cap = ["--concurrency", "4", "--queue-cap", "capped=2"];
    let mut workers = [db.spawn_worker(&cap), db.spawn_worker(&cap)];
    for id in &ids {
        db.wait_job(id, LONG, |j| j["status"] == "completed");
    }
    assert_eq!(hook.requests.load(Ordering::SeqCst), 8);
    let max = hook.max_active.load(Ordering::SeqCst);
    assert!((1..=2).contains(&max), "at most 2 at once, saw {max}");
    for w in &mut workers {
        signal(w, libc::SIGTERM);
        assert!(wait_exit(w, LONG).success());
    }
}

/// Jobs costing 2 of a key's cap of 4 run at most two at once across two
/// worker processes of four slots each (eight slots, and eight would fit by
/// count), and a job costing the whole cap runs too.
#[test]
fn a_jobs_cost_holds_across_worker_processes() {
    let db = Db::new();
    let hook = listen(200, Duration::from_millis(300));
    let args = json!({"url": hook.url}).to_string();
    let keyed = |cost: &str| {
        let flags = [
            "--concurrency-key",
            "api",
            "--max-concurrency",
            "4",
            "--cost",
            cost,
        ];
        db.enqueue(&[&["duraq.http", "--args", &args][..], &flags].concat())
    };
    let mut ids: Vec<String> = (0..6).map(|_| keyed("2")).collect();
    ids.push(keyed("4"));
    let mut workers = [
        db.spawn_worker(&["--concurrency", "4"]),
        db.spawn_worker(&["--concurrency", "4"]),
    ];
    for id in &ids {
        db.wait_job(id, LONG, |j| j["status"] == "completed");
    }
    assert_eq!(hook.requests.load(Ordering::SeqCst), 7);
    let max = hook.max_active.load(Ordering::SeqCst);
    assert!(
        (1..=2).contains(&max),
        "at most two of cost 2 at once, saw {max}"
    );
    for w in &mut workers {
        signal(w, libc::SIGTERM);
        assert!(wait_exit(w, LONG).success());
    }
}

#[test]
fn worker_rejects_bad_flags_before_running() {
    let db = Db::new();
    for (args, code) in [
        (&["worker", "--stale-after", "soon"][..], "invalid-duration"),
        (&["worker", "--drain-timeout", "x"], "invalid-duration"),
        (&["worker", "--queue-cap", "mail"], "invalid-queue-cap"),
        (
            &["worker", "--priority-aging", "mail=soon"],
            "invalid-worker-config",
        ),
        (&["worker", "--concurrency", "0"], "invalid-worker-config"),
    ] {
        db.fails(args, code);
    }
}

/// A real worker process is listed by `duraq workers` (what it registered, its
/// pid, alive, its running job) while it runs and is gone after a graceful
/// stop; `duraq queues` reports the due jobs it does not handle: a typo'd name,
/// and a queue it does not serve.
#[test]
fn workers_lists_a_running_worker_and_queues_reports_what_no_worker_handles() {
    let db = Db::new();
    let typo = db.enqueue(&["duraq.noopp"]);
    let elsewhere = db.enqueue(&["duraq.noop", "--queue", "other"]);
    let long = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":60000}"#]);
    let mut worker = db.spawn_worker(&[
        "--queues",
        "default",
        "--concurrency",
        "3",
        "--drain-timeout",
        "1s",
    ]);
    let listed = common::wait_for(LONG, "the worker and its job in `duraq workers`", || {
        let v = db.json(&["workers"]);
        let w = v["workers"].as_array()?.first()?.clone();
        (w["runningCount"] == 1).then_some(w)
    });
    assert_eq!(listed["pid"], worker.id(), "{listed}");
    assert_eq!(listed["state"], "alive", "{listed}");
    assert_eq!(listed["queues"], json!(["default"]), "{listed}");
    assert_eq!(listed["slots"], 3, "{listed}");
    assert!(!listed["host"].as_str().unwrap().is_empty(), "{listed}");
    let names = listed["jobNames"].as_array().unwrap();
    assert!(names.contains(&json!("duraq.sleep")) && !names.contains(&json!("duraq.noopp")));
    assert_eq!(
        listed["running"],
        json!([{"id": long, "jobName": "duraq.sleep"}]),
        "{listed}"
    );
    let table = db.run(&["workers", "--jobs"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success() && text.contains(" alive "), "{text}");
    assert!(text.lines().any(|l| l.contains(&long)), "{text}");

    let queues = db.json(&["queues"]);
    let unhandled: Vec<(&str, &str, i64)> = queues["unhandled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let field = |k: &str| g[k].as_str().unwrap();
            (field("queue"), field("jobName"), g["due"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(
        unhandled,
        [("default", "duraq.noopp", 1), ("other", "duraq.noop", 1)],
        "{queues}"
    );
    let out = db.run(&["queues"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let warnings: Vec<&str> = text.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{text}");
    assert!(warnings[0].contains("duraq.noopp"), "{text}");
    assert_eq!(db.status(&typo), "queued");
    assert_eq!(db.status(&elsewhere), "queued");

    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    assert_eq!(
        db.json(&["workers"])["workers"],
        json!([]),
        "a graceful stop removes the worker"
    );
    assert_eq!(
        db.status(&long),
        "queued",
        "returned after the drain deadline"
    );
}
