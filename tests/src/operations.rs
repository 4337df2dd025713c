//! Operation records (`docs/mail.md` builds mail delivery on them): a record rides along
//! with an idempotent enqueue in the same transaction, `start_operation_attempt`
//! stamps the first attempt exactly once, results are stored, and conflicts or
//! missing records write nothing.

use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, NewJob, NewOperation};
use serde_json::json;

use crate::harness::{expect_conflict, expect_not_found, job, Harness};

fn with_op(idem: &str, op_key: &str, args: serde_json::Value) -> NewJob {
    let op = NewOperation {
        key: op_key.into(),
        data: json!({"payloadDigest": "d1", "provider": "resend-api"}),
    };
    job("mail", args, EnqueueOptions::new().idempotency_key(idem))
        .with_operation(op)
        .unwrap()
}

pub async fn operation_rides_along(h: &Harness) {
    assert_eq!(h.store.get_operation("op").await.unwrap(), None);
    let id = h.insert(with_op("m1", "op", json!([1]))).await;
    let op = h
        .store
        .get_operation("op")
        .await
        .unwrap()
        .expect("operation row");
    assert_eq!((op.key.as_str(), op.job_id.as_str()), ("op", id.as_str()));
    assert_eq!(
        op.data,
        json!({"payloadDigest": "d1", "provider": "resend-api"})
    );
    assert_eq!(
        (
            op.created_at_ms,
            op.first_attempt_started_at_ms,
            op.result.clone()
        ),
        (h.now(), None, None)
    );
    h.advance(5);
    let replay = h
        .store
        .enqueue(with_op("m1", "op", json!([1])))
        .await
        .unwrap();
    assert_eq!(replay, EnqueueOutcome::Replayed(id));
    assert_eq!(
        h.store.get_operation("op").await.unwrap(),
        Some(op),
        "a replay leaves the record"
    );
}

pub async fn start_attempt_stamps_once(h: &Harness) {
    h.insert(with_op("m1", "op", json!([1]))).await;
    h.advance(1_000);
    let r0 = h.revision().await;
    let first = h.store.start_operation_attempt("op").await.unwrap();
    assert_eq!(first.first_attempt_started_at_ms, Some(h.now()));
    let stamped = h.now();
    h.advance(60_000);
    let second = h.store.start_operation_attempt("op").await.unwrap();
    assert_eq!(
        second.first_attempt_started_at_ms,
        Some(stamped),
        "stamped once"
    );
    assert_eq!(second, first);
    assert_eq!(h.store.get_operation("op").await.unwrap(), Some(first));
    assert_eq!(h.revision().await, r0, "operation rows are not counted");
}

pub async fn record_result(h: &Harness) {
    h.insert(with_op("m1", "op", json!([1]))).await;
    h.store
        .record_operation_result("op", json!({"providerMessageId": "abc"}))
        .await
        .unwrap();
    let op = h.store.get_operation("op").await.unwrap().unwrap();
    assert_eq!(op.result, Some(json!({"providerMessageId": "abc"})));
    assert_eq!(op.first_attempt_started_at_ms, None);
}

pub async fn missing_operation_not_found(h: &Harness) {
    h.insert(with_op("m1", "op", json!([1]))).await;
    let before = h.state().await;
    let stored = h.store.get_operation("op").await.unwrap();
    expect_not_found(
        h.store.start_operation_attempt("nope").await,
        ErrorCode::OperationNotFound,
    );
    assert_eq!(
        h.store.get_operation("nope").await.unwrap(),
        None,
        "not created by the failed call"
    );
    h.assert_unchanged(&before, "operation-not-found").await;
    assert_eq!(h.store.get_operation("op").await.unwrap(), stored);
}

pub async fn operation_key_in_use_conflicts(h: &Harness) {
    let id = h.insert(with_op("m1", "op", json!([1]))).await;
    let stored = h.store.get_operation("op").await.unwrap();
    let before = h.state().await;
    // Another scope claiming the same operation key.
    expect_conflict(
        h.store.enqueue(with_op("m2", "op", json!([1]))).await,
        ErrorCode::IdempotencyConflict,
    );
    // The same scope with other content: the job conflicts, no second record.
    expect_conflict(
        h.store.enqueue(with_op("m1", "op2", json!([2]))).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "operation conflicts").await;
    assert_eq!(h.store.get_operation("op").await.unwrap(), stored);
    assert_eq!(h.store.get_operation("op2").await.unwrap(), None);
    assert_eq!(stored.map(|o| o.job_id), Some(id));
    let batch = vec![
        with_op("m3", "op3", json!([3])),
        with_op("m4", "op", json!([4])),
    ];
    expect_conflict(
        h.store.enqueue_batch(batch).await,
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(
        h.store.get_operation("op3").await.unwrap(),
        None,
        "the batch rolled back"
    );
    h.assert_unchanged(&before, "a batch with an operation conflict")
        .await;
}
