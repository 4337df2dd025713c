//! Attempt-side promises of `docs/mail.md`: the pre-attempt checks, in order, before
//! the backend may do any I/O; the retention window counted from the first
//! attempt; expiry without retries; the key never rotated.

mod support;

use std::sync::Arc;

use duraq_core::{Clock, EnqueueOptions, JobStatus, ManualClock, Store};
use duraq_mailer::{
    operation_key, DeliveryOperation, MailDeliverJob, MailPayload, Mailer, MemoryBackend,
    OperationResult,
};
use support::common::{job, run_attempt};

const RETENTION: i64 = 60_000;

fn mail() -> MailPayload {
    MailPayload::new("Receipt")
        .to("ada@example.com")
        .text("Thanks")
}

fn backend() -> MemoryBackend {
    MemoryBackend::new()
        .default_from("shop@example.com")
        .idempotent("memory-kind", RETENTION)
}

async fn enqueue(store: &Arc<dyn Store>, backend: &MemoryBackend, id: &str) -> String {
    let mailer = Mailer::new(store.clone(), Arc::new(backend.clone()));
    let op = Some(DeliveryOperation::required(id));
    mailer
        .deliver_later(mail(), op, EnqueueOptions::new())
        .await
        .unwrap()
        .job_id()
        .to_owned()
}

async fn delivers_with_the_operation_id_and_records_the_result(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let backend = backend();
    let job_id = enqueue(&store, &backend, "order-1").await;
    let handler = MailDeliverJob::new(Arc::new(backend.clone()));
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(job(&store, &job_id).await.status, JobStatus::Completed);
    let sent = backend.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].idempotency_key.as_deref(), Some("order-1"));
    assert_eq!(sent[0].payload.from.as_deref(), Some("shop@example.com"));
    let op = store
        .get_operation(&operation_key("order-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(op.first_attempt_started_at_ms, Some(clock.now_ms()));
    let result: OperationResult = serde_json::from_value(op.result.unwrap()).unwrap();
    assert_eq!(result.provider_message_id.as_deref(), Some("memory-1"));
}

async fn provider_change_fails_before_io(store: Arc<dyn Store>, clock: ManualClock) {
    let enqueued_with = backend();
    for (n, configured) in [
        MemoryBackend::new().idempotent("other-kind", RETENTION),
        MemoryBackend::new().idempotent("memory-kind", RETENTION * 2),
        MemoryBackend::new(),
    ]
    .into_iter()
    .enumerate()
    {
        let job_id = enqueue(&store, &enqueued_with, &format!("swap-{n}")).await;
        let handler = MailDeliverJob::new(Arc::new(configured.clone()));
        let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
        assert_eq!(result, Err("mail-delivery-provider-changed".to_owned()));
        let row = job(&store, &job_id).await;
        assert_eq!(
            row.status,
            JobStatus::Failed,
            "no retries after a provider change"
        );
        assert!(row
            .last_error
            .unwrap()
            .starts_with("mail-delivery-provider-changed"));
        assert_eq!(configured.send_calls(), 0);
        let op = store
            .get_operation(&operation_key(&format!("swap-{n}")))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            op.first_attempt_started_at_ms, None,
            "checked before the first-attempt stamp"
        );
    }
}

async fn retention_counts_from_the_first_attempt_not_enqueue(
    store: Arc<dyn Store>,
    clock: ManualClock,
) {
    let backend = backend();
    let job_id = enqueue(&store, &backend, "late").await;
    // Long after enqueue: the window has not started yet.
    clock.advance(RETENTION * 10);
    backend.fail_next("provider down", false);
    let handler = MailDeliverJob::new(Arc::new(backend.clone()));
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    let first = clock.now_ms();
    let op = store
        .get_operation(&operation_key("late"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(op.first_attempt_started_at_ms, Some(first));
    // One millisecond before the window closes, a retry still sends (same key).
    clock.set(first + RETENTION - 1);
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(job(&store, &job_id).await.status, JobStatus::Completed);
    let keys: Vec<_> = backend
        .sent()
        .into_iter()
        .map(|m| m.idempotency_key)
        .collect();
    assert_eq!(keys, vec![Some("late".to_owned())]);
    let op = store
        .get_operation(&operation_key("late"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        op.first_attempt_started_at_ms,
        Some(first),
        "the stamp is set once"
    );
}

async fn expiry_fails_closed_without_retries_or_io(store: Arc<dyn Store>, clock: ManualClock) {
    let backend = backend();
    let job_id = enqueue(&store, &backend, "expiring").await;
    backend.fail_next("provider down", false);
    let handler = MailDeliverJob::new(Arc::new(backend.clone()));
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-failed".to_owned()));
    assert_eq!(job(&store, &job_id).await.status, JobStatus::Queued);
    clock.advance(RETENTION);
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-idempotency-expired".to_owned()));
    let row = job(&store, &job_id).await;
    assert_eq!(row.status, JobStatus::Failed);
    assert!(
        row.attempts <= row.max_retries,
        "failed with retries left: no further retries"
    );
    assert!(row
        .last_error
        .unwrap()
        .starts_with("mail-delivery-idempotency-expired"));
    assert_eq!(
        backend.send_calls(),
        1,
        "only the first, failed attempt reached the backend"
    );
}

async fn a_recorded_delivery_is_not_sent_again(store: Arc<dyn Store>, clock: ManualClock) {
    let backend = backend();
    let job_id = enqueue(&store, &backend, "once").await;
    let handler = MailDeliverJob::new(Arc::new(backend.clone()));
    run_attempt(&store, &handler, clock.now_ms())
        .await
        .unwrap()
        .1
        .unwrap();
    // An operator retry (or a lost report) runs the job again: no second send.
    store.retry_job(&job_id).await.unwrap();
    run_attempt(&store, &handler, clock.now_ms())
        .await
        .unwrap()
        .1
        .unwrap();
    assert_eq!(backend.sent().len(), 1);
}

async fn permanent_rejection_fails_without_retries(store: Arc<dyn Store>, clock: ManualClock) {
    let backend = backend();
    let job_id = enqueue(&store, &backend, "rejected").await;
    backend.fail_next("mailbox unavailable", true);
    let handler = MailDeliverJob::new(Arc::new(backend.clone()));
    let (_, result) = run_attempt(&store, &handler, clock.now_ms()).await.unwrap();
    assert_eq!(result, Err("mail-delivery-rejected".to_owned()));
    let row = job(&store, &job_id).await;
    assert_eq!(row.status, JobStatus::Failed);
    assert!(row.last_error.unwrap().contains("mailbox unavailable"));
}

on_every_store!(
    delivers_with_the_operation_id_and_records_the_result,
    provider_change_fails_before_io,
    retention_counts_from_the_first_attempt_not_enqueue,
    expiry_fails_closed_without_retries_or_io,
    a_recorded_delivery_is_not_sent_again,
    permanent_rejection_fails_without_retries,
);
