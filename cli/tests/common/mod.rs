//! Helpers shared by the CLI integration tests: run the built `duraq` binary
//! against a temporary SQLite file and read its JSON answers.
#![allow(dead_code)]

pub mod recorder;
pub mod schema;
pub mod web;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Db {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Db {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("duraq.db");
        Self { dir, path }
    }

    pub fn url(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    /// Runs `duraq --database <this db> <args>`.
    pub fn run(&self, args: &[&str]) -> Output {
        run_with_url(&self.url(), args)
    }

    /// Runs a command that must succeed with `--json` and returns its one JSON object.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "duraq {args:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        parse_one(&out.stdout)
    }

    /// Runs a command that must fail with exit 1 and `code`, in both error forms,
    /// and checks it changed nothing.
    pub fn fails(&self, args: &[&str], code: &str) {
        let before = self.path.exists().then(|| self.counts());
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(1), "duraq {args:?}: {out:?}");
        assert!(
            out.stdout.is_empty(),
            "nothing on stdout after an error: {out:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.trim_end(),
            stderr.lines().next().unwrap_or(""),
            "one line: {stderr}"
        );
        assert!(
            stderr.starts_with(&format!("error[{code}]: ")),
            "duraq {args:?}: {stderr}"
        );

        let mut with_json = args.to_vec();
        with_json.push("--json");
        let out = self.run(&with_json);
        assert_eq!(out.status.code(), Some(1), "duraq {with_json:?}: {out:?}");
        let err = parse_one(&out.stderr);
        assert_eq!(err["error"]["code"], code, "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{err}"
        );

        match before {
            Some(before) => assert_eq!(self.counts(), before, "duraq {args:?} wrote something"),
            None => assert!(!self.path.exists(), "duraq {args:?} created the database"),
        }
    }

    /// Runs a command that must succeed with `--json`, `stdin` on its standard
    /// input, and returns its one JSON object.
    pub fn json_with_stdin(&self, args: &[&str], stdin: &str) -> Value {
        let mut child = Command::new(bin())
            .arg("--database")
            .arg(self.url())
            .args(args)
            .arg("--json")
            .env_remove("DURAQ_DATABASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run duraq");
        let mut input = child.stdin.take().expect("stdin");
        std::io::Write::write_all(&mut input, stdin.as_bytes()).expect("write stdin");
        drop(input);
        let out = child.wait_with_output().expect("wait for duraq");
        assert!(out.status.success(), "duraq {args:?}: {out:?}");
        parse_one(&out.stdout)
    }

    /// The `counts --json` snapshot.
    pub fn counts(&self) -> Value {
        self.json(&["counts"])
    }

    pub fn enqueue(&self, args: &[&str]) -> String {
        let mut all = vec!["enqueue"];
        all.extend_from_slice(args);
        let v = self.json(&all);
        v["jobId"].as_str().expect("jobId").to_string()
    }

    pub fn job(&self, id: &str) -> Value {
        self.json(&["jobs", "show", id])["job"].clone()
    }

    pub fn status(&self, id: &str) -> String {
        self.job(id)["status"].as_str().unwrap().to_string()
    }

    /// Starts `duraq worker <args>` in the background.
    pub fn spawn_worker(&self, args: &[&str]) -> Child {
        spawn_worker_at(&self.url(), args)
    }

    /// Polls `cond` on the job until it holds or `timeout` passes.
    pub fn wait_job(&self, id: &str, timeout: Duration, cond: impl Fn(&Value) -> bool) -> Value {
        wait_for(timeout, &format!("job {id}"), || {
            let job = self.job(id);
            cond(&job).then_some(job)
        })
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_duraq")
}

pub fn run_with_url(url: &str, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("--database")
        .arg(url)
        .args(args)
        .env_remove("DURAQ_DATABASE_URL")
        .output()
        .expect("run duraq")
}

/// Exactly one JSON object on one line.
pub fn parse_one(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line of JSON, got {text:?}");
    let v: Value = serde_json::from_str(lines[0]).expect("valid JSON");
    assert!(v.is_object(), "{v}");
    v
}

/// Polls `f` every 50 ms until it returns `Some`, panicking after `timeout`.
pub fn wait_for<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `sig` to `child` (SIGTERM, SIGKILL, …).
pub fn signal(child: &Child, sig: i32) {
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", child.id());
}

/// Waits for `child` to exit within `timeout`.
pub fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    wait_for(timeout, "process exit", || {
        child.try_wait().expect("try_wait")
    })
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Runs `duraq --database <url> <args> --json`, which must succeed, and returns
/// its one JSON object.
pub fn json_at(url: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run_with_url(url, &all);
    assert!(
        out.status.success(),
        "duraq {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)
}

/// Starts `duraq worker <args>` on the database at `url` (not the
/// environment's), its output piped.
pub fn spawn_worker_at(url: &str, args: &[&str]) -> Child {
    Command::new(bin())
        .arg("--database")
        .arg(url)
        .arg("worker")
        .args(args)
        .env_remove("DURAQ_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker")
}

/// Stops a `duraq worker --json` with SIGTERM, asserts it exited cleanly within
/// `patience`, and returns the totals it printed (`report`).
fn stop_json_worker(mut worker: Child, patience: Duration) -> Value {
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, patience);
    let out = worker.wait_with_output().unwrap();
    assert!(
        status.success(),
        "{status:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_one(&out.stdout)["report"].clone()
}

/// The multi-process cancel promise on the database at `url`: a `duraq worker`
/// process runs a ten-minute `duraq.sleep`; another process runs `duraq jobs
/// cancel`; the worker's handler stops. Its drain deadline and cancel grace are
/// both far beyond the test's patience, so the worker can exit in time only if
/// the running handler itself stopped on the cancellation; its totals then
/// count one cancelled attempt, none aborted, none completed or returned.
pub fn a_cancelled_running_job_is_stopped_by_its_worker(url: &str) {
    let patience = Duration::from_secs(60);
    let id = json_at(
        url,
        &["enqueue", "duraq.sleep", "--args", r#"{"ms":600000}"#],
    )["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    let worker = spawn_worker_at(
        url,
        &["--json", "--drain-timeout", "20m", "--cancel-grace", "20m"],
    );
    let job = |id: &str| json_at(url, &["jobs", "show", id])["job"].clone();
    let running = wait_for(patience, "the job to start", || {
        let j = job(&id);
        (j["status"] == "handed_off").then_some(j)
    });
    let cancelled = json_at(url, &["jobs", "cancel", &id])["job"].clone();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // Asked to stop now, the worker drains: it can only finish in time if the
    // cancelled handler stopped (whether it learned before or during the drain).
    let report = stop_json_worker(worker, patience);
    assert_eq!(report["claimed"], 1, "{report}");
    assert_eq!(report["cancelled"], 1, "{report}");
    assert_eq!(
        report["cancelAborted"], 0,
        "the handler stopped itself: {report}"
    );
    assert_eq!(report["completed"], 0, "{report}");
    assert_eq!(report["returnedToQueue"], 0, "{report}");
    assert_eq!(report["lostLeases"], 0, "{report}");
    let after = job(&id);
    assert_eq!(after["status"], "cancelled", "{after}");
    assert_eq!(after["attempts"], 1, "{after}");
    assert_eq!(after["workerId"], running["workerId"], "{after}");
    assert!(
        after["lastError"].is_null(),
        "the late report changed nothing: {after}"
    );
}

/// The prefetch promise on the database at `url`: a `duraq worker --concurrency 1
/// --prefetch 3` process holds four of five long `duraq.sleep` jobs (one
/// running, three waiting in the worker, all `handed_off`). On SIGTERM the three
/// waiting ones go back to `queued` at once and unstarted; the running one is
/// given back at the (short) drain deadline. No job used an attempt.
pub fn prefetched_jobs_go_back_unstarted_at_shutdown(url: &str) {
    let patience = Duration::from_secs(60);
    let ids: Vec<String> = (0..5)
        .map(|_| {
            json_at(
                url,
                &["enqueue", "duraq.sleep", "--args", r#"{"ms":600000}"#],
            )["jobId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let worker = spawn_worker_at(
        url,
        &[
            "--json",
            "--concurrency",
            "1",
            "--prefetch",
            "3",
            "--drain-timeout",
            "1s",
        ],
    );
    let counts = wait_for(patience, "four jobs held", || {
        let c = json_at(url, &["counts"])["counts"].clone();
        (c["handedOff"] == 4).then_some(c)
    });
    assert_eq!(counts["queued"], 1, "{counts}");
    let report = stop_json_worker(worker, patience);
    assert_eq!(report["claimed"], 4, "{report}");
    assert_eq!(report["returnedUnstarted"], 3, "{report}");
    assert_eq!(report["returnedToQueue"], 1, "{report}");
    assert_eq!(report["completed"], 0, "{report}");
    for id in &ids {
        let job = json_at(url, &["jobs", "show", id])["job"].clone();
        assert_eq!(job["status"], "queued", "{job}");
        assert_eq!(job["attempts"], 0, "no attempt used: {job}");
        assert!(job["workerId"].is_null(), "{job}");
    }
}

/// Flow control through a real worker process on the database at `url`: an
/// ephemeral job leaves no row once completed, an expired job of a paused
/// queue is cancelled by the worker's recovery pass (`cancelReason`
/// `expired`), a job due since 2020 in an aged queue has earned its steps,
/// and a job costing its key's whole cap runs.
pub fn flow_control_in_a_worker(url: &str) {
    let patience = Duration::from_secs(60);
    let id = |v: Value| v["jobId"].as_str().unwrap().to_string();
    let gone = id(json_at(
        url,
        &["enqueue", "duraq.noop", "--no-keep-completed"],
    ));
    let past = "2020-01-01T00:00:00Z";
    let held = [
        "enqueue",
        "duraq.noop",
        "--queue",
        "held",
        "--expires-at",
        past,
    ];
    let expired = id(json_at(url, &held));
    let aged = [
        "enqueue",
        "app.report",
        "--queue",
        "aged",
        "--priority",
        "-5",
        "--run-at",
        past,
    ];
    let aged = id(json_at(url, &aged));
    let cap = [
        "--concurrency-key",
        "api",
        "--max-concurrency",
        "3",
        "--cost",
        "3",
    ];
    let costly = id(json_at(
        url,
        &[&["enqueue", "duraq.noop"][..], &cap].concat(),
    ));
    json_at(url, &["queues", "pause", "held"]);
    let worker = spawn_worker_at(url, &["--json", "--priority-aging", "aged=1m:4"]);
    let show = |job: &str| run_with_url(url, &["jobs", "show", job, "--json"]);
    let job = |job: &str| parse_one(&show(job).stdout)["job"].clone();
    wait_for(patience, "the costly job completed", || {
        (job(&costly)["status"] == "completed").then_some(())
    });
    wait_for(patience, "the ephemeral job's row deleted", || {
        (!show(&gone).status.success()).then_some(())
    });
    let cancelled = wait_for(patience, "the expired job cancelled", || {
        Some(job(&expired)).filter(|j| j["status"] == "cancelled")
    });
    assert_eq!(cancelled["cancelReason"], "expired", "{cancelled}");
    let raised = wait_for(patience, "the aged job raised", || {
        Some(job(&aged)).filter(|j| j["agedSteps"] == 4)
    });
    assert_eq!(raised["priority"], -1, "{raised}");
    let report = stop_json_worker(worker, patience);
    assert_eq!(report["completed"], 2, "{report}");
}
