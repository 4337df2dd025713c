//! `POST /api/v1/workflows` through a real server on a real SQLite file: the
//! body is a workflow file, read by the file's own parser, every step
//! inserted or none; an `idempotencyKey` replays or conflicts; each kind of
//! refusal has its status and code and writes nothing.

mod api_support;
mod common;

use api_support::{start, TOKEN};
use duraq_core::JobStatus;
use duraq_web::WebOptions;
use serde_json::{json, Value};

fn guarded() -> WebOptions {
    WebOptions::new().token(TOKEN)
}

fn onboarding(key: &str) -> Value {
    json!({"name": "onboard", "idempotencyKey": key, "steps": [
        {"step": "signup", "job": "create_account", "args": {"user": 7}, "queue": "accounts"},
        {"step": "welcome", "job": "send_welcome", "after": ["signup"],
         "onDependencyFailure": "run", "runIn": "5m", "maxRetries": 2, "timeout": "30s"}
    ]})
}

#[tokio::test]
async fn a_workflow_is_stored_step_by_step_and_replays() {
    let api = start(guarded()).await;
    let got = api
        .post("/api/v1/workflows", &onboarding("onboard-7"), &[])
        .await;
    assert_eq!(got.status, 201, "{}", got.json);
    assert_eq!(got.json["replayed"], false);
    let workflow_id = got.json["workflowId"].as_str().unwrap();
    let signup = api.job(got.json["jobs"]["signup"].as_str().unwrap()).await;
    let welcome = api.job(got.json["jobs"]["welcome"].as_str().unwrap()).await;
    assert_eq!(
        (signup.job_name.as_str(), signup.queue.as_str()),
        ("create_account", "accounts")
    );
    assert_eq!(signup.args, json!({"user": 7}));
    assert_eq!(signup.workflow_id.as_deref(), Some(workflow_id));
    assert_eq!(welcome.step.as_deref(), Some("welcome"));
    assert_eq!((welcome.max_retries, welcome.timeout_ms), (2, Some(30_000)));
    assert_eq!(welcome.depends_on[0].job_id, signup.id);
    assert_eq!(welcome.depends_on[0].on_failure.as_str(), "run");
    assert_ne!(welcome.status, JobStatus::Queued, "it waits for signup");

    let again = api
        .post("/api/v1/workflows", &onboarding("onboard-7"), &[])
        .await;
    assert_eq!((again.status, &again.json["replayed"]), (200, &json!(true)));
    assert_eq!(
        again.json,
        json!({"workflowId": workflow_id, "jobs": got.json["jobs"], "replayed": true})
    );
    let mut other = onboarding("onboard-7");
    other["steps"][0]["args"] = json!({"user": 8});
    let conflict = api.post("/api/v1/workflows", &other, &[]).await;
    assert_eq!(
        (conflict.status, conflict.code()),
        (409, "idempotency-conflict")
    );
    let by_header = [("Idempotency-Key", "onboard-7")];
    let mut unkeyed = onboarding("");
    unkeyed.as_object_mut().unwrap().remove("idempotencyKey");
    let replayed = api.post("/api/v1/workflows", &unkeyed, &by_header).await;
    assert_eq!(replayed.status, 200, "the header is the workflow's key");
    assert_eq!(api.total().await, 2);
}

#[tokio::test]
async fn each_refusal_has_its_status_and_code_and_writes_nothing() {
    let api = start(guarded()).await;
    let step = |extra: Value| {
        let mut step = json!({"step": "a", "job": "j"});
        step.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"name": "w", "steps": [step]})
    };
    for (body, status, code) in [
        (
            step(json!({"depends_on": ["b"]})),
            400,
            "invalid-workflow-file",
        ),
        (step(json!({"after": "b"})), 400, "invalid-workflow-file"),
        (
            json!({"name": "w", "owner": "me", "steps": []}),
            400,
            "invalid-workflow-file",
        ),
        (
            json!({"steps": [{"step": "a", "job": "j"}]}),
            400,
            "invalid-workflow-file",
        ),
        (json!([]), 400, "invalid-workflow-file"),
        (step(json!({"runIn": "-5m"})), 422, "invalid-duration"),
        (step(json!({"maxRetries": -1})), 422, "invalid-max-retries"),
        (json!({"name": "w", "steps": []}), 422, "invalid-workflow"),
        (step(json!({"after": ["x"]})), 422, "dependency-not-found"),
        (
            json!({"name": "w", "steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}),
            422,
            "duplicate-step",
        ),
        (
            json!({"name": "w", "steps": [
                {"step": "a", "job": "j", "after": ["b"]},
                {"step": "b", "job": "j", "after": ["a"]}]}),
            422,
            "workflow-cycle",
        ),
    ] {
        let got = api.post("/api/v1/workflows", &body, &[]).await;
        assert_eq!((got.status, got.code()), (status, code), "{body}");
    }
    let auth = format!("Bearer {TOKEN}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    let bad = api
        .send("POST", "/api/v1/workflows", &headers, b"{\"name\":")
        .await;
    assert_eq!((bad.status, bad.code()), (400, "invalid-json"));
    let differ = api
        .post(
            "/api/v1/workflows",
            &onboarding("a"),
            &[("Idempotency-Key", "b")],
        )
        .await;
    assert_eq!((differ.status, differ.code()), (400, "invalid-request"));
    assert_eq!(api.total().await, 0, "no refused request wrote anything");
}

#[tokio::test]
async fn a_workflow_needs_the_bearer_token_and_a_writable_dashboard() {
    let api = start(guarded()).await;
    let body = onboarding("k").to_string();
    let json_type = ("Content-Type", "application/json");
    let none = api
        .send("POST", "/api/v1/workflows", &[json_type], body.as_bytes())
        .await;
    assert_eq!((none.status, none.code()), (401, "unauthorized"));
    let read_only = start(guarded().read_only(true)).await;
    let refused = read_only
        .post("/api/v1/workflows", &onboarding("k"), &[])
        .await;
    assert_eq!((refused.status, refused.code()), (403, "read-only"));
    assert_eq!(api.total().await + read_only.total().await, 0);
}
