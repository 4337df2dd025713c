//! `duraq web` under connection floods, as a real process with a small file
//! descriptor limit (`SECURITY.md`): clients that never finish their headers
//! are timed out and cannot hold more than the connection cap, live-update
//! streams are capped, and an authorized request is still served meanwhile.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use common::web::{get, spawn_web, spawn_web_with};
use common::*;

const TOKEN: &str = "a-test-token-of-32-bytes-0123456";

/// A connection that sent the start of a request and never its end.
fn half_open(addr: std::net::SocketAddr) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .ok()?;
    Some(stream)
}

#[test]
fn half_open_connections_beyond_the_cap_do_not_starve_an_authorized_request() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let limits = ["--max-connections", "16", "--header-read-timeout", "60s"];
    // 64 descriptors: without a cap, 100 idle connections exhaust them.
    let (child, addr) = spawn_web_with(&db, Some(TOKEN), &limits, |cmd| unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    });
    let held: Vec<TcpStream> = (0..100).filter_map(|_| half_open(addr)).collect();
    assert!(held.len() > 16, "the flood connected: {}", held.len());
    let bearer = format!("Bearer {TOKEN}");
    for _ in 0..3 {
        let (status, page) = get(addr, "/", &[("Authorization", &bearer)]);
        assert_eq!(status, 200, "{page}");
    }
    drop(held);
    child.stop();
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let (child, addr) = spawn_web(&db, None, &["--header-read-timeout", "1s"]);
    let mut slow = half_open(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut rest = Vec::new();
    // The server answers (408) or just closes; either way the read ends.
    slow.read_to_end(&mut rest)
        .expect("the server closes the connection");
    child.stop();
}

#[test]
fn live_update_streams_are_capped_and_pages_still_served() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    let (child, addr) = spawn_web(&db, None, &["--max-live-streams", "2"]);
    let open_stream = || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        (String::from_utf8_lossy(&head).into_owned(), s)
    };
    let (a, _keep_a) = open_stream();
    let (b, _keep_b) = open_stream();
    assert_eq!((a.as_str(), b.as_str()), ("HTTP/1.1 200", "HTTP/1.1 200"));
    let (c, _) = open_stream();
    assert_eq!(c, "HTTP/1.1 503");
    assert_eq!(get(addr, "/", &[]).0, 200);
    drop(_keep_a);
    // A stream slot frees when its client leaves.
    wait_for(Duration::from_secs(90), "a freed stream slot", || {
        let (status, _) = open_stream();
        (status == "HTTP/1.1 200").then_some(())
    });
    child.stop();
}
