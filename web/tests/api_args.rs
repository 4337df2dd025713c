//! A built-in job's args are checked by the HTTP API as `duraq enqueue`
//! checks them, on every endpoint that enqueues: args its handler would
//! refuse at once are 422 `invalid-args`, and nothing is written (not the
//! other jobs of a batch or steps of a workflow either).

mod api_support;
mod common;

use api_support::{start, TOKEN};
use duraq_web::WebOptions;
use serde_json::{json, Value};

fn guarded() -> WebOptions {
    WebOptions::new().token(TOKEN)
}

fn bad_args() -> [Value; 4] {
    [
        json!({"job": "duraq.sleep", "args": {"ms": "fast"}}),
        json!({"job": "duraq.sleep"}),
        json!({"job": "duraq.http", "args": {"url": "ftp://example.com/"}}),
        json!({"job": "duraq.http", "args": {"url": "https://x.example/", "headers": []}}),
    ]
}

#[tokio::test]
async fn each_endpoint_refuses_a_builtin_jobs_bad_args() {
    let api = start(guarded()).await;
    for job in bad_args() {
        let got = api.post("/api/v1/jobs", &job, &[]).await;
        assert_eq!((got.status, got.code()), (422, "invalid-args"), "{job}");
        let batch = json!({"jobs": [{"job": "duraq.noop"}, job]});
        let got = api.post("/api/v1/jobs/batch", &batch, &[]).await;
        assert_eq!((got.status, got.code()), (422, "invalid-args"), "{batch}");
        let mut step = job.clone();
        step["step"] = json!("b");
        let workflow = json!({"name": "w", "steps": [{"step": "a", "job": "duraq.noop"}, step]});
        let got = api.post("/api/v1/workflows", &workflow, &[]).await;
        assert_eq!(
            (got.status, got.code()),
            (422, "invalid-args"),
            "{workflow}"
        );
    }
    assert_eq!(api.total().await, 0, "no refused request wrote anything");
    let good = [
        json!({"job": "duraq.sleep", "args": {"ms": 5}}),
        json!({"job": "duraq.http", "args": {"url": "https://x.example/", "method": "put"}}),
        json!({"job": "duraq.echo", "args": "anything"}),
        json!({"job": "app.job", "args": {"ms": "fast"}}),
    ];
    for job in good {
        assert_eq!(
            api.post("/api/v1/jobs", &job, &[]).await.status,
            201,
            "{job}"
        );
    }
}

/// A program's own check (the `duraq` program adds `duraq.mail.deliver`'s).
fn only_small_orders(name: &str, args: &Value) -> Result<(), String> {
    match (name, args["order"].as_i64()) {
        ("ship", Some(n)) if n > 100 => Err("ship takes orders up to 100".into()),
        _ => duraq_web::builtin_args::check_args(name, args),
    }
}

#[tokio::test]
async fn a_programs_own_check_is_the_apis() {
    let api = start(guarded().args_check(only_small_orders)).await;
    let big = json!({"job": "ship", "args": {"order": 101}});
    let got = api.post("/api/v1/jobs", &big, &[]).await;
    assert_eq!((got.status, got.code()), (422, "invalid-args"));
    let bad = api.post("/api/v1/jobs", &bad_args()[0], &[]).await;
    assert_eq!((bad.status, bad.code()), (422, "invalid-args"));
    assert_eq!(api.total().await, 0);
    let small = json!({"job": "ship", "args": {"order": 7}});
    assert_eq!(api.post("/api/v1/jobs", &small, &[]).await.status, 201);
}
