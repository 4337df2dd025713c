//! A local HTTP endpoint that `duraq.http` jobs post to: it records the `i`
//! of every request's JSON body with the time it arrived (ms since the Unix
//! epoch, the clock the store stamps jobs with), in arrival order, and the
//! most requests it served at once.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub struct Recorder {
    pub url: String,
    /// `(i, arrived at ms)` per request, in arrival order.
    pub arrivals: Arc<Mutex<Vec<(i64, i64)>>>,
    pub max_active: Arc<AtomicUsize>,
}

impl Recorder {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/step", listener.local_addr().unwrap());
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let (active, max_active) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (log, max) = (arrivals.clone(), max_active.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, active, max) = (log.clone(), active.clone(), max.clone());
                std::thread::spawn(move || record(stream, &log, &active, &max));
            }
        });
        Self {
            url,
            arrivals,
            max_active,
        }
    }

    /// The `i` of each request, in arrival order.
    pub fn order(&self) -> Vec<i64> {
        self.arrivals
            .lock()
            .unwrap()
            .iter()
            .map(|(i, _)| *i)
            .collect()
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap().as_millis() as i64
}

fn record(mut s: TcpStream, log: &Mutex<Vec<(i64, i64)>>, active: &AtomicUsize, max: &AtomicUsize) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let body = loop {
        let Ok(n) = s.read(&mut chunk) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len = (head.lines())
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            break buf[end + 4..end + 4 + len].to_vec();
        }
    };
    let at = now_ms();
    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
    max.fetch_max(now, Ordering::SeqCst);
    let i = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["i"].as_i64());
    log.lock().unwrap().push((i.unwrap_or(-1), at));
    active.fetch_sub(1, Ordering::SeqCst);
    let reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
    let _ = s.write_all(reply.as_bytes());
}
