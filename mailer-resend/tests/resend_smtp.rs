//! `ResendSmtpBackend` against a real local SMTP listener (plain, no TLS).

mod support;

use std::sync::Arc;

use duraq_core::inspect::JobFilter;
use duraq_core::{Clock, EnqueueOptions, JobStatus, ManualClock, Store};
use duraq_mailer::{
    operation_key, DeliveryContext, DeliveryOperation, MailDeliverJob, MailPayload, Mailer, Secret,
    SmtpSettings, TlsMode,
};
use duraq_mailer_resend::{
    ResendApiBackend, ResendApiSettings, ResendSmtpBackend, RESEND_RETENTION_MS,
};
use support::common::{job, run_attempt};
use support::smtp::SmtpServer;

fn resend(server: &SmtpServer) -> Arc<ResendSmtpBackend> {
    let settings = SmtpSettings::new("127.0.0.1", server.port())
        .tls(TlsMode::None)
        .default_from("shop@example.com");
    Arc::new(ResendSmtpBackend::new(settings).unwrap())
}

fn mail() -> MailPayload {
    MailPayload::new("Receipt")
        .to("ada@example.com")
        .text("Thanks")
        .header("X-Order", "42")
}

fn required(id: &str) -> Option<DeliveryOperation> {
    Some(DeliveryOperation::required(id))
}

async fn no_jobs(store: &Arc<dyn Store>) -> bool {
    store
        .search_jobs(&JobFilter::default())
        .await
        .unwrap()
        .jobs
        .is_empty()
}

async fn header_is_sent_exactly_once_with_the_id(store: Arc<dyn Store>, clock: ManualClock) {
    let server = SmtpServer::start().await;
    let backend = resend(&server);
    let mailer = Mailer::new(store.clone(), backend.clone());
    let job_id = mailer
        .deliver_later(mail(), required("order-42:receipt"), EnqueueOptions::new())
        .await
        .unwrap();
    assert_eq!(server.connections(), 0);
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(backend), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(
        job(&store, job_id.job_id()).await.status,
        JobStatus::Completed
    );
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        sessions[0].header_values("Resend-Idempotency-Key"),
        ["order-42:receipt"]
    );
    assert_eq!(sessions[0].header_values("From"), ["shop@example.com"]);
    let op = store
        .get_operation(&operation_key("order-42:receipt"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        op.result.is_some(),
        "the SMTP reply is kept on the operation"
    );
}

async fn caller_header_of_that_name_is_refused_before_connecting(
    store: Arc<dyn Store>,
    _clock: ManualClock,
) {
    let server = SmtpServer::start().await;
    let mailer = Mailer::new(store.clone(), resend(&server));
    for name in [
        "Resend-Idempotency-Key",
        "resend-idempotency-key",
        "RESEND-IDEMPOTENCY-KEY",
    ] {
        let bad = mail().header(name, "mine");
        let err = mailer
            .deliver_later(bad.clone(), required("op"), EnqueueOptions::new())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "mail-delivery-idempotency-header-reserved");
        let err = mailer
            .deliver_later(bad.clone(), None, EnqueueOptions::new())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "mail-delivery-idempotency-header-reserved");
        let err = mailer
            .deliver_now(bad, required("op"), DeliveryContext::standalone())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "mail-delivery-idempotency-header-reserved");
    }
    assert!(no_jobs(&store).await);
    assert_eq!(server.connections(), 0);
}

async fn invalid_ids_and_missing_sender_are_refused_before_enqueue(
    store: Arc<dyn Store>,
    _clock: ManualClock,
) {
    let server = SmtpServer::start().await;
    let mailer = Mailer::new(store.clone(), resend(&server));
    for id in [
        String::new(),
        "x".repeat(257),
        "a\nb".into(),
        "a\rb".into(),
        "nul\0".into(),
        "del\u{7f}".into(),
    ] {
        let err = mailer
            .deliver_later(mail(), required(&id), EnqueueOptions::new())
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            "mail-delivery-idempotency-key-invalid",
            "{id:?}"
        );
        let err = mailer
            .deliver_now(mail(), required(&id), DeliveryContext::standalone())
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            "mail-delivery-idempotency-key-invalid",
            "{id:?}"
        );
    }
    let no_default = Arc::new(
        ResendSmtpBackend::new(SmtpSettings::new("127.0.0.1", server.port()).tls(TlsMode::None))
            .unwrap(),
    );
    let err = Mailer::new(store.clone(), no_default)
        .deliver_later(mail(), required("op"), EnqueueOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mail-delivery-from-missing");
    assert!(no_jobs(&store).await);
    assert_eq!(server.connections(), 0);
    // 256 characters (multi-byte ones too) are fine.
    mailer
        .deliver_later(mail(), required(&"é".repeat(256)), EnqueueOptions::new())
        .await
        .unwrap();
}

async fn expired_window_fails_without_connecting(store: Arc<dyn Store>, clock: ManualClock) {
    let server = SmtpServer::start().await;
    let backend = resend(&server);
    let mailer = Mailer::new(store.clone(), backend.clone());
    let job_id = mailer
        .deliver_later(mail(), required("op-exp"), EnqueueOptions::new())
        .await
        .unwrap();
    server.reply_to_next_data("451 try again later");
    let handler = MailDeliverJob::new(backend);
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    assert_eq!(server.connections(), 1);
    clock.advance(RESEND_RETENTION_MS);
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-idempotency-expired".to_owned()));
    let row = job(&store, job_id.job_id()).await;
    assert_eq!(row.status, JobStatus::Failed);
    assert!(row
        .last_error
        .unwrap()
        .starts_with("mail-delivery-idempotency-expired"));
    assert_eq!(server.connections(), 1, "no connection after expiry");
}

async fn window_starts_at_the_first_attempt(store: Arc<dyn Store>, clock: ManualClock) {
    let server = SmtpServer::start().await;
    let backend = resend(&server);
    let mailer = Mailer::new(store.clone(), backend.clone());
    let run_at = clock.now_ms() + 2 * RESEND_RETENTION_MS;
    let opts = EnqueueOptions {
        scheduled_at_ms: Some(run_at),
        ..EnqueueOptions::new()
    };
    mailer
        .deliver_later(mail(), required("op-late"), opts)
        .await
        .unwrap();
    clock.set(run_at);
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(backend), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(
        server.sessions()[0].header_values("Resend-Idempotency-Key"),
        ["op-late"]
    );
}

async fn swapping_the_backend_between_enqueue_and_attempt_is_refused(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let server = SmtpServer::start().await;
    let http = support::http::HttpServer::start().await;
    let mailer = Mailer::new(store.clone(), resend(&server));
    let job_id = mailer
        .deliver_later(mail(), required("op-swap"), EnqueueOptions::new())
        .await
        .unwrap();
    let mut settings = ResendApiSettings::new(Secret::new("re_key"));
    settings.base_url = http.base_url();
    let api = Arc::new(ResendApiBackend::new(settings).unwrap());
    let (_, result) = run_attempt(&store, &MailDeliverJob::new(api), clock.now_ms())
        .await
        .unwrap();
    assert_eq!(result, Err("mail-delivery-provider-changed".to_owned()));
    assert_eq!(job(&store, job_id.job_id()).await.status, JobStatus::Failed);
    assert_eq!((server.connections(), http.connections()), (0, 0));
}

on_every_store!(
    header_is_sent_exactly_once_with_the_id,
    caller_header_of_that_name_is_refused_before_connecting,
    invalid_ids_and_missing_sender_are_refused_before_enqueue,
    expired_window_fails_without_connecting,
    window_starts_at_the_first_attempt,
    swapping_the_backend_between_enqueue_and_attempt_is_refused,
);
