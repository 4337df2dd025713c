//! Producer-side promises of `docs/mail.md`: refusals before enqueue and I/O, the
//! operation record stored with its job, replay and conflict.

mod support;

use std::sync::Arc;

use duraq_core::inspect::{JobFilter, PruneRequest};
use duraq_core::{Clock, EnqueueOptions, EnqueueOutcome, ManualClock, Store};
use duraq_mailer::{
    operation_key, DeliveryContext, DeliveryOperation, MailPayload, Mailer, MemoryBackend,
    OperationRecord, SmtpBackend, SmtpSettings, TlsMode,
};
use support::common::run_attempt;
use support::smtp::SmtpServer;

fn mail() -> MailPayload {
    MailPayload::new("Receipt")
        .to("ada@example.com")
        .cc("cc@example.com")
        .bcc("bcc@example.com")
        .reply_to("help@example.com")
        .text("Thanks")
        .html("<p>Thanks</p>")
        .header("X-Order", "42")
        .identity("OrderMailer", "receipt")
}

fn idempotent() -> MemoryBackend {
    MemoryBackend::new()
        .default_from("shop@example.com")
        .idempotent("memory-kind", 60_000)
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

async fn required_on_generic_smtp_fails_before_enqueue_and_io(
    store: Arc<dyn Store>,
    _clock: ManualClock,
) {
    let server = SmtpServer::start().await;
    let settings = SmtpSettings::new("127.0.0.1", server.port())
        .tls(TlsMode::None)
        .default_from("a@example.com");
    let mailer = Mailer::new(store.clone(), Arc::new(SmtpBackend::new(settings).unwrap()));
    let later = mailer
        .deliver_later(mail(), required("op-1"), EnqueueOptions::new())
        .await
        .unwrap_err();
    assert_eq!(later.code(), "mail-delivery-idempotency-unsupported");
    let now = mailer
        .deliver_now(mail(), required("op-1"), DeliveryContext::standalone())
        .await
        .unwrap_err();
    assert_eq!(now.code(), "mail-delivery-idempotency-unsupported");
    assert!(no_jobs(&store).await);
    assert!(store
        .get_operation(&operation_key("op-1"))
        .await
        .unwrap()
        .is_none());
    assert_eq!(server.connections(), 0);
}

async fn invalid_id_is_refused_before_enqueue(store: Arc<dyn Store>, _clock: ManualClock) {
    let mailer = Mailer::new(store.clone(), Arc::new(idempotent()));
    for id in [String::new(), "x".repeat(1025)] {
        let err = mailer
            .deliver_later(mail(), required(&id), EnqueueOptions::new())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "mail-delivery-idempotency-key-invalid");
    }
    let other_key = EnqueueOptions::new().idempotency_key("not-the-op-id");
    let err = mailer
        .deliver_later(mail(), required("op-1"), other_key)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "mail-delivery-idempotency-key-invalid");
    assert!(no_jobs(&store).await);
}

async fn operation_is_stored_with_its_job(store: Arc<dyn Store>, _clock: ManualClock) {
    let mailer = Mailer::new(store.clone(), Arc::new(idempotent()));
    let outcome = mailer
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await
        .unwrap();
    let EnqueueOutcome::Created(job_id) = outcome else {
        panic!("expected a new job: {outcome:?}")
    };
    let job = support::common::job(&store, &job_id).await;
    assert_eq!(job.idempotency_key.as_deref(), Some("order-42"));
    let op = store
        .get_operation(&operation_key("order-42"))
        .await
        .unwrap()
        .expect("operation row");
    assert_eq!(op.job_id, job_id);
    assert_eq!(op.first_attempt_started_at_ms, None);
    let record: OperationRecord = serde_json::from_value(op.data).unwrap();
    assert_eq!(record.terms.id, "order-42");
    assert_eq!(record.terms.provider_kind, "memory-kind");
    assert_eq!(record.terms.retention_ms, 60_000);
    // The default sender was frozen into the payload before the digest.
    assert_eq!(record.payload.from.as_deref(), Some("shop@example.com"));
    assert_eq!(record.terms.payload_digest, record.payload.digest());
}

async fn replay_returns_the_original_job_even_after_pruning(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let backend = idempotent();
    let mailer = Mailer::new(store.clone(), Arc::new(backend.clone()));
    let first = mailer
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await
        .unwrap();
    let replay = mailer
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await
        .unwrap();
    assert_eq!(replay, EnqueueOutcome::Replayed(first.job_id().to_owned()));

    let handler = duraq_mailer::MailDeliverJob::new(Arc::new(backend.clone()));
    let (_, result) = run_attempt(&store, &handler, clock.now_ms())
        .await
        .expect("a due job");
    assert_eq!(result, Ok(()));
    clock.advance(1_000);
    let pruned = store
        .prune(&PruneRequest {
            completed_older_than: Some(std::time::Duration::ZERO),
            ..PruneRequest::default()
        })
        .await;
    assert_eq!(pruned.unwrap().deleted, 1);
    assert!(store.get_job(first.job_id()).await.unwrap().is_none());

    let after = mailer
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await
        .unwrap();
    assert_eq!(after, EnqueueOutcome::Replayed(first.job_id().to_owned()));
    assert!(
        no_jobs(&store).await,
        "a replay after pruning must not enqueue again"
    );
    let changed = mailer
        .deliver_later(
            mail().text("other"),
            required("order-42"),
            EnqueueOptions::new(),
        )
        .await;
    assert_eq!(
        changed.unwrap_err().code(),
        "mail-delivery-idempotency-conflict"
    );
    assert_eq!(backend.sent().len(), 1);
}

async fn same_id_with_other_content_conflicts(store: Arc<dyn Store>, _clock: ManualClock) {
    let mailer = Mailer::new(store.clone(), Arc::new(idempotent()));
    let first = mailer
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await
        .unwrap();
    let variants = [
        mail().to("eve@example.com"),
        mail().cc("x@example.com"),
        mail().bcc("x@example.com"),
        mail().from("other@example.com"),
        mail().reply_to("x@example.com"),
        MailPayload {
            subject: "Other".into(),
            ..mail()
        },
        mail().html("<p>other</p>"),
        mail().text("other"),
        mail().header("X-Order", "43"),
        mail().header("X-New", "1"),
    ];
    for changed in variants {
        let err = mailer
            .deliver_later(changed.clone(), required("order-42"), EnqueueOptions::new())
            .await;
        assert_eq!(
            err.unwrap_err().code(),
            "mail-delivery-idempotency-conflict",
            "{changed:?}"
        );
    }
    // Another queue is another idempotency scope, but the operation id is taken.
    let err = mailer
        .deliver_later(
            mail(),
            required("order-42"),
            EnqueueOptions::new().queue("mail"),
        )
        .await;
    assert_eq!(
        err.unwrap_err().code(),
        "mail-delivery-idempotency-conflict"
    );
    // Another provider under the same id conflicts too.
    let other = Mailer::new(
        store.clone(),
        Arc::new(idempotent().idempotent("other-kind", 60_000)),
    );
    let err = other
        .deliver_later(mail(), required("order-42"), EnqueueOptions::new())
        .await;
    assert_eq!(
        err.unwrap_err().code(),
        "mail-delivery-idempotency-conflict"
    );
    let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
    assert_eq!(
        jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        vec![first.job_id()]
    );
}

async fn transaction_active_is_refused_before_io(store: Arc<dyn Store>, _clock: ManualClock) {
    let backend = idempotent();
    let mailer = Mailer::new(store.clone(), Arc::new(backend.clone()));
    let err = mailer
        .deliver_now(
            mail(),
            required("op-tx"),
            DeliveryContext::inside_transaction(),
        )
        .await;
    assert_eq!(
        err.unwrap_err().code(),
        "mail-delivery-idempotency-transaction-active"
    );
    assert_eq!(backend.send_calls(), 0);
    // Outside a transaction the same delivery goes out with the key.
    mailer
        .deliver_now(mail(), required("op-tx"), DeliveryContext::standalone())
        .await
        .unwrap();
    // At-least-once delivery is not affected by a caller transaction.
    mailer
        .deliver_now(mail(), None, DeliveryContext::inside_transaction())
        .await
        .unwrap();
    let keys: Vec<_> = backend
        .sent()
        .into_iter()
        .map(|m| m.idempotency_key)
        .collect();
    assert_eq!(keys, vec![Some("op-tx".to_owned()), None]);
    assert!(no_jobs(&store).await);
}

on_every_store!(
    required_on_generic_smtp_fails_before_enqueue_and_io,
    invalid_id_is_refused_before_enqueue,
    operation_is_stored_with_its_job,
    replay_returns_the_original_job_even_after_pruning,
    same_id_with_other_content_conflicts,
    transaction_active_is_refused_before_io,
);
