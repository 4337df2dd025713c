//! Large `enqueue_batch` calls (`docs/jobs.md`): a store may write a run of
//! plain jobs (no key, dedupe, operation, cap or rate limit) in bulk (the
//! PostgreSQL store uses `COPY` from 256 rows on), so these cases pin what the
//! bulk path must keep from the one-by-one rule: jobs are
//! decided in order, so a replay, a dedupe request or a refusal in the middle of
//! a long batch answers as it would alone; the rows read back as if enqueued one
//! by one; the counts move exactly, as one mutation; and a refused batch leaves
//! nothing behind.

use std::time::Duration;

use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob};
use serde_json::json;

use crate::harness::{expect_conflict, job, next_delta, Harness};

/// `n` plain jobs of queue `q` with ids `{prefix}-{i}` and args `[prefix, i]`.
fn plain_run(prefix: &str, n: usize, q: &str) -> Vec<NewJob> {
    (0..n)
        .map(|i| {
            job("j", json!([prefix, i]), EnqueueOptions::new().queue(q))
                .with_id(format!("{prefix}-{i}"))
        })
        .collect()
}

/// Runs of plain jobs (each long enough for a bulk path) around a replay, two dedupe requests (one answered by a
/// job earlier in the same batch, one by a job from before) and a fresh keyed
/// job: every outcome in order, the counts exact, one revision, one delta.
pub async fn a_large_mixed_batch_is_decided_in_order(h: &Harness) {
    let keyed = || EnqueueOptions::new().idempotency_key("k");
    let first = h.store.enqueue(job("j", json!(["k"]), keyed())).await;
    let first = first.unwrap().job_id().to_owned();
    let old = h
        .insert(job("old", json!([0]), EnqueueOptions::new()).with_id("old"))
        .await;
    let mut deltas = h.store.subscribe_counts();
    let before = h.snapshot().await;

    let dedupe = EnqueueOptions::new().deduplicate_while_queued();
    let mut batch = plain_run("a", 300, "qa");
    batch.push(job("j", json!(["k"]), keyed()));
    batch.push(job("j", json!(["a", 7]), dedupe.clone().queue("qa")));
    batch.extend(plain_run("b", 256, "qb"));
    batch.push(job("old", json!([0]), dedupe));
    batch.push(
        job(
            "j",
            json!(["fresh"]),
            EnqueueOptions::new().idempotency_key("new"),
        )
        .with_id("new"),
    );
    batch.extend(plain_run("c", 260, "qa"));
    let out = h.store.enqueue_batch(batch).await.unwrap();

    assert_eq!(out.len(), 300 + 2 + 256 + 2 + 260);
    let created = |prefix: &'static str, n: usize| {
        (0..n).map(move |i| EnqueueOutcome::Created(format!("{prefix}-{i}")))
    };
    let mut expected: Vec<EnqueueOutcome> = created("a", 300).collect();
    expected.push(EnqueueOutcome::Replayed(first));
    expected.push(EnqueueOutcome::Deduplicated("a-7".into()));
    expected.extend(created("b", 256));
    expected.push(EnqueueOutcome::Deduplicated(old));
    expected.push(EnqueueOutcome::Created("new".into()));
    expected.extend(created("c", 260));
    assert_eq!(out, expected);

    let snap = h.snapshot().await;
    let added = 300 + 256 + 1 + 260;
    assert_eq!(snap.revision, before.revision + 1, "one mutation");
    assert_eq!(snap.counts.queued, before.counts.queued + added);
    assert_eq!(snap.total, before.total + added);
    let delta = next_delta(&mut deltas, "the mixed batch").await;
    assert_eq!(
        (delta.revision, delta.deltas.queued, delta.deltas.all),
        (before.revision + 1, added, added)
    );
    assert!(deltas.try_recv().is_err(), "exactly one delta per batch");
    let queues = h.store.queue_snapshot().await.unwrap();
    let queued = |q: &str| {
        queues
            .queues
            .iter()
            .find(|c| c.queue == q)
            .map_or(0, |c| c.counts.queued)
    };
    assert_eq!((queued("qa"), queued("qb")), (560, 256));
}

/// A plain job of a large batch reads back exactly as the same job enqueued
/// alone (every option a plain job may carry), apart from its id.
pub async fn large_batch_rows_match_single_enqueues(h: &Harness) {
    let opts = || {
        EnqueueOptions::new()
            .queue("mail")
            .max_retries(7)
            .priority(-3)
            .timeout(Duration::from_millis(1_500))
            .run_in(Duration::from_secs(60))
            .trace_parent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    };
    let args = json!({"to": "a@example.com", "n": [1, 2.5, null, "ü"]});
    let alone = h
        .insert(job("send", args.clone(), opts()).with_id("alone"))
        .await;
    let batch: Vec<_> = (0..300)
        .map(|i| job("send", args.clone(), opts()).with_id(format!("m-{i}")))
        .collect();
    assert_eq!(h.store.enqueue_batch(batch).await.unwrap().len(), 300);
    let mut single = h.get(&alone).await;
    for id in ["m-0", "m-150", "m-299"] {
        let row = h.get(id).await;
        assert_eq!(row.status, JobStatus::Queued);
        single.id = row.id.clone();
        assert_eq!(row, single, "{id}");
    }
    let plain = job("plain", json!([]), EnqueueOptions::new());
    let batch: Vec<_> = (0..260)
        .map(|i| plain.clone().with_id(format!("p-{i}")))
        .collect();
    assert_eq!(h.store.enqueue_batch(batch).await.unwrap().len(), 260);
    let row = h.get("p-130").await;
    assert_eq!(
        (
            row.priority,
            row.timeout_ms,
            row.trace_parent,
            row.queue.as_str()
        ),
        (0, None, None, "default")
    );
}

/// A large batch refused by one of its jobs (an id in use, a keyed job whose
/// key owns another request) writes none of its rows and moves no count.
pub async fn a_refused_large_batch_changes_nothing(h: &Harness) {
    h.insert(job("j", json!(["taken"]), EnqueueOptions::new()).with_id("a-280"))
        .await;
    h.enqueue_with("j", json!([1]), EnqueueOptions::new().idempotency_key("k"))
        .await;
    let before = h.state().await;
    expect_conflict(
        h.store.enqueue_batch(plain_run("a", 300, "q")).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "a batch with an id in use")
        .await;
    let mut batch = plain_run("b", 300, "q");
    batch.push(job(
        "j",
        json!([2]),
        EnqueueOptions::new().idempotency_key("k"),
    ));
    expect_conflict(
        h.store.enqueue_batch(batch).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "a batch with an idempotency conflict")
        .await;
    assert_eq!(h.store.get_job("b-0").await.unwrap(), None);
}
