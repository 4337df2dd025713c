//! The trace context a job carries (`docs/tracing.md`): a W3C
//! `traceparent` given at enqueue is stored as it was checked and comes back
//! on every read of the row (get, search, claim, after a retry, a completion
//! and an operator retry), through every insert path (one job, a plain batch, a
//! batch with options, a schedule-key replace); a job without one reads `None`.
//! It is not part of an idempotent request (a retried request from another
//! trace replays), and a malformed one is `invalid-trace-parent` with nothing
//! written.

use duraq_core::{
    EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, Outcome, RunningOwner,
};
use serde_json::json;

use crate::harness::{expect_invalid, job, key, Harness};

const A: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const B: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn traced(tp: &str) -> EnqueueOptions {
    EnqueueOptions::new().trace_parent(tp)
}

pub async fn trace_parent_round_trips_on_every_read(h: &Harness) {
    let id = h.insert(job("t", json!([1]), traced(A))).await;
    let plain = h.enqueue("u", json!([2])).await;
    assert_eq!(h.get(&id).await.trace_parent.as_deref(), Some(A));
    assert_eq!(h.get(&plain).await.trace_parent, None);
    let listed = h.jobs().await;
    let found = listed.iter().find(|j| j.id == id).expect("listed");
    assert_eq!(found.trace_parent.as_deref(), Some(A));

    let claimed = h.claim_id("w", "t", &id).await;
    assert_eq!(claimed.trace_parent.as_deref(), Some(A));
    assert!(h.report(&claimed, Outcome::failed("again")).await);
    h.advance(3_600_000);
    let reclaimed = h.claim_id("w", "t", &id).await;
    assert_eq!(reclaimed.trace_parent.as_deref(), Some(A));
    assert!(h.report(&reclaimed, Outcome::Completed).await);
    let done = h.get(&id).await;
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.trace_parent.as_deref(), Some(A));
    let retried = h.store.retry_job(&id).await.expect("retry_job");
    assert_eq!(retried.trace_parent.as_deref(), Some(A));

    if let Some(other) = h.reopen().await {
        let seen = other.get_job(&id).await.unwrap().expect("reopened");
        assert_eq!(seen.trace_parent.as_deref(), Some(A));
    }
}

pub async fn every_insert_path_stores_the_trace_parent(h: &Harness) {
    let plain_batch = vec![
        job("b", json!([1]), traced(A)),
        job("b", json!([2]), EnqueueOptions::new()),
        job("b", json!([3]), traced(B)),
    ];
    let optioned_batch = vec![
        job("c", json!([1]), traced(B).concurrency("cap", 2)),
        job("c", json!([2]), traced(A).idempotency_key("k")),
        job(
            "c",
            json!([3]),
            EnqueueOptions::new().deduplicate_while_queued(),
        ),
    ];
    for (batch, expected) in [
        (plain_batch, [Some(A), None, Some(B)]),
        (optioned_batch, [Some(B), Some(A), None]),
    ] {
        let outcomes = h.store.enqueue_batch(batch).await.expect("enqueue_batch");
        for (outcome, want) in outcomes.iter().zip(expected) {
            let got = h.get(outcome.job_id()).await;
            assert_eq!(got.trace_parent.as_deref(), want, "{outcome:?}");
        }
    }
    let replaced = h
        .store
        .replace_scheduled(
            &key("event:1"),
            job("r", json!([]), traced(B)),
            RunningOwner::KeepRunning,
        )
        .await
        .expect("replace_scheduled");
    let owner = h.get(&replaced.job_id).await;
    assert_eq!(owner.trace_parent.as_deref(), Some(B));
}

pub async fn trace_parent_is_not_part_of_an_idempotent_request(h: &Harness) {
    let keyed = |tp: Option<&str>| {
        let opts = EnqueueOptions::new().idempotency_key("k");
        match tp {
            Some(tp) => opts.trace_parent(tp),
            None => opts,
        }
    };
    let id = h.insert(job("i", json!([]), keyed(Some(A)))).await;
    for retry in [Some(B), None, Some(A)] {
        let again = h.store.enqueue(job("i", json!([]), keyed(retry))).await;
        assert_eq!(again.unwrap(), EnqueueOutcome::Replayed(id.clone()));
    }
    // The first request's context stays: a replay writes nothing.
    assert_eq!(h.get(&id).await.trace_parent.as_deref(), Some(A));
}

pub async fn invalid_trace_parent_changes_nothing(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    let zero_trace = A.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32));
    for bad in [
        "",
        "00-1-2-01",
        &A.to_uppercase(),
        &zero_trace,
        &format!("{A}-"),
    ] {
        expect_invalid(
            NewJob::new("j", json!([]), traced(bad)),
            ErrorCode::InvalidTraceParent,
        );
        let wire: EnqueueOptions = serde_json::from_value(json!({"traceParent": bad})).unwrap();
        expect_invalid(
            NewJob::new("j", json!([]), wire),
            ErrorCode::InvalidTraceParent,
        );
    }
    h.assert_unchanged(&before, "invalid-trace-parent").await;
}
