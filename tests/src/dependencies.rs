//! `docs/workflows.md`: jobs that wait for other jobs. A dependent is `pending`
//! (counted, never claimed) until its last dependency finishes, and is released in
//! the very mutation that finishes it; a dependency that does not complete cancels
//! it down the graph, or satisfies it under `run`; an operator retry gives back
//! what a dependency cancelled; a handler's output is kept on the job.

use duraq_core::inspect::PruneRequest;
use duraq_core::limits::MAX_OUTPUT_BYTES;
use duraq_core::{
    CancelReason, DependencyFailure, EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, Outcome,
    RunningOwner,
};
use serde_json::json;

use crate::harness::{expect_conflict, expect_invalid, job, key, Harness};

fn after(ids: &[&str]) -> EnqueueOptions {
    ids.iter()
        .fold(EnqueueOptions::new(), |opts, id| opts.after(*id))
}

async fn dependent(h: &Harness, name: &str, opts: EnqueueOptions) -> String {
    h.enqueue_with(name, json!([]), opts)
        .await
        .job_id()
        .to_owned()
}

/// Claims and completes job `id` (named `name`).
async fn complete(h: &Harness, name: &str, id: &str) {
    h.drive_to(id, name, JobStatus::Completed).await;
}

pub async fn a_dependent_waits_pending_until_its_last_dependency_completes(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let b = h.enqueue("b", json!([])).await;
    let c = dependent(h, "c", after(&[&a, &b]).queue("reports")).await;
    let row = h.get(&c).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 2));
    assert_eq!(
        row.depends_on
            .iter()
            .map(|d| d.job_id.as_str())
            .collect::<Vec<_>>(),
        [a.as_str(), b.as_str()]
    );
    let snap = h.snapshot().await;
    assert_eq!(
        (snap.counts.pending, snap.counts.queued, snap.total),
        (1, 2, 3)
    );
    let queues = h.store.queue_snapshot().await.unwrap();
    assert_eq!(queues.queue("reports").unwrap().counts.pending, 1);
    assert!(
        h.claim("w", &["c"], 10).await.is_empty(),
        "pending is never claimed"
    );

    complete(h, "a", &a).await;
    let row = h.get(&c).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    assert!(h.claim("w", &["c"], 10).await.is_empty());

    h.advance(1_000);
    let before = h.revision().await;
    complete(h, "b", &b).await;
    let row = h.get(&c).await;
    assert_eq!(
        (row.status, row.open_dependencies, row.scheduled_at_ms),
        (JobStatus::Queued, 0, h.now()),
        "released when the last dependency completed, due now"
    );
    assert!(h.revision().await > before);
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.pending, snap.counts.queued), (0, 1));
    assert_eq!(
        h.store
            .queue_snapshot()
            .await
            .unwrap()
            .queue("reports")
            .unwrap()
            .counts
            .queued,
        1
    );
    h.claim_id("w", "c", &c).await;
}

pub async fn the_release_is_part_of_the_completing_mutation(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let c = dependent(h, "c", after(&[&a])).await;
    let claimed = h.claim_id("w", "a", &a).await;
    let before = h.snapshot().await;
    assert!(h.report(&claimed, Outcome::Completed).await);
    let after = h.snapshot().await;
    assert_eq!(after.revision, before.revision + 1, "one mutation");
    assert_eq!(
        (
            after.counts.handed_off,
            after.counts.completed,
            after.counts.pending,
            after.counts.queued
        ),
        (before.counts.handed_off - 1, 1, 0, 1)
    );
    assert_eq!(h.get(&c).await.status, JobStatus::Queued);
}

pub async fn a_release_keeps_a_later_own_due_time(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let c = dependent(
        h,
        "c",
        after(&[&a]).run_in(std::time::Duration::from_secs(600)),
    )
    .await;
    let due = h.get(&c).await.scheduled_at_ms;
    complete(h, "a", &a).await;
    let row = h.get(&c).await;
    assert_eq!((row.status, row.scheduled_at_ms), (JobStatus::Queued, due));
    assert!(
        h.claim("w", &["c"], 1).await.is_empty(),
        "not before its own time"
    );
}

pub async fn a_completed_dependency_is_satisfied_at_once(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    complete(h, "a", &a).await;
    let b = h.enqueue("b", json!([])).await;
    let c = dependent(h, "c", after(&[&a, &b, &a])).await;
    let row = h.get(&c).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    assert_eq!(row.depends_on.len(), 2, "an id named twice is one edge");
    let d = dependent(h, "d", after(&[&a])).await;
    assert_eq!(h.get(&d).await.status, JobStatus::Queued);
}

pub async fn an_unknown_dependency_writes_nothing(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let before = h.state().await;
    let missing = "0190a0b0-0000-7000-8000-000000000000";
    expect_invalid(
        h.store
            .enqueue(job("c", json!([]), after(&[&a, missing])))
            .await,
        ErrorCode::DependencyNotFound,
    );
    let batch = vec![
        job("x", json!([]), EnqueueOptions::new()),
        job("c", json!([]), after(&[missing])),
    ];
    expect_invalid(
        h.store.enqueue_batch(batch).await,
        ErrorCode::DependencyNotFound,
    );
    h.assert_unchanged(&before, "refused dependencies").await;
}

/// Core's enqueue order: the checks (a cap, a rate, an operation key) come
/// before the dependencies are read, so a job failing both answers the
/// check's error on every store (found by the model suite on PostgreSQL).
pub async fn the_checks_come_before_the_dependencies(h: &Harness) {
    let op = || duraq_core::NewOperation {
        key: "op-1".into(),
        data: json!({}),
    };
    let keyed = |k: &str| EnqueueOptions::new().idempotency_key(k);
    let owner = job("a", json!([]), keyed("k1"))
        .with_operation(op())
        .unwrap();
    h.store.enqueue(owner).await.unwrap();
    let before = h.state().await;
    let missing = "0190a0b0-0000-7000-8000-000000000000";
    let late = job("b", json!([]), keyed("k2").after(missing))
        .with_operation(op())
        .unwrap();
    expect_conflict(h.store.enqueue(late).await, ErrorCode::IdempotencyConflict);
    let in_batch = vec![
        job("c", json!([]), keyed("k3"))
            .with_operation(duraq_core::NewOperation {
                key: "op-2".into(),
                data: json!({}),
            })
            .unwrap(),
        job("d", json!([]), keyed("k4").after(missing))
            .with_operation(duraq_core::NewOperation {
                key: "op-2".into(),
                data: json!({}),
            })
            .unwrap(),
    ];
    expect_conflict(
        h.store.enqueue_batch(in_batch).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "refused on a taken operation key")
        .await;
}

pub async fn a_batch_may_depend_on_its_own_earlier_jobs(h: &Harness) {
    let first = job("a", json!([]), EnqueueOptions::new());
    let second = job("b", json!([]), after(&[first.id()]));
    let third = job("c", json!([]), after(&[first.id(), second.id()]));
    let ids = [first.id(), second.id(), third.id()].map(str::to_owned);
    h.store
        .enqueue_batch(vec![first, second, third])
        .await
        .unwrap();
    assert_eq!(h.get(&ids[1]).await.open_dependencies, 1);
    assert_eq!(h.get(&ids[2]).await.open_dependencies, 2);
    complete(h, "a", &ids[0]).await;
    assert_eq!(h.get(&ids[1]).await.status, JobStatus::Queued);
    let c = h.get(&ids[2]).await;
    assert_eq!((c.status, c.open_dependencies), (JobStatus::Pending, 1));
    complete(h, "b", &ids[1]).await;
    assert_eq!(h.get(&ids[2]).await.status, JobStatus::Queued);
}

/// A run of waiting jobs in one batch (a store may decide such a run
/// together): each is judged against the jobs before it, in the store and
/// earlier in the batch, never a later one.
pub async fn a_run_of_waiting_jobs_is_judged_in_batch_order(h: &Harness) {
    let failed = h.enqueue("x", json!([])).await;
    h.drive_to(&failed, "x", JobStatus::Failed).await;
    let done = h.enqueue("y", json!([])).await;
    complete(h, "y", &done).await;
    let root = job("root", json!([]), EnqueueOptions::new());
    let waits = job("w", json!([]), after(&[root.id(), &done]));
    let doomed = job("d", json!([]), after(&[&failed]));
    let last = job(
        "l",
        json!([]),
        after(&[waits.id(), doomed.id()]).on_dependency_failure(duraq_core::DependencyFailure::Run),
    );
    let ids = [root.id(), waits.id(), doomed.id(), last.id()].map(str::to_owned);
    h.store
        .enqueue_batch(vec![root, waits, doomed, last])
        .await
        .unwrap();
    let row = |i: usize| h.get(&ids[i]);
    let w = row(1).await;
    assert_eq!((w.status, w.open_dependencies), (JobStatus::Pending, 1));
    let d = row(2).await;
    assert_eq!(d.status, JobStatus::Cancelled, "its dependency had failed");
    assert_eq!(d.cancel_reason, Some(CancelReason::Dependency));
    assert!(d.last_error.unwrap().starts_with("dependency-failed:"));
    let l = row(3).await;
    assert_eq!(
        (l.status, l.open_dependencies),
        (JobStatus::Pending, 1),
        "the cancelled step satisfies a run-policy edge at once"
    );
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.pending, snap.counts.cancelled), (2, 1));

    complete(h, "root", &ids[0]).await;
    assert_eq!(row(1).await.status, JobStatus::Queued);
    complete(h, "w", &ids[1]).await;
    assert_eq!(row(3).await.status, JobStatus::Queued);

    let before = h.state().await;
    let later = job("later", json!([]), EnqueueOptions::new());
    let forward = vec![
        job("a", json!([]), after(&[&ids[0]])),
        job("b", json!([]), after(&[later.id()])),
        later,
    ];
    expect_invalid(
        h.store.enqueue_batch(forward).await,
        ErrorCode::DependencyNotFound,
    );
    h.assert_unchanged(&before, "a job waiting for a later job of its batch")
        .await;
}

pub async fn a_failure_cancels_down_the_graph(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let b = dependent(h, "b", after(&[&a])).await;
    let c = dependent(h, "c", after(&[&b])).await;
    let other = h.enqueue("other", json!([])).await;
    let d = dependent(h, "d", after(&[&c, &other])).await;
    h.drive_to(&a, "a", JobStatus::Failed).await;
    for id in [&b, &c, &d] {
        let row = h.get(id).await;
        assert_eq!(row.status, JobStatus::Cancelled, "{id}");
        assert_eq!(row.cancelled_at_ms, Some(h.now()));
        assert_eq!(row.cancel_reason, Some(CancelReason::Dependency), "{id}");
        let error = row.last_error.unwrap();
        assert!(error.starts_with("dependency-failed:"), "{error}");
    }
    assert!(h.get(&b).await.last_error.unwrap().contains(&a));
    assert!(h.get(&c).await.last_error.unwrap().contains(&b));
    let snap = h.snapshot().await;
    assert_eq!(
        (
            snap.counts.pending,
            snap.counts.cancelled,
            snap.counts.failed
        ),
        (0, 3, 1)
    );
    complete(h, "other", &other).await;
    assert_eq!(
        h.get(&d).await.status,
        JobStatus::Cancelled,
        "a cancelled job stays so"
    );
}

pub async fn the_run_policy_releases_after_a_failure(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let b = h.enqueue("b", json!([])).await;
    let per_edge = dependent(
        h,
        "e",
        EnqueueOptions::new().after_with(&a, DependencyFailure::Run),
    )
    .await;
    let per_job = dependent(
        h,
        "j",
        after(&[&a, &b]).on_dependency_failure(DependencyFailure::Run),
    )
    .await;
    let mixed = dependent(
        h,
        "m",
        EnqueueOptions::new()
            .after_with(&a, DependencyFailure::Run)
            .after(&b),
    )
    .await;
    h.drive_to(&a, "a", JobStatus::Failed).await;
    assert_eq!(h.get(&per_edge).await.status, JobStatus::Queued);
    let row = h.get(&per_job).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    h.drive_to(&b, "b", JobStatus::Cancelled).await;
    assert_eq!(h.get(&per_job).await.status, JobStatus::Queued);
    assert_eq!(
        h.get(&mixed).await.status,
        JobStatus::Cancelled,
        "b's edge cancels"
    );
}

pub async fn orphaned_and_cancelled_dependencies_end_their_edges_too(h: &Harness) {
    let a = h
        .enqueue_with("a", json!([]), EnqueueOptions::new().max_retries(0))
        .await
        .job_id()
        .to_owned();
    let b = dependent(h, "b", after(&[&a])).await;
    let c = dependent(h, "c", after(&[&b])).await;
    h.drive_to(&a, "a", JobStatus::Orphaned).await;
    assert_eq!(h.get(&b).await.status, JobStatus::Cancelled);
    assert_eq!(h.get(&c).await.status, JobStatus::Cancelled);

    let x = h.enqueue("x", json!([])).await;
    let y = dependent(h, "y", after(&[&x])).await;
    let z = dependent(h, "z", after(&[&y])).await;
    h.store.cancel_job(&y).await.unwrap();
    assert_eq!(
        h.get(&z).await.status,
        JobStatus::Cancelled,
        "cancelling a pending job cascades"
    );
    complete(h, "x", &x).await;
    assert_eq!(h.get(&y).await.status, JobStatus::Cancelled);
    assert_eq!(h.snapshot().await.counts.pending, 0);
}

pub async fn a_retry_gives_back_what_a_dependency_cancelled(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let b = dependent(h, "b", after(&[&a])).await;
    let c = dependent(h, "c", after(&[&b])).await;
    let manual = dependent(h, "m", after(&[&a])).await;
    h.store.cancel_job(&manual).await.unwrap();
    h.drive_to(&a, "a", JobStatus::Failed).await;
    assert_eq!(h.get(&c).await.status, JobStatus::Cancelled);

    let retried = h.store.retry_job(&a).await.unwrap();
    assert_eq!(retried.status, JobStatus::Queued);
    for id in [&b, &c] {
        let row = h.get(id).await;
        assert_eq!(
            (row.status, row.open_dependencies, row.cancelled_at_ms),
            (JobStatus::Pending, 1, None),
            "{id}"
        );
        assert_eq!(row.cancel_reason, None, "{id}");
    }
    let manual = h.get(&manual).await;
    assert_eq!(
        (manual.status, manual.cancel_reason),
        (JobStatus::Cancelled, Some(CancelReason::Operator)),
        "an operator's cancel stays"
    );
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.pending, snap.counts.cancelled), (2, 1));
    complete(h, "a", &a).await;
    assert_eq!(h.get(&b).await.status, JobStatus::Queued);
    complete(h, "b", &b).await;
    assert_eq!(h.get(&c).await.status, JobStatus::Queued);
}

pub async fn a_handlers_output_is_kept_on_the_job(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let claimed = h.claim_id("w", "a", &a).await;
    let output = json!({"rows": 3, "names": ["x", "y"]});
    let done = Outcome::CompletedWith {
        output: output.clone(),
    };
    assert!(h.report(&claimed, done).await);
    let row = h.get(&a).await;
    assert_eq!(
        (row.status, row.output),
        (JobStatus::Completed, Some(output))
    );
    assert_eq!(
        h.store.retry_job(&a).await.unwrap().output,
        None,
        "a retry clears it"
    );

    let big = h.enqueue("big", json!([])).await;
    let claimed = h.claim_id("w", "big", &big).await;
    let too_large = Outcome::CompletedWith {
        output: json!("x".repeat(MAX_OUTPUT_BYTES)),
    };
    assert!(h.report(&claimed, too_large).await);
    let row = h.get(&big).await;
    assert_eq!((row.status, row.output), (JobStatus::Queued, None));
    assert!(row.last_error.unwrap().starts_with("output-too-large:"));
}

pub async fn pruning_a_dependency_keeps_its_released_dependent(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let c = dependent(h, "c", after(&[&a])).await;
    complete(h, "a", &a).await;
    h.advance(10_000);
    let report = h
        .store
        .prune(&PruneRequest {
            completed_older_than: Some(std::time::Duration::from_secs(1)),
            failed_older_than: None,
            cancelled_older_than: None,
            batch_size: 100,
        })
        .await
        .unwrap();
    assert_eq!(report.deleted, 1);
    let row = h.get(&c).await;
    assert_eq!((row.status, row.depends_on.len()), (JobStatus::Queued, 1));
    h.drive_to(&c, "c", JobStatus::Failed).await;
    h.store.retry_job(&c).await.unwrap();
    expect_invalid(
        h.store.enqueue(job("d", json!([]), after(&[&a]))).await,
        ErrorCode::DependencyNotFound,
    );
}

pub async fn an_idempotent_dependent_replays_and_a_new_edge_conflicts(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let b = h.enqueue("b", json!([])).await;
    let keyed = |deps: &[&str]| after(deps).idempotency_key("report-1");
    let first = h.enqueue_with("c", json!([]), keyed(&[&a])).await;
    let again = h.enqueue_with("c", json!([]), keyed(&[&a])).await;
    assert_eq!(first.job_id(), again.job_id());
    assert!(matches!(again, EnqueueOutcome::Replayed(_)), "{again:?}");
    let err = h.store.enqueue(job("c", json!([]), keyed(&[&a, &b]))).await;
    assert!(
        err.is_err(),
        "another set of dependencies is another request"
    );
}

pub async fn a_replacement_refuses_dependencies(h: &Harness) {
    let a = h.enqueue("a", json!([])).await;
    let before = h.state().await;
    expect_invalid(
        h.store
            .replace_scheduled(
                &key("nightly"),
                job("n", json!([]), after(&[&a])),
                RunningOwner::KeepRunning,
            )
            .await,
        ErrorCode::UnsupportedOption,
    );
    h.assert_unchanged(&before, "a refused replacement").await;
}

pub async fn a_workflow_is_inserted_whole_and_found_by_its_id(h: &Harness) {
    let step = |name: &str| job(name, json!([]), EnqueueOptions::new());
    let flow = || {
        duraq_core::Workflow::new("onboard")
            .idempotency_key("user-7")
            .step_after("summary", step("sum"), ["welcome", "storage"])
            .step("signup", step("signup"))
            .step_after("welcome", step("mail"), ["signup"])
            .step_after("storage", step("disk"), ["signup"])
    };
    let first = duraq_core::enqueue_workflow(h.store.as_ref(), flow())
        .await
        .unwrap();
    assert!(!first.replayed);
    let summary = h.get(&first.jobs["summary"]).await;
    assert_eq!(
        (
            summary.status,
            summary.open_dependencies,
            summary.step.as_deref()
        ),
        (JobStatus::Pending, 2, Some("summary"))
    );
    assert_eq!(
        summary.workflow_id.as_deref(),
        Some(first.workflow_id.as_str())
    );
    let filter = duraq_core::inspect::JobFilter {
        workflow_id: Some(first.workflow_id.clone()),
        ..Default::default()
    };
    let mut steps: Vec<String> = (h.store.search_jobs(&filter).await.unwrap().jobs)
        .into_iter()
        .filter_map(|j| j.step)
        .collect();
    steps.sort();
    assert_eq!(steps, ["signup", "storage", "summary", "welcome"]);
    let before = h.state().await;
    let again = duraq_core::enqueue_workflow(h.store.as_ref(), flow())
        .await
        .unwrap();
    assert_eq!((again.replayed, &again.jobs), (true, &first.jobs));
    h.assert_unchanged(&before, "a replayed workflow").await;
    let cycle = duraq_core::Workflow::new("loop")
        .step_after("a", step("a"), ["b"])
        .step_after("b", step("b"), ["a"]);
    expect_invalid(
        duraq_core::enqueue_workflow(h.store.as_ref(), cycle).await,
        ErrorCode::WorkflowCycle,
    );
    h.assert_unchanged(&before, "a refused workflow").await;
}
