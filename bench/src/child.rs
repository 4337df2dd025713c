//! Child processes: copies of this binary started as workers or producers.
//!
//! Why real processes: the figures users care about (a worker process draining a
//! table, producers in other processes, a worker's peak RSS, a wake-up crossing
//! processes) only exist between processes. The protocol is lines on stdio: the
//! child says `ready` once its store is open, starts on a `go` line, stops when
//! its stdin closes, and prints one JSON line with its results before exiting.
//! The `go` barrier keeps store opening (migrations, connections) out of timings.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use tokio::sync::mpsc;

/// How long a child may take to answer a protocol step.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// A running child process of this binary.
pub struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Child {
    /// Starts `duraq-bench <args…>` with piped stdin/stdout (stderr is shared).
    pub fn spawn(args: &[String]) -> Result<Self> {
        let exe = std::env::current_exe().context("locating duraq-bench")?;
        let mut process = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("spawning duraq-bench {args:?}"))?;
        let stdin = process.stdin.take();
        let stdout = process.stdout.take().context("child stdout")?;
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            process,
            stdin,
            lines,
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Waits for the next line and checks it is `expected`.
    pub async fn expect(&mut self, expected: &str) -> Result<()> {
        let line = self.next_line().await?;
        if line.trim() != expected {
            bail!("child {} said {line:?}, expected {expected:?}", self.pid());
        }
        Ok(())
    }

    async fn next_line(&mut self) -> Result<String> {
        match tokio::time::timeout(STEP_TIMEOUT, self.lines.recv()).await {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(anyhow!("child {} exited early", self.pid())),
            Err(_) => Err(anyhow!("child {} did not answer in time", self.pid())),
        }
    }

    /// Sends one line to the child.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("child stdin already closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// The process's peak resident set so far (`VmHWM` in `/proc/<pid>/status`), in KiB.
    pub fn peak_rss_kib(&self) -> Result<u64> {
        peak_rss_kib(&format!("/proc/{}/status", self.pid()))
    }

    /// The process's resident set now (`VmRSS` in `/proc/<pid>/status`), in KiB.
    pub fn rss_kib(&self) -> Result<u64> {
        status_kib(&format!("/proc/{}/status", self.pid()), "VmRSS:")
    }

    /// Waits for the child's JSON result line.
    pub async fn result(&mut self) -> Result<Value> {
        let line = self.next_line().await?;
        serde_json::from_str(&line)
            .with_context(|| format!("child {} printed {line:?}", self.pid()))
    }

    /// Closes stdin (the child's stop signal) and waits for a successful exit.
    pub async fn close(mut self) -> Result<()> {
        drop(self.stdin.take());
        let status = tokio::task::spawn_blocking(move || self.process.wait()).await??;
        if !status.success() {
            bail!("child exited with {status}");
        }
        Ok(())
    }

    /// Closes stdin, reads the result line, waits for the exit (workers).
    pub async fn finish(mut self) -> Result<Value> {
        drop(self.stdin.take());
        let value = self.result().await?;
        self.close().await?;
        Ok(value)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // A child left behind by an error must not keep running (or hold the database).
        if let Ok(None) = self.process.try_wait() {
            let _ = self.process.kill();
            let _ = self.process.wait();
        }
    }
}

/// `VmHWM` from a `/proc/.../status` file, in KiB.
pub fn peak_rss_kib(status_file: &str) -> Result<u64> {
    status_kib(status_file, "VmHWM:")
}

/// One `<field> <n> kB` line (`VmHWM:`, `VmRSS:`) of a `/proc/.../status` file, in KiB.
pub fn status_kib(status_file: &str, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(status_file)?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .with_context(|| format!("no {field} line"))?;
    let kib = line
        .split_whitespace()
        .nth(1)
        .with_context(|| format!("malformed {field} line"))?;
    Ok(kib.parse()?)
}

/// Child side: prints one protocol line and flushes.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

/// Child side: blocks until the parent sends a line (`true`) or closes stdin.
pub fn wait_line() -> bool {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
}

/// Child side: blocks until stdin is closed.
pub fn wait_eof() {
    while wait_line() {}
}
