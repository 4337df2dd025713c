//! The HTTP API tests' server: a real SQLite file behind `duraq_web::router`
//! (with the store as its producer) on a loopback port, and requests that
//! send and read JSON over a fresh TCP connection.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use crate::common::dechunk;
use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, Outcome, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use duraq_web::{router, WebOptions};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const TOKEN: &str = "api-test-token-0123456789";

pub struct Api {
    pub addr: SocketAddr,
    pub store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

/// A server on a new SQLite file with `options` and the store as producer.
pub async fn start(options: WebOptions) -> Api {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("duraq.db"), SqliteOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let app = router(store.clone(), options.producer(store.clone()));
    let addr = super::common::spawn_server(app).await;
    Api {
        addr,
        store,
        _dir: dir,
    }
}

/// What a request got: status, head (lower-cased names kept as sent) and body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub json: Value,
}

impl Answer {
    /// `error.code` of an error answer (`""` when there is none).
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

impl Api {
    /// One request with `headers` (and `Host: <addr>` unless given).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(head.as_bytes()).await.unwrap();
        // A refused request may be answered (and closed) before its body is read.
        let _ = stream.write_all(body).await;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_string()
        };
        Answer {
            status,
            head: head.to_string(),
            json: serde_json::from_str(&body).unwrap_or(Value::Null),
        }
    }

    /// A JSON POST with the bearer token and `extra` headers.
    pub async fn post(&self, path: &str, body: &Value, extra: &[(&str, &str)]) -> Answer {
        let auth = format!("Bearer {TOKEN}");
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Authorization", auth.as_str()),
        ];
        headers.extend_from_slice(extra);
        self.send("POST", path, &headers, body.to_string().as_bytes())
            .await
    }

    /// A GET with the bearer token.
    pub async fn get(&self, path: &str) -> Answer {
        let auth = format!("Bearer {TOKEN}");
        self.send("GET", path, &[("Authorization", &auth)], b"")
            .await
    }

    /// The stored job.
    pub async fn job(&self, id: &str) -> Job {
        self.store
            .get_job(id)
            .await
            .unwrap()
            .expect("the job is stored")
    }

    /// How many jobs the store holds.
    pub async fn total(&self) -> i64 {
        self.store.count_snapshot().await.unwrap().total
    }

    /// Claims the due job `name` and reports it completed, as a worker does.
    pub async fn complete(&self, name: &str) {
        let claimed = self
            .store
            .claim(&ClaimRequest {
                worker_id: "api-test-worker".into(),
                job_names: vec![name.into()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        let lease = claimed[0].lease().unwrap();
        let done = self.store.report_batch(vec![(lease, Outcome::Completed)]);
        assert_eq!(done.await.unwrap(), [true]);
    }
}
