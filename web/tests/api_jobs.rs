//! The HTTP API's enqueue and read through a real server on a real SQLite
//! file: a job is stored with the options as a workflow step spells them,
//! an `Idempotency-Key` replays or conflicts, a batch is all or nothing, and
//! each kind of refusal has its status and code.

mod api_support;
mod common;

use api_support::{start, TOKEN};
use duraq_core::JobStatus;
use duraq_web::WebOptions;
use serde_json::json;

fn guarded() -> WebOptions {
    WebOptions::new().token(TOKEN)
}

#[tokio::test]
async fn an_enqueue_stores_the_job_with_its_options() {
    let api = start(guarded()).await;
    let body = json!({
        "job": "send_receipt", "args": {"order": 7}, "queue": "mail", "runIn": "5m",
        "timeout": "30s", "maxRetries": 2, "priority": 5, "concurrencyKey": "smtp",
        "maxConcurrency": 2, "rateKey": "smtp", "rate": "100/1s", "expiresIn": "1h",
        "cost": 1, "keepCompleted": false
    });
    let got = api.post("/api/v1/jobs", &body, &[]).await;
    assert_eq!(got.status, 201, "{}", got.json);
    assert_eq!(got.json["outcome"], "created");
    let id = got.json["jobId"].as_str().unwrap();
    let location = format!("location: /api/v1/jobs/{id}\r\n");
    assert!(
        got.head.to_ascii_lowercase().contains(&location),
        "{}",
        got.head
    );
    let job = api.job(id).await;
    assert_eq!(
        (job.job_name.as_str(), job.queue.as_str()),
        ("send_receipt", "mail")
    );
    assert_eq!(job.args, json!({"order": 7}));
    assert_eq!(
        (job.max_retries, job.priority, job.timeout_ms),
        (2, 5, Some(30_000))
    );
    assert_eq!((job.rate_max, job.rate_period_ms), (Some(100), Some(1_000)));
    assert_eq!(job.max_concurrency, Some(2));
    assert!(job.scheduled_at_ms >= job.created_at_ms + 300_000);
    assert!(job.expires_at_ms.is_some() && !job.keep_completed);
    let shown = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(shown.status, 200);
    assert_eq!(shown.json, serde_json::to_value(&job).unwrap());
}

#[tokio::test]
async fn an_idempotency_key_replays_and_a_different_request_conflicts() {
    let api = start(guarded()).await;
    let body = json!({"job": "charge", "args": [42]});
    let key = [("Idempotency-Key", "order-42")];
    let first = api.post("/api/v1/jobs", &body, &key).await;
    assert_eq!(first.status, 201);
    let again = api.post("/api/v1/jobs", &body, &key).await;
    assert_eq!(
        (again.status, &again.json["outcome"]),
        (200, &json!("replayed"))
    );
    assert_eq!(again.json["jobId"], first.json["jobId"]);
    let other = json!({"job": "charge", "args": [43]});
    let conflict = api.post("/api/v1/jobs", &other, &key).await;
    assert_eq!(
        (conflict.status, conflict.code()),
        (409, "idempotency-conflict")
    );
    let twin = json!({"job": "digest", "dedupeWhileQueued": true});
    assert_eq!(api.post("/api/v1/jobs", &twin, &[]).await.status, 201);
    let deduplicated = api.post("/api/v1/jobs", &twin, &[]).await;
    assert_eq!(
        (deduplicated.status, &deduplicated.json["outcome"]),
        (200, &json!("deduplicated"))
    );
    assert_eq!(api.total().await, 2);
}

#[tokio::test]
async fn each_refusal_has_its_status_and_code() {
    let api = start(guarded()).await;
    let post = |body: serde_json::Value| {
        let api = &api;
        async move { api.post("/api/v1/jobs", &body, &[]).await }
    };
    let bad = post(json!({"job": "j", "runIn": "-5m"})).await;
    assert_eq!((bad.status, bad.code()), (422, "invalid-duration"));
    let bad = post(json!({"job": "j", "priority": 500})).await;
    assert_eq!((bad.status, bad.code()), (422, "invalid-priority"));
    let bad = post(json!({"job": "j", "run_in": "5m"})).await;
    assert_eq!((bad.status, bad.code()), (400, "unknown-key"));
    let bad = post(json!({"job": "j", "priority": "high"})).await;
    assert_eq!((bad.status, bad.code()), (400, "invalid-request"));
    let bad = post(json!({"args": []})).await;
    assert_eq!((bad.status, bad.code()), (400, "invalid-request"));
    let auth = format!("Bearer {TOKEN}");
    let json_type = ("Content-Type", "application/json");
    let headers = [json_type, ("Authorization", auth.as_str())];
    let bad = api
        .send("POST", "/api/v1/jobs", &headers, b"{\"job\":")
        .await;
    assert_eq!((bad.status, bad.code()), (400, "invalid-json"));
    let form = [("Authorization", auth.as_str())];
    let bad = api
        .send("POST", "/api/v1/jobs", &form, b"{\"job\":\"j\"}")
        .await;
    assert_eq!((bad.status, bad.code()), (415, "unsupported-media-type"));
    let big = format!("{{\"job\": \"j\", \"args\": \"{}\"}}", "x".repeat(1 << 20));
    let bad = api
        .send("POST", "/api/v1/jobs", &headers, big.as_bytes())
        .await;
    assert_eq!((bad.status, bad.code()), (413, "body-too-large"));
    let missing = api
        .get("/api/v1/jobs/0193a0b0-0000-8000-8000-00000000000a")
        .await;
    assert_eq!((missing.status, missing.code()), (404, "job-not-found"));
    let nowhere = api.get("/api/v1/nothing").await;
    assert_eq!((nowhere.status, nowhere.code()), (404, "not-found"));
    assert_eq!(api.total().await, 0, "no refused request wrote anything");
}

#[tokio::test]
async fn writes_need_the_bearer_token_and_a_writable_dashboard() {
    let api = start(guarded()).await;
    let body = br#"{"job": "j"}"#;
    let json_type = ("Content-Type", "application/json");
    let none = api.send("POST", "/api/v1/jobs", &[json_type], body).await;
    assert_eq!((none.status, none.code()), (401, "unauthorized"));
    let wrong = [
        json_type,
        ("Authorization", "Bearer wrong-token-0123456789"),
    ];
    assert_eq!(
        api.send("POST", "/api/v1/jobs", &wrong, body).await.status,
        401
    );
    let cookie = format!("duraq_token={TOKEN}");
    let by_cookie = [json_type, ("Cookie", cookie.as_str())];
    let refused = api.send("POST", "/api/v1/jobs", &by_cookie, body).await;
    assert_eq!(
        refused.status, 401,
        "a cookie is no API credential for writes"
    );
    let read = api.send("GET", "/api/v1/jobs/x", &[], b"").await;
    assert_eq!((read.status, read.code()), (401, "unauthorized"));
    let login = format!("/api/v1/jobs/x?token={TOKEN}");
    assert_eq!(
        api.send("GET", &login, &[], b"").await.status,
        401,
        "no ?token= login"
    );

    let read_only = start(guarded().read_only(true)).await;
    let refused = read_only
        .post("/api/v1/jobs", &json!({"job": "j"}), &[])
        .await;
    assert_eq!((refused.status, refused.code()), (403, "read-only"));
    assert_eq!(read_only.total().await, 0);

    let open = start(WebOptions::new()).await;
    let rebound = [("Host", "evil.example:8080")];
    let refused = open.send("GET", "/api/v1/jobs/x", &rebound, b"").await;
    assert_eq!((refused.status, refused.code()), (421, "host-not-allowed"));
    let site = [json_type, ("Origin", "http://evil.example")];
    let refused = open.send("POST", "/api/v1/jobs", &site, body).await;
    assert_eq!((refused.status, refused.code()), (403, "cross-origin"));
    assert_eq!(
        open.send("POST", "/api/v1/jobs", &[json_type], body)
            .await
            .status,
        201
    );
}

#[tokio::test]
async fn a_batch_is_all_or_nothing_and_answers_in_order() {
    let api = start(guarded()).await;
    let taken = json!({"job": "charge", "args": [1], "idempotencyKey": "order-1"});
    assert_eq!(api.post("/api/v1/jobs", &taken, &[]).await.status, 201);
    let bad_value = json!({"jobs": [{"job": "a"}, {"job": "b", "timeout": "soon"}]});
    let refused = api.post("/api/v1/jobs/batch", &bad_value, &[]).await;
    assert_eq!((refused.status, refused.code()), (422, "invalid-duration"));
    // The second job contradicts the store: the first, valid on its own, is not kept.
    let conflict = json!({"jobs": [
        {"job": "a"},
        {"job": "charge", "args": [2], "idempotencyKey": "order-1"}
    ]});
    let refused = api.post("/api/v1/jobs/batch", &conflict, &[]).await;
    assert_eq!(
        (refused.status, refused.code()),
        (409, "idempotency-conflict")
    );
    assert_eq!(api.total().await, 1);
    let batch = json!({"jobs": [
        {"job": "a", "queue": "q1"},
        {"job": "b", "priority": -3},
        {"job": "charge", "args": [1], "idempotencyKey": "order-1"}
    ]});
    let got = api.post("/api/v1/jobs/batch", &batch, &[]).await;
    assert_eq!(got.status, 201, "{}", got.json);
    let answers = got.json["jobs"].as_array().unwrap();
    let outcomes: Vec<_> = answers
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["created", "created", "replayed"]);
    let a = api.job(answers[0]["jobId"].as_str().unwrap()).await;
    let b = api.job(answers[1]["jobId"].as_str().unwrap()).await;
    assert_eq!((a.job_name.as_str(), a.queue.as_str()), ("a", "q1"));
    assert_eq!(
        (b.job_name.as_str(), b.priority, b.status),
        ("b", -3, JobStatus::Queued)
    );
    let keyed = [("Idempotency-Key", "k")];
    let refused = api.post("/api/v1/jobs/batch", &batch, &keyed).await;
    assert_eq!((refused.status, refused.code()), (400, "invalid-request"));
    let refused = api
        .post("/api/v1/jobs/batch", &json!({"jobz": []}), &[])
        .await;
    assert_eq!((refused.status, refused.code()), (400, "unknown-key"));
}
