//! Generic SMTP credentials against a real local listener that echoes them
//! back: the AUTH blob, the LOGIN lines and the password in clear must not
//! reach the error, its chain, or the `lastError` the worker stores (`SECURITY.md`),
//! while the cause (the 535 reply) stays visible. And credentials never travel
//! over plaintext to a host that is not loopback.

mod support;

use std::sync::Arc;

use duraq_core::inspect::error_chain;
use duraq_core::{EnqueueOptions, JobStatus, ManualClock, MemoryStore, Store};
use duraq_mailer::{
    DeliveryContext, MailDeliverJob, MailError, MailPayload, Mailer, Secret, SmtpBackend,
    SmtpSettings, TlsMode,
};
use support::common::{job, run_attempt, START_MS};
use support::smtp::SmtpServer;

const USER: &str = "joe@example.com";
const PASSWORD: &str = "hunter2-Tr0ub4dor";

fn settings(host: &str, port: u16) -> SmtpSettings {
    SmtpSettings::new(host, port)
        .tls(TlsMode::None)
        .credentials(USER, Secret::new(PASSWORD))
        .default_from("shop@example.com")
}

fn mailer(server: &SmtpServer, store: Arc<dyn Store>) -> (Mailer, Arc<SmtpBackend>) {
    let backend = Arc::new(SmtpBackend::new(settings("127.0.0.1", server.port())).unwrap());
    (Mailer::new(store, backend.clone()), backend)
}

fn mail() -> MailPayload {
    MailPayload::new("Hello").to("ada@example.com").text("body")
}

/// The base64 arguments the client really sent during AUTH (not the verbs).
fn sent_blobs(server: &SmtpServer) -> Vec<String> {
    let blobs: Vec<String> = server
        .auth_lines()
        .iter()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .filter(|w| !["PLAIN", "LOGIN"].contains(&w.as_str()))
        .collect();
    assert!(!blobs.is_empty(), "the client authenticated");
    blobs
}

/// Every text a failed attempt can show: `Display`, the chain, and the
/// `lastError` the worker would store.
fn texts(err: MailError) -> Vec<String> {
    let shown = vec![err.to_string(), error_chain(&err)];
    let job_error = err.into_job_error();
    [shown, vec![job_error.message().to_owned()]].concat()
}

fn assert_clean(texts: &[String], blobs: &[String]) {
    for text in texts {
        assert!(!text.contains(PASSWORD), "password leaked: {text}");
        for blob in blobs {
            assert!(!text.contains(blob.as_str()), "AUTH data leaked: {text}");
        }
        assert!(text.contains("535"), "the cause is kept: {text}");
    }
}

async fn deliver_now_error(server: &SmtpServer) -> MailError {
    let (mailer, _) = mailer(server, Arc::new(MemoryStore::new()));
    mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn an_echoed_auth_plain_line_is_masked() {
    let server = SmtpServer::with_auth("PLAIN", |lines| {
        format!("535 5.7.8 authentication failed: {}", lines.join(" "))
    })
    .await;
    let err = deliver_now_error(&server).await;
    assert_eq!(err.code(), "mail-delivery-rejected");
    assert!(server.auth_lines()[0].starts_with("AUTH PLAIN "));
    assert_clean(&texts(err), &sent_blobs(&server));
}

#[tokio::test]
async fn echoed_auth_login_lines_are_masked() {
    let server = SmtpServer::with_auth("LOGIN", |lines| {
        format!("535 5.7.8 bad credentials {}", lines.join(" | "))
    })
    .await;
    let err = deliver_now_error(&server).await;
    assert_eq!(err.code(), "mail-delivery-rejected");
    let blobs = sent_blobs(&server);
    assert_eq!(blobs.len(), 2, "user and password lines");
    assert_clean(&texts(err), &blobs);
}

#[tokio::test]
async fn a_password_echoed_in_clear_is_masked_everywhere() {
    let server = SmtpServer::with_auth("PLAIN", |_| {
        format!("535 5.7.8 password {PASSWORD} rejected (again: {PASSWORD})")
    })
    .await;
    let err = deliver_now_error(&server).await;
    assert_clean(&texts(err), &sent_blobs(&server));
}

#[tokio::test]
async fn a_transient_auth_failure_is_masked_too() {
    let server = SmtpServer::with_auth("PLAIN", |lines| {
        format!("454 4.7.0 try later 535 {}", lines[0])
    })
    .await;
    let err = deliver_now_error(&server).await;
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-failed", false)
    );
    assert_clean(&texts(err), &sent_blobs(&server));
}

async fn last_error_in_the_store_holds_no_secret(store: Arc<dyn Store>, _clock: ManualClock) {
    let server = SmtpServer::with_auth("PLAIN", |lines| {
        format!("535 5.7.8 {} / {PASSWORD}", lines.join(" "))
    })
    .await;
    let (mailer, backend) = mailer(&server, store.clone());
    let id = mailer
        .deliver_later(mail(), None, EnqueueOptions::new())
        .await
        .unwrap();
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(backend), START_MS)
        .await
        .unwrap();
    assert_eq!(result, Err("mail-delivery-rejected".to_owned()));
    let row = job(&store, id.job_id()).await;
    assert_eq!(row.status, JobStatus::Failed);
    let last_error = row.last_error.expect("lastError is recorded");
    assert_clean(&[last_error], &sent_blobs(&server));
}

on_every_store!(last_error_in_the_store_holds_no_secret);

#[test]
fn plaintext_credentials_to_a_remote_host_are_refused_before_any_io() {
    // 192.0.2.1 is TEST-NET-1: nothing is listening, and nothing is contacted.
    let err = SmtpBackend::new(settings("192.0.2.1", 25)).unwrap_err();
    assert_eq!(err.code(), "mail-smtp-plaintext-auth");
    assert!(err.is_permanent());
    assert!(!error_chain(&err).contains(PASSWORD));
    let env = |k: &str| {
        let v = match k {
            "DURAQ_SMTP_HOST" => "mail.example.com",
            "DURAQ_SMTP_TLS" => "none",
            "DURAQ_SMTP_USERNAME" => USER,
            "DURAQ_SMTP_PASSWORD" => PASSWORD,
            _ => return None,
        };
        Some(v.to_owned())
    };
    let from_env = SmtpSettings::from_lookup(env).unwrap();
    let err = SmtpBackend::new(from_env.clone()).unwrap_err();
    assert_eq!(err.code(), "mail-smtp-plaintext-auth");
    // The same host with TLS, or plaintext without credentials, is accepted.
    assert!(SmtpBackend::new(from_env.clone().tls(TlsMode::StartTls)).is_ok());
    assert!(SmtpBackend::new(SmtpSettings::new("192.0.2.1", 25).tls(TlsMode::None)).is_ok());
}

#[tokio::test]
async fn plaintext_credentials_to_loopback_still_authenticate_and_deliver() {
    let server = SmtpServer::with_auth("PLAIN", |_| "235 2.7.0 accepted".to_owned()).await;
    let (mailer, _) = mailer(&server, Arc::new(MemoryStore::new()));
    mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap();
    assert_eq!(server.auth_lines().len(), 1);
    assert_eq!(server.sessions().len(), 1);
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn connection_failures_keep_their_cause() {
    // A port that was just bound and released: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let backend = Arc::new(SmtpBackend::new(settings("127.0.0.1", port)).unwrap());
    let err = Mailer::new(Arc::new(MemoryStore::new()), backend)
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-failed", false)
    );
    let text = error_chain(&err).to_ascii_lowercase();
    assert!(text.contains("refused"), "the cause is kept: {text}");
}
