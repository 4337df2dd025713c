//! A throwaway PostgreSQL server for tests and benchmarks.
//!
//! Why here and not in a test crate: `cargo xtask test-all`, `cargo xtask bench`
//! and `cargo xtask pg` all need one, and each test binary starting its own would
//! cost seconds per binary. The server lives in a private temp dir with a private
//! socket dir and port, so it never touches a system cluster, and it is stopped and
//! deleted by [`TempPostgres`]'s `Drop` — and, should this process be killed
//! (Ctrl-C, SIGKILL), by a small watchdog shell that notices its stdin pipe closing.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// A running throwaway server; dropping it stops the server and deletes its files.
pub struct TempPostgres {
    url: String,
    dir: PathBuf,
    bindir: PathBuf,
    as_postgres: bool,
    watchdog: Option<(Child, ChildStdin)>,
}

impl TempPostgres {
    /// `initdb` + `pg_ctl start` on a free port; returns once it accepts connections.
    /// Durability is off (fsync, synchronous_commit, full_page_writes): fast tests.
    pub fn start() -> Result<Self> {
        Self::start_with("-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    }

    /// Like [`TempPostgres::start`] with stock durability (fsync and synchronous
    /// commit on), for `cargo xtask bench`: no turning durability off to win.
    pub fn start_durable() -> Result<Self> {
        Self::start_with("")
    }

    fn start_with(durability: &str) -> Result<Self> {
        let bindir = find_bindir().context(
            "no PostgreSQL server binaries found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH); \
             install postgresql-15, set DATABASE_URL, or pass --skip-postgres",
        )?;
        let as_postgres = is_root()?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        let dir = std::env::temp_dir().join(format!("duraq-pg-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(dir.join("sock"))?;
        let mut server = Self {
            url: String::new(),
            dir,
            bindir,
            as_postgres,
            watchdog: None,
        };
        if as_postgres {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:")
                .arg(&server.dir))?;
        }
        server.watchdog = Some(server.spawn_watchdog()?);
        let data = server.dir.join("data");
        let mut initdb = server.pg_command("initdb");
        initdb
            .arg("-D")
            .arg(&data)
            .args(["--auth=trust", "-U", "postgres", "-E", "UTF8"]);
        initdb.args(["--locale=C", "--no-sync"]);
        run(&mut initdb).context("initdb failed")?;
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port()?;
            let opts = format!(
                "-c unix_socket_directories={} -c listen_addresses=127.0.0.1 -p {port} \
                 {durability} -c max_connections=400",
                server.dir.join("sock").display()
            );
            let mut ctl = server.pg_command("pg_ctl");
            ctl.arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(server.dir.join("server.log"));
            ctl.args(["-w", "-t", "60", "-o", &opts, "start"]);
            match run(&mut ctl) {
                Ok(()) => {
                    server.url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
                    return Ok(server);
                }
                Err(e) => last_error = Some(e),
            }
        }
        let log = std::fs::read_to_string(server.dir.join("server.log")).unwrap_or_default();
        Err(last_error.expect("at least one attempt"))
            .context(format!("pg_ctl start failed; log:\n{log}"))
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth, no password).
    pub fn url(&self) -> &str {
        &self.url
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

    /// The shell command that stops the server (if running) and deletes the dir.
    fn cleanup_script(&self) -> String {
        let prefix = if self.as_postgres {
            "runuser -u postgres -- "
        } else {
            ""
        };
        let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
        format!(
            "{prefix}{} -D {} -m immediate -w stop >/dev/null 2>&1; rm -rf {}",
            q(&self.bindir.join("pg_ctl")),
            q(&self.dir.join("data")),
            q(&self.dir)
        )
    }

    /// A shell that ignores SIGINT and cleans up once our end of its stdin closes,
    /// which happens however this process ends.
    fn spawn_watchdog(&self) -> Result<(Child, ChildStdin)> {
        let script = format!(
            "trap '' INT TERM HUP; cat >/dev/null; {}",
            self.cleanup_script()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning the cleanup watchdog")?;
        let stdin = child.stdin.take().context("watchdog stdin")?;
        Ok((child, stdin))
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        if let Some((mut child, mut stdin)) = self.watchdog.take() {
            let _ = stdin.flush();
            drop(stdin);
            let _ = child.wait();
        }
        if self.dir.exists() {
            eprintln!("warning: could not delete {}", self.dir.display());
        }
    }
}

/// The directory holding `initdb`/`pg_ctl`: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/*/bin`, else the first `PATH` entry with `initdb`.
pub fn find_bindir() -> Option<PathBuf> {
    let has_initdb = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_initdb(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, d)| has_initdb(d))
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Some(dir);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|d| has_initdb(d))
}

fn is_root() -> Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("running `id -u`")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("spawning {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} exited with {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
