//! `duraq web` as a child process on 127.0.0.1:0, and raw HTTP/1.1 requests to
//! it, for the tests that check the dashboard through the real binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{bin, signal, wait_exit, Db};

/// A running `duraq web`, killed when dropped (a failed test leaves no
/// server behind); [`WebProcess::stop`] is the clean end a test asserts.
pub struct WebProcess {
    child: Child,
}

impl WebProcess {
    /// SIGTERM; the server must exit with success.
    pub fn stop(mut self) {
        signal(&self.child, libc::SIGTERM);
        assert!(wait_exit(&mut self.child, Duration::from_secs(30)).success());
    }
}

impl Drop for WebProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `duraq web --listen 127.0.0.1:0 <extra>` with `token` as
/// `DURAQ_WEB_TOKEN` and reads the address it announces.
pub fn spawn_web(db: &Db, token: Option<&str>, extra: &[&str]) -> (WebProcess, SocketAddr) {
    spawn_web_with(db, token, extra, |_| {})
}

/// [`spawn_web`] with a last change to the command (a resource limit).
pub fn spawn_web_with(
    db: &Db,
    token: Option<&str>,
    extra: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> (WebProcess, SocketAddr) {
    let mut cmd = Command::new(bin());
    cmd.arg("--database")
        .arg(db.url())
        .args(["web", "--listen", "127.0.0.1:0"])
        .args(extra);
    cmd.env_remove("DURAQ_WEB_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(t) = token {
        cmd.env("DURAQ_WEB_TOKEN", t);
    }
    adjust(&mut cmd);
    let mut child = cmd.spawn().expect("spawn duraq web");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let child = WebProcess { child };
    let mut line = String::new();
    while !line.contains("http://") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "duraq web exited before serving"
        );
    }
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    (child, addr.parse().unwrap())
}

/// One request over a fresh connection with `Host: <addr>` unless `headers`
/// name another: (status, the whole answer with its head).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    (status, text)
}

/// One GET: (status, the whole answer).
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    request(addr, "GET", path, headers, "")
}

/// The value of header `name` in an answer's head (lower-cased name match).
pub fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
