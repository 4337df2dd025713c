//! `/events` over a real TCP connection: a `text/event-stream` whose first
//! `counts` event holds the current counts as JSON, and which sends a new event
//! when the counts change (the router's one polling task notices the change).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{enqueue_plain, spawn_server};
use duraq_core::{MemoryStore, Store};
use duraq_web::{router, WebOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Opens `/events` and returns a reader positioned after the response head.
async fn open(addr: std::net::SocketAddr) -> BufReader<tokio::net::TcpStream> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    reader
}

/// The JSON of the next `counts` event (chunked framing lines are skipped).
async fn next_counts(reader: &mut BufReader<tokio::net::TcpStream>) -> serde_json::Value {
    let mut saw_event = false;
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).await.unwrap() > 0,
            "stream ended"
        );
        let line = line.trim_end();
        if line == "event: counts" {
            saw_event = true;
        } else if let Some(data) = line.strip_prefix("data: ").filter(|_| saw_event) {
            return serde_json::from_str(data).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_browser_gets_the_counts_and_each_change() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    enqueue_plain(&store, "default").await;
    let options = WebOptions::new().poll_interval(Duration::from_millis(50));
    let addr = spawn_server(router(store.clone(), options)).await;
    let mut a = open(addr).await;
    let mut b = open(addr).await;
    for reader in [&mut a, &mut b] {
        let first = next_counts(reader).await;
        assert_eq!(first["counts"]["queued"], 1);
        assert_eq!(first["counts"]["total"], 1);
        assert_eq!(first["throughput"].as_array().unwrap().len(), 60);
    }
    enqueue_plain(&store, "mail").await;
    for reader in [&mut a, &mut b] {
        let mut next = next_counts(reader).await;
        // A minute boundary may send an unchanged count first; the change follows.
        while next["counts"]["queued"] == 1 {
            next = next_counts(reader).await;
        }
        assert_eq!(next["counts"]["queued"], 2);
        assert_eq!(next["counts"]["total"], 2);
    }
}
