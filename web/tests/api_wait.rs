//! `GET /api/v1/jobs/{id}/wait` through a real server on a real SQLite file:
//! it answers `done: false` when its time is up, and `done: true` with the
//! finished job once a worker (the store's claim and report) completes it.

mod api_support;
mod common;

use std::time::{Duration, Instant};

use api_support::{start, TOKEN};
use duraq_web::WebOptions;
use serde_json::json;

#[tokio::test]
async fn a_wait_answers_not_done_when_its_time_is_up() {
    let api = start(WebOptions::new().token(TOKEN)).await;
    let id = api
        .post("/api/v1/jobs", &json!({"job": "slow"}), &[])
        .await
        .json["jobId"]
        .clone();
    let id = id.as_str().unwrap();
    let started = Instant::now();
    let got = api
        .get(&format!("/api/v1/jobs/{id}/wait?timeout=300ms"))
        .await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(got.status, 200);
    assert_eq!(got.json["done"], false);
    assert_eq!(
        (
            got.json["job"]["id"].as_str(),
            got.json["job"]["status"].as_str()
        ),
        (Some(id), Some("queued"))
    );
    let bad = api
        .get(&format!("/api/v1/jobs/{id}/wait?timeout=soon"))
        .await;
    assert_eq!((bad.status, bad.code()), (422, "invalid-duration"));
    let missing = api
        .get("/api/v1/jobs/0193a0b0-0000-8000-8000-00000000000a/wait")
        .await;
    assert_eq!((missing.status, missing.code()), (404, "job-not-found"));
}

#[tokio::test]
async fn a_wait_answers_once_a_worker_completes_the_job() {
    let api = std::sync::Arc::new(start(WebOptions::new().token(TOKEN)).await);
    let got = api
        .post("/api/v1/jobs", &json!({"job": "report", "args": [1]}), &[])
        .await;
    let id = got.json["jobId"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let waiter = {
        let (api, id) = (api.clone(), id.clone());
        tokio::spawn(async move {
            api.get(&format!("/api/v1/jobs/{id}/wait?timeout=60s"))
                .await
        })
    };
    api.complete("report").await;
    let got = waiter.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "woken, not timed out"
    );
    assert_eq!((got.status, &got.json["done"]), (200, &json!(true)));
    assert_eq!(got.json["job"]["status"], "completed");
    assert_eq!(got.json["job"]["id"], json!(id));
}
