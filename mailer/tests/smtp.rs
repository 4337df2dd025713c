//! Generic SMTP against a real local listener: what goes over the wire, the
//! at-least-once path through the real worker runtime, and that refusals open
//! no connection.

mod support;

use std::sync::Arc;

use duraq_core::worker::WorkerEvent;
use duraq_core::{EnqueueOptions, JobStatus, MemoryStore, Registry, Store, Worker};
use duraq_mailer::{
    DeliveryContext, MailDeliverJob, MailPayload, Mailer, SmtpBackend, SmtpSettings, TlsMode,
};
use support::smtp::SmtpServer;

fn backend(server: &SmtpServer, from: Option<&str>) -> SmtpBackend {
    let mut settings = SmtpSettings::new("127.0.0.1", server.port()).tls(TlsMode::None);
    settings.default_from = from.map(str::to_owned);
    SmtpBackend::new(settings).unwrap()
}

fn mail() -> MailPayload {
    MailPayload::new("Hello there")
        .to("Ada <ada@example.com>")
        .cc("cc@example.com")
        .bcc("hidden@example.com")
        .reply_to("help@example.com")
        .text("plain body")
        .html("<p>html body</p>")
        .header("X-Order", "42")
}

#[tokio::test]
async fn deliver_now_puts_the_mail_on_the_wire() {
    let server = SmtpServer::start().await;
    let mailer = Mailer::new(
        Arc::new(MemoryStore::new()),
        Arc::new(backend(&server, Some("shop@example.com"))),
    );
    let delivered = mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap();
    assert!(delivered
        .provider_message_id
        .unwrap()
        .contains("queued as test-1"));
    assert_eq!(server.connections(), 1);
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(s.mail_from, "FROM:<shop@example.com>");
    let mut rcpt = s.rcpt_to.clone();
    rcpt.sort();
    assert_eq!(
        rcpt,
        [
            "TO:<ada@example.com>",
            "TO:<cc@example.com>",
            "TO:<hidden@example.com>"
        ]
    );
    assert_eq!(s.header_values("Subject"), ["Hello there"]);
    assert_eq!(s.header_values("X-Order"), ["42"]);
    assert!(s.header_values("Bcc").is_empty(), "Bcc is envelope-only");
    assert!(s.data.contains("plain body") && s.data.contains("<p>html body</p>"));
}

#[tokio::test]
async fn missing_sender_and_bad_addresses_open_no_connection() {
    let server = SmtpServer::start().await;
    let mailer = Mailer::new(
        Arc::new(MemoryStore::new()),
        Arc::new(backend(&server, None)),
    );
    let err = mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mail-delivery-from-missing");
    let bad = mail().from("shop@example.com").to("not an address");
    let err = mailer
        .deliver_now(bad, None, DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mail-invalid-payload");
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn smtp_answers_decide_retries() {
    let server = SmtpServer::start().await;
    let mailer = Mailer::new(
        Arc::new(MemoryStore::new()),
        Arc::new(backend(&server, Some("shop@example.com"))),
    );
    server.reply_to_next_data("451 try again later");
    let err = mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-failed", false)
    );
    server.reply_to_next_data("550 no such user");
    let err = mailer
        .deliver_now(mail(), None, DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.is_permanent()),
        ("mail-delivery-rejected", true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliver_later_runs_on_the_worker_runtime() {
    let server = SmtpServer::start().await;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let backend = Arc::new(backend(&server, Some("shop@example.com")));
    let mailer = Mailer::new(store.clone(), backend.clone());
    let job_id = mailer
        .deliver_later(mail(), None, EnqueueOptions::new())
        .await
        .unwrap()
        .job_id()
        .to_owned();
    assert_eq!(server.connections(), 0, "enqueue does no I/O");

    let registry = Registry::new()
        .register(MailDeliverJob::new(backend))
        .unwrap();
    let worker = Worker::builder(store.clone(), registry).build().unwrap();
    let mut events = worker.subscribe();
    let handle = worker.spawn();
    loop {
        match events.recv().await.expect("worker events") {
            WorkerEvent::Finished(f) if f.job_id == job_id => break,
            _ => {}
        }
    }
    handle.shutdown_and_join().await.unwrap();
    assert_eq!(
        store.get_job(&job_id).await.unwrap().unwrap().status,
        JobStatus::Completed
    );
    assert_eq!(server.sessions().len(), 1);
    assert_eq!(
        server.sessions()[0].header_values("Subject"),
        ["Hello there"]
    );
}
