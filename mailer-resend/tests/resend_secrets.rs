//! `RESEND_API_KEY` never reaches an error or `lastError` (`SECURITY.md`), over
//! either backend: Resend SMTP (user `resend`, the key as password) against a
//! real local SMTP listener that echoes the AUTH exchange, and the HTTP API
//! against a real local HTTP listener that echoes the key in base64. Causes
//! stay visible; and the key never travels over plaintext to a remote relay.

mod support;

use std::sync::Arc;

use duraq_core::inspect::error_chain;
use duraq_core::{Clock, EnqueueOptions, JobStatus, ManualClock, Store};
use duraq_mailer::{
    DeliveryOperation, MailBackend, MailDeliverJob, MailError, MailPayload, Mailer, Secret,
    SmtpSettings, TlsMode,
};
use duraq_mailer_resend::{ResendApiBackend, ResendApiSettings, ResendSmtpBackend};
use serde_json::json;
use support::common::{job, run_attempt};
use support::http::{HttpServer, Reply};
use support::smtp::SmtpServer;

const KEY: &str = "re_live_7Qx2_SECRET";

fn resend_smtp(server: &SmtpServer) -> Arc<ResendSmtpBackend> {
    let env = |k: &str| match k {
        "DURAQ_SMTP_HOST" => Some("127.0.0.1".to_owned()),
        "DURAQ_SMTP_PORT" => Some(server.port().to_string()),
        "DURAQ_SMTP_TLS" => Some("none".to_owned()),
        "DURAQ_MAIL_FROM" => Some("shop@example.com".to_owned()),
        "RESEND_API_KEY" => Some(KEY.to_owned()),
        _ => None,
    };
    let settings = ResendSmtpBackend::settings_from_lookup(env).unwrap();
    Arc::new(ResendSmtpBackend::new(settings).unwrap())
}

fn mail() -> MailPayload {
    MailPayload::new("Receipt")
        .to("ada@example.com")
        .text("Thanks")
}

/// The arguments the client sent during AUTH (blobs, not verbs).
fn sent_blobs(server: &SmtpServer) -> Vec<String> {
    let lines = server.auth_lines();
    assert!(!lines.is_empty(), "the client authenticated");
    lines
        .iter()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .filter(|w| !["PLAIN", "LOGIN"].contains(&w.as_str()))
        .collect()
}

fn assert_clean(text: &str, blobs: &[String]) {
    assert!(!text.contains(KEY), "API key leaked: {text}");
    for blob in blobs {
        assert!(!text.contains(blob.as_str()), "AUTH data leaked: {text}");
    }
}

fn shown(err: MailError) -> Vec<String> {
    let texts = vec![err.to_string(), error_chain(&err)];
    [texts, vec![err.into_job_error().message().to_owned()]].concat()
}

#[tokio::test]
async fn resend_smtp_masks_the_key_in_echoed_plain_and_login_exchanges() {
    for mechanism in ["PLAIN", "LOGIN"] {
        let server = SmtpServer::with_auth(mechanism, |lines| {
            format!("535 5.7.8 invalid key {KEY}: {}", lines.join(" "))
        })
        .await;
        let err = resend_smtp(&server)
            .send(&mail().from("shop@example.com"), Some("op-1"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "mail-delivery-rejected");
        let blobs = sent_blobs(&server);
        for text in shown(err) {
            assert_clean(&text, &blobs);
            assert!(
                text.contains("535"),
                "{mechanism}: the cause is kept: {text}"
            );
        }
    }
}

async fn resend_smtp_last_error_holds_no_key(store: Arc<dyn Store>, clock: ManualClock) {
    let server = SmtpServer::with_auth("PLAIN", |lines| format!("535 5.7.8 {}", lines[0])).await;
    let backend = resend_smtp(&server);
    let mailer = Mailer::new(store.clone(), backend.clone());
    let op = Some(DeliveryOperation::required("order-1:receipt"));
    let id = mailer
        .deliver_later(mail(), op, EnqueueOptions::new())
        .await
        .unwrap();
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(backend), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Err("mail-delivery-rejected".to_owned()));
    let row = job(&store, id.job_id()).await;
    assert_eq!(row.status, JobStatus::Failed);
    let last_error = row.last_error.expect("lastError is recorded");
    assert_clean(&last_error, &sent_blobs(&server));
    assert!(last_error.contains("535"), "{last_error}");
}

async fn api_masks_an_echoed_key_in_base64_and_in_the_message_id(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let server = HttpServer::start().await;
    let mut settings = ResendApiSettings::new(Secret::new(KEY));
    settings.base_url = server.base_url();
    settings.default_from = Some("shop@example.com".into());
    let backend = Arc::new(ResendApiBackend::new(settings).unwrap());
    // base64 of the key, as a Basic credential would carry it.
    let echoed = "Basic cmVfbGl2ZV83UXgyX1NFQ1JFVA==";
    let body =
        json!({"name": "validation_error", "message": format!("bad auth {echoed} / Bearer {KEY}")});
    server.reply(Reply::json(422, body));
    let err = backend
        .send(&mail().from("shop@example.com"), Some("op-2"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mail-delivery-rejected");
    for text in shown(err) {
        assert_clean(&text, &["cmVfbGl2ZV83UXgyX1NFQ1JFVA".to_owned()]);
        assert!(text.contains("422"), "{text}");
    }
    // A message id that echoes the key is stored scrubbed on the operation.
    server.reply(Reply::json(200, json!({"id": format!("id-{KEY}")})));
    let mailer = Mailer::new(store.clone(), backend.clone());
    let op = Some(DeliveryOperation::required("op-3"));
    mailer
        .deliver_later(mail(), op, EnqueueOptions::new())
        .await
        .unwrap();
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(backend), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Ok(()));
    let key = duraq_mailer::operation_key("op-3");
    let op = store.get_operation(&key).await.unwrap().unwrap();
    let stored = op.result.expect("delivery result").to_string();
    assert!(
        stored.contains("id-***") && !stored.contains(KEY),
        "{stored}"
    );
}

on_every_store!(
    resend_smtp_last_error_holds_no_key,
    api_masks_an_echoed_key_in_base64_and_in_the_message_id,
);

#[tokio::test]
async fn api_connection_failures_keep_their_cause() {
    // A port that was just bound and released: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let mut settings = ResendApiSettings::new(Secret::new(KEY));
    settings.base_url = format!("http://{addr}");
    let backend = ResendApiBackend::new(settings).unwrap();
    let err = backend
        .send(&mail().from("shop@example.com"), Some("op-4"))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-failed", false)
    );
    let text = error_chain(&err).to_ascii_lowercase();
    assert!(text.contains("refused"), "the cause is kept: {text}");
}

#[test]
fn the_key_is_refused_over_plaintext_to_the_resend_relay() {
    // DURAQ_SMTP_TLS=none with the default host smtp.resend.com: refused
    // before any name is resolved.
    let env = |k: &str| match k {
        "DURAQ_SMTP_TLS" => Some("none".to_owned()),
        "RESEND_API_KEY" => Some(KEY.to_owned()),
        _ => None,
    };
    let settings = ResendSmtpBackend::settings_from_lookup(env).unwrap();
    let err = ResendSmtpBackend::new(settings.clone()).unwrap_err();
    assert_eq!(err.code(), "mail-smtp-plaintext-auth");
    assert!(!error_chain(&err).contains(KEY));
    let remote = SmtpSettings {
        host: "192.0.2.1".into(),
        ..settings.clone()
    };
    let err = ResendSmtpBackend::new(remote).unwrap_err();
    assert_eq!(err.code(), "mail-smtp-plaintext-auth");
    assert!(ResendSmtpBackend::new(settings.tls(TlsMode::Tls)).is_ok());
}
