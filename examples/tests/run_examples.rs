//! Runs every example to completion and checks what it printed, so `cargo test`
//! (and so `cargo xtask test-all`) fails when an example breaks.
//!
//! Cargo gives tests no path to example binaries (`CARGO_BIN_EXE_*` is for
//! `[[bin]]` targets only). `cargo test` without target filters builds every
//! example of the package before any test runs, into `<target>/<profile>/examples/`
//! beside this test's own `deps/` folder, so that binary is used when it is newer
//! than its source. Otherwise (`cargo test --test run_examples` after editing an
//! example) the examples are built here with one `cargo build --examples` and each
//! executable is taken from cargo's JSON messages. Each example runs as its own
//! process, with a deadline.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(120);

/// The executable of example `name`.
fn example(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.rs"));
    let exe = std::env::current_exe().ok().and_then(|test| {
        let profile_dir = test.parent()?.parent()?; // <target>/<profile>/deps/<this test>
        Some(
            profile_dir
                .join("examples")
                .join(format!("{name}{}", std::env::consts::EXE_SUFFIX)),
        )
    });
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    match exe {
        Some(exe) if modified(&exe).is_some() && modified(&exe) >= modified(&source) => exe,
        _ => built_by_cargo()
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("example {name} was not built")),
    }
}

/// Example name → executable, from one `cargo build --examples` of this package.
fn built_by_cargo() -> &'static HashMap<String, PathBuf> {
    static BUILT: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args([
                "build",
                "--examples",
                "--message-format=json-render-diagnostics",
            ])
            .args(["--manifest-path", manifest])
            .stderr(Stdio::inherit());
        // Cargo set these for this test process only; some build scripts track
        // them (ring: CARGO_MANIFEST_DIR), and a changed value rebuilds them.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let per_test = [
                "CARGO_MANIFEST_",
                "CARGO_PKG_",
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "CARGO_BIN_NAME",
            ];
            if per_test.iter().any(|p| key.starts_with(p)) {
                cargo.env_remove(key.as_ref());
            }
        }
        let out = cargo.output().expect("run cargo build --examples");
        assert!(out.status.success(), "cargo build --examples failed");
        let mut built = HashMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let is_example = msg["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "example"));
            if let (true, Some(exe)) = (is_example, msg["executable"].as_str()) {
                let name = msg["target"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                built.insert(name, PathBuf::from(exe));
            }
        }
        built
    })
}

/// Runs example `name`, asserts it exits 0 within the deadline, returns its stdout.
fn run(name: &str) -> String {
    let exe = example(name);
    let started = Instant::now();
    let mut child = Command::new(&exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", exe.display()));
    // Read both pipes on threads so that a chatty example cannot block on them.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("example {name} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    println!(
        "--- {name} ({:.2}s)\n{stdout}{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        status.success(),
        "example {name} exited with {status}\n{stdout}\n{stderr}"
    );
    stdout
}

fn assert_prints(stdout: &str, expected: &[&str]) {
    for line in expected {
        assert!(stdout.contains(line), "expected {line:?} in:\n{stdout}");
    }
}

#[test]
fn web_service_commits_one_job_and_rolls_back_the_other() {
    let out = run("web_service");
    assert_prints(
        &out,
        &[
            "POST /signup ada@example.com: 201 Created",
            "POST /signup bob@example.com: 422 Unprocessable Entity",
            "worker: sent the welcome mail of user 1",
            "after both requests: 1 user, 1 send_welcome job",
            "shut down: the worker completed 1 job(s)",
        ],
    );
}

#[test]
fn worker_retries_snoozes_runs_periodic_jobs_and_drains() {
    let out = run("worker");
    assert_prints(
        &out,
        &[
            "charge order 42: attempt 1 failed, retry in 100ms",
            "charged order 42 on attempt 3",
            "export 7 ready after 3 checks, on attempt 1",
            "cleanup: removed drafts older than 7 days",
            "periodic nightly-cleanup: next tick enqueued",
            "queue images: at most",
            "worker stopped:",
        ],
    );
}

#[test]
fn a_signup_fans_out_and_fans_in_to_a_summary_of_outputs() {
    let out = run("signup_flow");
    assert_prints(
        &out,
        &[
            "enqueued 5 jobs: 1 queued, 4 pending",
            "signup_summary completed, it read:",
            r#"send_welcome completed {"messageId":"msg-1"}"#,
            r#"provision_storage completed {"bucket":"users/42","quotaGb":5}"#,
            "score_risk failed: risk service unavailable",
            "store: 4 completed, 1 failed, 0 pending",
        ],
    );
}

#[test]
fn mail_is_delivered_once_per_operation() {
    let out = run("mail");
    assert_prints(
        &out,
        &[
            "generic SMTP, required operation: refused, mail-delivery-idempotency-unsupported",
            "replay of order-42:receipt: Replayed(",
            "same id, other content: refused, mail-delivery-idempotency-conflict",
            "is completed after 1 attempt(s)",
            "the SMTP listener received 1 message:",
            "Resend-Idempotency-Key: order-42:receipt",
        ],
    );
}

#[test]
fn tenant_preflight_maps_outcomes_to_exit_codes() {
    let out = run("tenant_preflight");
    assert_prints(
        &out,
        &[
            r#"{"hasPendingMigrations":true,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":1,"tenantCount":2}"#,
            "exit 3",
            "globex: pending versions [2]",
            r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":0,"tenantCount":2}"#,
            "error[tenant-unreachable]",
            "exit 1",
        ],
    );
}
