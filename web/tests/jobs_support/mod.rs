//! Helpers of the jobs-page tests (`bulk_pages.rs`, `search_pages.rs`): a
//! failed job, a job's status, a form POST, and the numbers and error codes a
//! page carries in its `data-` attributes.

#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request};
use duraq_core::driver::ClaimRequest;
use duraq_core::{EnqueueOptions, JobStatus, MemoryStore, NewJob, Outcome, Store};

/// A job in `queue` that ran once and failed for good with `error`.
pub async fn failed(store: &Arc<dyn Store>, queue: &str, error: &str) -> String {
    let opts = EnqueueOptions::new().queue(queue).max_retries(0);
    let job = NewJob::new("charge_card", serde_json::json!({"q": queue}), opts).unwrap();
    let id = store.enqueue(job).await.unwrap().job_id().to_string();
    // Only charge_card jobs: every other one of this name is finished.
    let claimed = store
        .claim(&ClaimRequest {
            worker_id: "worker-1".into(),
            job_names: vec!["charge_card".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let job = claimed.iter().find(|j| j.id == id).expect("claimed");
    let done = store
        .report_batch(vec![(job.lease().unwrap(), Outcome::failed(error))])
        .await
        .unwrap();
    assert_eq!(done, [true]);
    id
}

pub async fn status(store: &Arc<dyn Store>, id: &str) -> Option<JobStatus> {
    store.get_job(id).await.unwrap().map(|j| j.status)
}

pub fn post(path: &str, body: String) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap()
}

/// The number in `data-<name>="N"` of a result or confirmation page.
pub fn number(page: &str, name: &str) -> u64 {
    let key = format!("data-{name}=\"");
    let at = page
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {page}"))
        + key.len();
    page[at..at + page[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

pub fn error_code(page: &str) -> &str {
    let at = page.find("data-error=\"").expect("an error notice") + 12;
    &page[at..at + page[at..].find('"').unwrap()]
}

pub fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}
