//! `POST /api/v1/jobs/{id}/signals/{name}` through a real server on a real
//! SQLite file: a delivery, its replay, and each refusal with its status and
//! code, none of which changes the stored signals; a job waiting for the
//! signal (its wait reported as a worker reports it) is woken.

mod api_support;
mod common;

use api_support::{start, TOKEN};
use duraq_core::driver::ClaimRequest;
use duraq_core::{JobStatus, Outcome};
use duraq_web::WebOptions;
use serde_json::json;

#[tokio::test]
async fn a_signal_is_delivered_once_and_wakes_its_waiting_job() {
    let api = start(WebOptions::new().token(TOKEN)).await;
    let got = api.post("/api/v1/jobs", &json!({"job": "ship"}), &[]).await;
    let id = got.json["jobId"].as_str().unwrap().to_owned();
    // The job's handler waits for `shipped`, as a worker would report it.
    let claimed = (api.store)
        .claim(&ClaimRequest {
            worker_id: "api-test-worker".into(),
            job_names: vec!["ship".into()],
            limit: 1,
            ..ClaimRequest::default()
        })
        .await
        .unwrap();
    let wait = Outcome::AwaitSignal {
        name: "shipped".into(),
        until_ms: i64::MAX / 2,
    };
    let lease = claimed[0].lease().unwrap();
    assert_eq!(
        api.store.report_batch(vec![(lease, wait)]).await.unwrap(),
        [true]
    );
    assert_eq!(api.job(&id).await.status, JobStatus::Pending);

    let path = format!("/api/v1/jobs/{id}/signals/shipped");
    let sent = api.post(&path, &json!({"payload": {"t": "1Z"}}), &[]).await;
    assert_eq!(sent.status, 200);
    assert_eq!(
        sent.json,
        json!({"jobId": id, "signal": "shipped", "delivered": true, "replayed": false, "woke": true})
    );
    assert_eq!(api.job(&id).await.status, JobStatus::Queued);
    let again = api.post(&path, &json!({"payload": {"t": "1Z"}}), &[]).await;
    assert_eq!(
        (again.status, again.json["replayed"].as_bool()),
        (200, Some(true))
    );

    let other = api.post(&path, &json!({"payload": 2}), &[]).await;
    assert_eq!((other.status, other.code()), (409, "signal-conflict"));
    let unknown = api
        .post(&path, &json!({"payload": 1, "extra": 2}), &[])
        .await;
    assert_eq!((unknown.status, unknown.code()), (400, "unknown-key"));
    let missing = "/api/v1/jobs/0193a0b0-0000-8000-8000-00000000000a/signals/shipped";
    let missing = api.post(missing, &json!({}), &[]).await;
    assert_eq!((missing.status, missing.code()), (404, "job-not-found"));
    let big = json!({"payload": "x".repeat(300 * 1024)});
    let big = api
        .post(&format!("/api/v1/jobs/{id}/signals/big"), &big, &[])
        .await;
    assert_eq!((big.status, big.code()), (422, "invalid-signal"));
    let stored = api.store.job_signals(&id).await.unwrap();
    assert_eq!(stored.len(), 1, "refusals stored nothing");

    api.complete("ship").await;
    let late = api
        .post(&format!("/api/v1/jobs/{id}/signals/late"), &json!({}), &[])
        .await;
    assert_eq!((late.status, late.code()), (409, "job-finished"));
}
