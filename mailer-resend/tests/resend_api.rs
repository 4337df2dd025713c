//! `ResendApiBackend` against a real local HTTP listener: the request on the
//! wire and how each answer turns into the job's fate.

mod support;

use std::sync::Arc;

use duraq_core::{Clock, EnqueueOptions, Job, JobStatus, ManualClock, Store};
use duraq_mailer::{
    operation_key, DeliveryOperation, MailDeliverJob, MailPayload, Mailer, OperationResult, Secret,
};
use duraq_mailer_resend::{ResendApiBackend, ResendApiSettings, USER_AGENT};
use serde_json::json;
use support::common::{job, run_attempt};
use support::http::{HttpServer, Reply};

const KEY: &str = "re_test_4f1b9c_SECRET";

fn api(server: &HttpServer) -> Arc<ResendApiBackend> {
    let mut settings = ResendApiSettings::new(Secret::new(KEY));
    settings.base_url = server.base_url();
    settings.default_from = Some("Shop <shop@example.com>".into());
    Arc::new(ResendApiBackend::new(settings).unwrap())
}

fn mail() -> MailPayload {
    MailPayload::new("Receipt")
        .to("ada@example.com")
        .cc("cc@example.com")
        .bcc("bcc@example.com")
        .reply_to("help@example.com")
        .html("<p>Thanks</p>")
        .text("Thanks")
        .header("X-Order", "42")
}

/// Enqueues `id` and runs one attempt; returns the job row afterwards.
async fn attempt(
    store: &Arc<dyn Store>,
    clock: &ManualClock,
    server: &HttpServer,
    id: &str,
) -> (Job, Result<(), String>) {
    let backend = api(server);
    let mailer = Mailer::new(store.clone(), backend.clone());
    let op = Some(DeliveryOperation::required(id));
    let job_id = mailer
        .deliver_later(mail(), op, EnqueueOptions::new())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    let (_, result) = run_attempt(store, &MailDeliverJob::new(backend), clock.now_ms())
        .await
        .unwrap();
    (job(store, &job_id).await, result)
}

fn assert_key_hidden(row: &Job) {
    if let Some(e) = &row.last_error {
        assert!(!e.contains(KEY), "API key leaked into lastError: {e}");
    }
}

async fn delivered_with_the_right_request(store: Arc<dyn Store>, clock: ManualClock) {
    let server = HttpServer::start().await;
    server.reply(Reply::json(
        200,
        json!({"id": "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}),
    ));
    let (row, result) = attempt(&store, &clock, &server, "order-42").await;
    assert_eq!(result, Ok(()));
    assert_eq!(row.status, JobStatus::Completed);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/emails"));
    assert_eq!(r.header("Idempotency-Key"), ["order-42"]);
    assert_eq!(
        r.header("Authorization"),
        [format!("Bearer {KEY}").as_str()]
    );
    assert_eq!(r.header("User-Agent"), [USER_AGENT]);
    assert_eq!(
        r.json(),
        json!({
            "from": "Shop <shop@example.com>", "to": ["ada@example.com"], "cc": ["cc@example.com"],
            "bcc": ["bcc@example.com"], "reply_to": ["help@example.com"], "subject": "Receipt",
            "html": "<p>Thanks</p>", "text": "Thanks", "headers": {"X-Order": "42"},
        })
    );
    let op = store
        .get_operation(&operation_key("order-42"))
        .await
        .unwrap()
        .unwrap();
    let result: OperationResult = serde_json::from_value(op.result.unwrap()).unwrap();
    assert_eq!(
        result.provider_message_id.as_deref(),
        Some("49a3999c-0ce1-4ea6-ab68-afcd6dc2e794")
    );
}

async fn concurrent_idempotent_request_is_retried_with_the_same_key(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let server = HttpServer::start().await;
    let body = json!({"statusCode": 409, "name": "concurrent_idempotent_requests", "message": "in progress"});
    server.reply(Reply::json(409, body));
    let (row, result) = attempt(&store, &clock, &server, "op-409c").await;
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    assert_eq!(row.status, JobStatus::Queued);
    assert_key_hidden(&row);
    clock.set(row.scheduled_at_ms);
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(api(&server)), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Ok(()));
    let keys: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("Idempotency-Key")[0].to_owned())
        .collect();
    assert_eq!(keys, ["op-409c", "op-409c"], "the key is never rotated");
}

async fn invalid_idempotent_request_fails_without_retries(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let server = HttpServer::start().await;
    let body = json!({"statusCode": 409, "name": "invalid_idempotent_request",
        "message": "Same idempotency key used with a different request payload."});
    server.reply(Reply::json(409, body));
    let (row, result) = attempt(&store, &clock, &server, "op-409i").await;
    assert_eq!(result, Err("mail-delivery-rejected".to_owned()));
    assert_eq!(row.status, JobStatus::Failed);
    assert!(row
        .last_error
        .as_deref()
        .unwrap()
        .contains("Same idempotency key used with a different request payload."));
    assert_key_hidden(&row);
}

async fn rate_limit_honours_retry_after(store: Arc<dyn Store>, clock: ManualClock) {
    let server = HttpServer::start().await;
    let body =
        json!({"statusCode": 429, "name": "rate_limit_exceeded", "message": "Too many requests"});
    server.reply(Reply::json(429, body).header("retry-after", "7"));
    let (row, result) = attempt(&store, &clock, &server, "op-429").await;
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    assert_eq!(row.status, JobStatus::Queued);
    assert_eq!(row.scheduled_at_ms, clock.now_ms() + 7_000);
}

async fn server_errors_are_retried(store: Arc<dyn Store>, clock: ManualClock) {
    let server = HttpServer::start().await;
    server.reply(Reply::json(
        500,
        json!({"statusCode": 500, "name": "internal_server_error", "message": "oops"}),
    ));
    let (row, result) = attempt(&store, &clock, &server, "op-500").await;
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    assert_eq!(row.status, JobStatus::Queued);
    assert!(row.last_error.as_deref().unwrap().contains("oops"));
}

async fn other_client_errors_fail_with_the_provider_message(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let server = HttpServer::start().await;
    // A provider that echoes the credential must not get it into lastError.
    let body = json!({"statusCode": 422, "name": "validation_error", "message": format!("Invalid `to` field (key {KEY})")});
    server.reply(Reply::json(422, body));
    let (row, result) = attempt(&store, &clock, &server, "op-422").await;
    assert_eq!(result, Err("mail-delivery-rejected".to_owned()));
    assert_eq!(row.status, JobStatus::Failed);
    assert!(row
        .last_error
        .as_deref()
        .unwrap()
        .contains("Invalid `to` field"));
    assert_key_hidden(&row);
    assert!(!format!("{:?}", api(&server)).contains(KEY));
}

on_every_store!(
    delivered_with_the_right_request,
    concurrent_idempotent_request_is_retried_with_the_same_key,
    invalid_idempotent_request_fails_without_retries,
    rate_limit_honours_retry_after,
    server_errors_are_retried,
    other_client_errors_fail_with_the_provider_message,
);
