//! A throwaway PostgreSQL server for a test that must restart its server (and
//! so cannot share the one behind `DATABASE_URL`): `initdb` (as the `postgres`
//! user when the test runs as root), `pg_ctl start` on a free port with a
//! private socket directory, stopped and deleted on drop, also when the test
//! process is killed (a watchdog shell), as `xtask/src/pg.rs` does for the gate.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// A throwaway PostgreSQL server in a private temp dir; dropping it stops the
/// server and deletes its files (through a watchdog shell that also does so
/// when this process is killed, as `xtask/src/pg.rs`).
pub struct TempServer {
    dir: PathBuf,
    bindir: PathBuf,
    as_postgres: bool,
    port: u16,
    watchdog: Option<(Child, ChildStdin)>,
}

impl TempServer {
    /// `initdb` + `pg_ctl start`; `None` (after saying why) when this machine
    /// has no server binaries and is not CI.
    pub fn start() -> Option<Self> {
        let Some(bindir) = find_bindir() else {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI=true but no PostgreSQL server binaries (initdb, pg_ctl) were found \
                 (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH)"
            );
            eprintln!("no PostgreSQL server binaries (initdb, pg_ctl): skipping the restart test");
            return None;
        };
        let as_postgres = is_root();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("duraq-pg-restart-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(dir.join("sock")).expect("create the server's dir");
        let mut server = Self {
            dir,
            bindir,
            as_postgres,
            port: 0,
            watchdog: None,
        };
        if as_postgres {
            // initdb refuses to run as root: the files belong to `postgres`.
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:")
                .arg(&server.dir));
        }
        server.watchdog = Some(server.spawn_watchdog());
        let mut initdb = server.pg_command("initdb");
        initdb.arg("-D").arg(server.data()).args([
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]);
        run(&mut initdb);
        // fsync off is safe here: an immediate shutdown kills the server's
        // processes, not the machine, so what was written to the kernel
        // survives. Synchronous commit stays on: with it off, a commit the
        // client was told about could be lost by the crash, which would be the
        // server's promise broken, not duraq's.
        let mut last = String::new();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let opts = format!(
                "-c unix_socket_directories={} -c listen_addresses=127.0.0.1 -p {port} \
                 -c fsync=off -c full_page_writes=off -c max_connections=200",
                server.dir.join("sock").display()
            );
            let out = server.ctl(&["-o", &opts, "start"]);
            if out.status.success() {
                server.port = port;
                return Some(server);
            }
            last = format!("{out:?}\n{}", server.log());
        }
        panic!("pg_ctl start failed five times: {last}");
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn pg_command(&self, program: &str) -> Command {
        let path = self.bindir.join(program);
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    /// `pg_ctl -D data -l server.log -w -t 60 <args>`. The log file matters:
    /// without it the server would inherit (and hold open) our output pipe.
    fn ctl(&self, args: &[&str]) -> std::process::Output {
        let mut ctl = self.pg_command("pg_ctl");
        ctl.arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60"])
            .args(args)
            .stdin(Stdio::null());
        ctl.output().expect("run pg_ctl")
    }

    /// A crash restart: every server process killed at once (no checkpoint,
    /// every connection cut, open transactions lost), then crash recovery
    /// from the WAL; returns once the server accepts connections again.
    pub fn crash_restart(&self) {
        let out = self.ctl(&["-m", "immediate", "restart"]);
        assert!(
            out.status.success(),
            "pg_ctl restart failed: {out:?}\n{}",
            self.log()
        );
    }

    /// A shell that ignores SIGINT and, once our end of its stdin closes
    /// (however this process ends), stops the server and deletes the dir.
    fn spawn_watchdog(&self) -> (Child, ChildStdin) {
        let prefix = if self.as_postgres {
            "runuser -u postgres -- "
        } else {
            ""
        };
        let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
        let script = format!(
            "trap '' INT TERM HUP; cat >/dev/null; \
             {prefix}{} -D {} -m immediate -w stop >/dev/null 2>&1; rm -rf {}",
            q(&self.bindir.join("pg_ctl")),
            q(&self.data()),
            q(&self.dir)
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the cleanup watchdog");
        let stdin = child.stdin.take().expect("watchdog stdin");
        (child, stdin)
    }
}

impl Drop for TempServer {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
        if self.dir.exists() {
            eprintln!("warning: could not delete {}", self.dir.display());
        }
    }
}

/// The directory holding `initdb` and `pg_ctl`: `pg_config --bindir`, else the
/// newest `/usr/lib/postgresql/*/bin`, else the first `PATH` entry with both.
fn find_bindir() -> Option<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_both(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, d)| has_both(d))
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Some(dir);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| has_both(d))
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn run(cmd: &mut Command) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} exited with {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
