//! Shared helpers: a store seeded with hostile values, an in-process request
//! (`tower::ServiceExt::oneshot`), and a tiny HTTP/1.1 client for the tests
//! that go through a real TCP listener.

#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use duraq_core::driver::{ClaimRequest, Lease};
use duraq_core::{EnqueueOptions, Job, MemoryStore, NewJob, Outcome, Store};
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

pub const SCRIPT: &str = "<script>alert(1)</script>";
pub const ATTR: &str = "\"onmouseover=alert(1) x=\"";
pub const ESC: &str = "\u{1b}[2J";

/// A memory store with one job of a hostile name, queue, args and lastError
/// (failed for good), and one plain queued job. Returns (store, hostile id, plain id).
pub async fn hostile_store() -> (Arc<dyn Store>, String, String) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let opts = EnqueueOptions {
        queue: Some(ATTR.to_string()),
        max_retries: Some(0),
        priority: Some(7),
        rate_key: Some(SCRIPT.to_string()),
        rate_max: Some(3),
        rate_period_ms: Some(60_000),
        ..EnqueueOptions::new()
    };
    let args =
        serde_json::json!({ "html": SCRIPT, "attr": ATTR, "esc": ESC, "close": "</pre></main>" });
    let hostile = store
        .enqueue(NewJob::new(SCRIPT, args, opts).unwrap())
        .await
        .unwrap()
        .job_id()
        .to_string();
    let claimed = claim(&store, 10).await;
    let job = claimed.iter().find(|j| j.id == hostile).unwrap();
    let lease = job.lease().unwrap();
    let error = format!("{SCRIPT} {ATTR} {ESC}");
    assert_eq!(
        store
            .report_batch(vec![(lease, Outcome::failed(error))])
            .await
            .unwrap(),
        [true]
    );
    let plain = enqueue_plain(&store, "default").await;
    (store, hostile, plain)
}

pub async fn enqueue_plain(store: &Arc<dyn Store>, queue: &str) -> String {
    let opts = EnqueueOptions {
        queue: Some(queue.to_string()),
        ..EnqueueOptions::new()
    };
    let job = NewJob::new("send_receipt", serde_json::json!([42]), opts).unwrap();
    store.enqueue(job).await.unwrap().job_id().to_string()
}

pub async fn claim(store: &Arc<dyn Store>, limit: usize) -> Vec<Job> {
    let names = store
        .search_jobs(&Default::default())
        .await
        .unwrap()
        .jobs
        .into_iter()
        .map(|j| j.job_name)
        .collect();
    store
        .claim(&ClaimRequest {
            worker_id: "worker-1".into(),
            job_names: names,
            limit,
            ..ClaimRequest::default()
        })
        .await
        .unwrap()
}

pub fn lease_of(job: &Job) -> Lease {
    job.lease().unwrap()
}

/// GET through the router in process: (status, headers, body).
pub async fn get(app: &Router, uri: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    send(app, Request::get(uri).body(Body::empty()).unwrap()).await
}

pub async fn send(app: &Router, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

/// The `value` of the first `name="csrf"` input of a page.
pub fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[at..at + 64].to_string()
}

/// Serves `app` on 127.0.0.1:0 in the background; returns its address.
pub async fn spawn_server(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = duraq_web::ServeLimits::default();
    tokio::spawn(duraq_web::serve(
        listener,
        app,
        limits,
        std::future::pending(),
    ));
    addr
}

/// One HTTP/1.1 request over a fresh TCP connection (`Connection: close`):
/// (status code, raw head, body).
pub async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

/// A chunked body's data.
pub fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
