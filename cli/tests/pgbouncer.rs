//! The `duraq` program behind PgBouncer, the way PostgreSQL is usually
//! deployed: every kind of command and a worker, in session mode, in
//! transaction mode with `max_prepared_statements` (PgBouncer ≥ 1.21), and in
//! transaction mode without it (`DURAQ_PREPARED_STATEMENTS=off`). Each test
//! starts its own PgBouncer in front of the server `DATABASE_URL` names (as
//! `cargo xtask test-all` arranges) and works in a schema of its own.
//!
//! In transaction mode a worker's LISTEN hears nothing: without
//! `DURAQ_LISTEN_URL` it must say so once and poll; with it (the direct server
//! address) it must not complain. Without `DATABASE_URL` or a PgBouncer binary
//! the tests say so and pass, except under `CI=true`, where the machine must
//! have both (`.ci/run` installs them).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::{parse_one, signal, wait_exit, wait_for};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Session,
    /// Transaction pooling with PgBouncer keeping prepared statements.
    TransactionPrepared,
    /// Transaction pooling, no prepared statements kept.
    Transaction,
}

impl Mode {
    fn tag(self) -> &'static str {
        match self {
            Mode::Session => "session",
            Mode::TransactionPrepared => "txprep",
            Mode::Transaction => "tx",
        }
    }
}

/// A PgBouncer process, stopped on drop.
struct Bouncer {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        // Under `runuser` the child is runuser itself: stop PgBouncer by its pidfile.
        if let Ok(pid) = std::fs::read_to_string(self.dir.path().join("pgbouncer.pid")) {
            if let Ok(pid) = pid.trim().parse::<i32>() {
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `pgbouncer --version`'s (major, minor).
fn version(bin: &Path) -> Option<(u32, u32)> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.lines().next()?.strip_prefix("PgBouncer ")?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// A PgBouncer binary for `mode` and its version: `DURAQ_PGBOUNCER` if set,
/// else Debian's (/usr/sbin) first and then /usr/local/bin, where `.ci/run`
/// builds a newer one; keeping prepared statements needs 1.21.
fn binary(mode: Mode) -> Option<(PathBuf, (u32, u32))> {
    let candidates: Vec<PathBuf> = match std::env::var_os("DURAQ_PGBOUNCER") {
        Some(p) => vec![p.into()],
        None => [
            "/usr/sbin/pgbouncer",
            "/usr/local/bin/pgbouncer",
            "/usr/bin/pgbouncer",
        ]
        .iter()
        .map(PathBuf::from)
        .collect(),
    };
    let need = if mode == Mode::TransactionPrepared {
        (1, 21)
    } else {
        (1, 0)
    };
    candidates
        .into_iter()
        .filter_map(|p| version(&p).map(|v| (p, v)))
        .find(|(_, v)| *v >= need)
}

/// PgBouncer's URL and the server's own (same database) for `mode`, or `None`
/// (with a note) when this machine has neither and is not CI.
fn setup(mode: Mode) -> Option<(String, String, Bouncer)> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let Ok(url) = std::env::var("DATABASE_URL") else {
        assert!(!ci, "CI=true but DATABASE_URL is not set");
        eprintln!("DATABASE_URL is not set; skipping the PgBouncer test");
        return None;
    };
    let Some((bin, version)) = binary(mode) else {
        assert!(
            !ci,
            "CI=true but no PgBouncer binary for {mode:?} (.ci/run installs one)"
        );
        eprintln!("no PgBouncer binary for {mode:?}; skipping");
        return None;
    };
    let config: tokio_postgres::Config = url.parse().expect("DATABASE_URL parses");
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => "127.0.0.1".to_string(),
    };
    let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres").to_string();
    let mut dbname = config.get_dbname().unwrap_or(&user).to_string();
    if mode == Mode::TransactionPrepared {
        // A database of its own with the JIT off, as docs/postgres.md says to
        // do behind PgBouncer: then duraq has nothing to warn about.
        let jit_off = format!("duraq_pgb_{}", std::process::id());
        admin(
            &url,
            &format!("DROP DATABASE IF EXISTS {jit_off}; CREATE DATABASE {jit_off}; ALTER DATABASE {jit_off} SET jit = off"),
        );
        dbname = jit_off;
    }
    eprintln!(
        "{mode:?}: PgBouncer {}.{} at {}",
        version.0,
        version.1,
        bin.display()
    );
    let bouncer = start(&bin, version, mode, &host, upstream_port, &user);
    let pooled = format!("postgres://{user}@127.0.0.1:{}/{dbname}", bouncer.port);
    let direct = format!("postgres://{user}@{host}:{upstream_port}/{dbname}");
    Some((pooled, direct, bouncer))
}

/// Runs `sql` on the server itself (not through PgBouncer).
fn admin(url: &str, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to DATABASE_URL");
        let driver = tokio::spawn(connection);
        for statement in sql.split("; ") {
            client.batch_execute(statement).await.expect(statement);
        }
        drop(client);
        let _ = driver.await;
    });
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(
    bin: &Path,
    version: (u32, u32),
    mode: Mode,
    host: &str,
    upstream_port: u16,
    user: &str,
) -> Bouncer {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let d = dir.path();
    let (pool_mode, prepared) = match mode {
        Mode::Session => ("session", 0),
        Mode::TransactionPrepared => ("transaction", 200),
        Mode::Transaction => ("transaction", 0),
    };
    // 1.21 knows the setting (and later versions keep 200 by default); older
    // ones keep no prepared statements at all.
    let prepared_line = if version >= (1, 21) {
        format!("max_prepared_statements = {prepared}\n")
    } else {
        String::new()
    };
    std::fs::write(d.join("users.txt"), format!("\"{user}\" \"\"\n")).unwrap();
    std::fs::write(
        d.join("pgbouncer.ini"),
        format!(
            "[databases]\n* = host={host} port={upstream_port}\n\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {auth}\npool_mode = {pool_mode}\n\
             {prepared_line}default_pool_size = 20\nmax_client_conn = 500\n\
             pidfile = {pid}\nlogfile = {log}\n",
            auth = d.join("users.txt").display(),
            pid = d.join("pgbouncer.pid").display(),
            log = d.join("pgbouncer.log").display(),
        ),
    )
    .unwrap();
    let ini = d.join("pgbouncer.ini");
    // PgBouncer refuses to run as root.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let child = cmd
        .arg(&ini)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pgbouncer");
    let bouncer = Bouncer { dir, child, port };
    wait_for(Duration::from_secs(20), "PgBouncer to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    bouncer
}

/// One test's way to run `duraq` through the pooler.
struct Cli {
    url: String,
    env: Vec<(&'static str, String)>,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(common::bin());
        cmd.arg("--database")
            .arg(&self.url)
            .args(args)
            .env_remove("DURAQ_DATABASE_URL")
            .env_remove("DURAQ_LISTEN_URL")
            .env_remove("DURAQ_PREPARED_STATEMENTS");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run duraq")
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "duraq {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        parse_one(&out.stdout)
    }

    fn worker(&self) -> Child {
        self.command(&["worker", "--concurrency", "4"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    }

    fn completed(&self) -> i64 {
        self.json(&["counts"])["counts"]["completed"]
            .as_i64()
            .unwrap_or(0)
    }
}

/// Stops a worker and returns its stderr.
fn stop(mut worker: Child) -> String {
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, Duration::from_secs(30));
    let out = worker.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(status.success(), "worker exit {status:?}: {stderr}");
    stderr
}

/// The warning a worker gives when its LISTEN hears nothing.
const DEAF: &str = "hears nothing";

fn commands_and_a_worker_work(mode: Mode) {
    let Some((pooled, direct, _bouncer)) = setup(mode) else {
        return;
    };
    let schema = format!("pgb_{}_{}", mode.tag(), std::process::id());
    let mut env = vec![("DURAQ_SCHEMA", schema.clone())];
    if mode == Mode::Transaction {
        env.push(("DURAQ_PREPARED_STATEMENTS", "off".into()));
    }
    let cli = Cli { url: pooled, env };

    let migrate = cli.run(&["migrate", "--json"]);
    assert!(migrate.status.success(), "{migrate:?}");
    let migrated = parse_one(&migrate.stdout);
    assert_eq!(
        migrated["version"].as_i64(),
        Some(duraq_store_postgres::SCHEMA_VERSION)
    );
    // PgBouncer refuses the startup parameter that turns the JIT off: said
    // once, unless the database has it off already.
    let jit_warnings = String::from_utf8_lossy(&migrate.stderr)
        .matches("refuses the `options` startup parameter")
        .count();
    let expected = usize::from(mode != Mode::TransactionPrepared);
    assert_eq!(jit_warnings, expected, "{migrate:?}");
    let mut ids = Vec::new();
    for i in 0..10 {
        let key = format!("k{i}");
        let id = cli.json(&["enqueue", "duraq.noop", "--idempotency-key", &key])["jobId"]
            .as_str()
            .unwrap()
            .to_string();
        ids.push(id);
    }
    let replay = cli.json(&["enqueue", "duraq.noop", "--idempotency-key", "k0"]);
    assert_eq!(replay["jobId"].as_str(), Some(ids[0].as_str()));
    let later = cli.json(&["enqueue", "duraq.noop", "--run-in", "1h"])["jobId"]
        .as_str()
        .unwrap()
        .to_string();
    let keyed = cli.json(&[
        "schedule",
        "replace",
        "pgb-key",
        "duraq.noop",
        "--run-in",
        "2h",
    ]);
    assert!(keyed["jobId"].is_string(), "{keyed}");
    assert_eq!(cli.json(&["counts"])["counts"]["queued"].as_i64(), Some(12));
    assert_eq!(
        cli.json(&["jobs", "show", &ids[3]])["job"]["status"].as_str(),
        Some("queued")
    );
    let listed = cli.json(&["jobs", "list", "--status", "queued"]);
    assert_eq!(
        listed["jobs"].as_array().map(Vec::len),
        Some(12),
        "{listed}"
    );
    assert!(cli.run(&["queues", "--json"]).status.success());
    assert!(cli.run(&["queues", "pause", "elsewhere"]).status.success());
    assert!(cli.run(&["queues", "resume", "elsewhere"]).status.success());
    assert!(cli.run(&["stats", "--json"]).status.success());
    let cancelled = cli.json(&["jobs", "cancel", &later]);
    assert_eq!(cancelled["job"]["status"], "cancelled", "{cancelled}");

    // A worker without a direct LISTEN address.
    let worker = cli.worker();
    wait_for(
        Duration::from_secs(60),
        "the queued jobs to complete",
        || (cli.completed() == 10).then_some(()),
    );
    // Jobs enqueued while it idles are picked up too (by LISTEN or by polling).
    cli.json(&["enqueue", "duraq.noop"]);
    wait_for(Duration::from_secs(60), "the late job to complete", || {
        (cli.completed() == 11).then_some(())
    });
    let stderr = stop(worker);
    let warnings = stderr.matches(DEAF).count();
    if mode == Mode::Session {
        assert_eq!(warnings, 0, "session mode LISTENs: {stderr}");
    } else {
        assert_eq!(warnings, 1, "said once, then polls: {stderr}");
        // With the direct address the worker listens there and says nothing.
        let listening = Cli {
            env: [cli.env.clone(), vec![("DURAQ_LISTEN_URL", direct)]].concat(),
            url: cli.url.clone(),
        };
        let worker = listening.worker();
        listening.json(&["enqueue", "duraq.noop"]);
        wait_for(
            Duration::from_secs(60),
            "a job with DURAQ_LISTEN_URL",
            || (listening.completed() == 12).then_some(()),
        );
        let stderr = stop(worker);
        assert_eq!(stderr.matches(DEAF).count(), 0, "{stderr}");
    }
    let retried = cli.json(&["jobs", "retry", &later]);
    assert_eq!(retried["job"]["status"], "queued", "{retried}");
    let pruned = cli.run(&["jobs", "prune", "--completed-older-than", "0s"]);
    assert!(
        pruned.status.success(),
        "{}",
        String::from_utf8_lossy(&pruned.stderr)
    );
}

#[test]
fn session_mode() {
    commands_and_a_worker_work(Mode::Session);
}

#[test]
fn transaction_mode_with_max_prepared_statements() {
    commands_and_a_worker_work(Mode::TransactionPrepared);
}

#[test]
fn transaction_mode_without_prepared_statements() {
    commands_and_a_worker_work(Mode::Transaction);
}
