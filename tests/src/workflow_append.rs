//! `docs/workflows.md`, "Adding steps later": steps appended to an existing
//! workflow wait for its steps by name under the ordinary dependency rules (a
//! completed step is satisfied at once, an open one holds the new step
//! `pending` until it completes, a failed one cancels it under `cancel`); a
//! refused append writes nothing; a keyed append replays its ids; and two
//! appends of one step name can never both insert.

use duraq_core::driver::workflow_steps;
use duraq_core::{
    append_workflow, enqueue_workflow, DependencyFailure, EnqueueOptions, ErrorCode, JobStatus,
    NewJob, Workflow, WorkflowAppend, WorkflowOutcome,
};
use serde_json::json;

use crate::harness::{expect_conflict, expect_invalid, expect_not_found, job, Harness};

fn step(name: &str) -> NewJob {
    job(name, json!([]), EnqueueOptions::new())
}

/// Workflow `a` → `b` (job names `a` and `b`): `a` queued, `b` pending.
async fn a_then_b(h: &Harness) -> WorkflowOutcome {
    let flow = Workflow::new("flow")
        .step("a", step("a"))
        .step_after("b", step("b"), ["a"]);
    enqueue_workflow(h.store.as_ref(), flow).await.unwrap()
}

async fn append(h: &Harness, add: WorkflowAppend) -> WorkflowOutcome {
    append_workflow(h.store.as_ref(), add).await.unwrap()
}

pub async fn a_step_after_a_completed_step_is_queued_at_once(h: &Harness) {
    let flow = a_then_b(h).await;
    h.drive_to(&flow.jobs["a"], "a", JobStatus::Completed).await;
    let added = append(
        h,
        Workflow::append_to(&flow.workflow_id).step_after("c", step("c"), ["a"]),
    )
    .await;
    assert_eq!(
        (added.workflow_id.as_str(), added.replayed),
        (flow.workflow_id.as_str(), false)
    );
    let c = h.get(&added.jobs["c"]).await;
    assert_eq!(
        (c.status, c.open_dependencies, c.step.as_deref()),
        (JobStatus::Queued, 0, Some("c"))
    );
    assert_eq!(c.workflow_id.as_deref(), Some(flow.workflow_id.as_str()));
    assert_eq!(c.depends_on[0].job_id, flow.jobs["a"]);
    let steps = workflow_steps(h.store.as_ref(), &flow.workflow_id)
        .await
        .unwrap();
    assert_eq!(steps.len(), 3, "the workflow has its new step");
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.queued, snap.counts.completed), (2, 1));
}

pub async fn a_step_after_an_open_step_waits_until_it_completes(h: &Harness) {
    let flow = a_then_b(h).await;
    let running = h.claim_id("w", "a", &flow.jobs["a"]).await;
    let added = append(
        h,
        Workflow::append_to(&flow.workflow_id)
            .step_after("d", step("d"), ["c", "b"])
            .step_after("c", step("c"), ["a"]),
    )
    .await;
    let (c, d) = (&added.jobs["c"], &added.jobs["d"]);
    let row = h.get(c).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    let row = h.get(d).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 2));
    assert!(h.claim("w", &["c", "d"], 10).await.is_empty());

    assert!(h.report(&running, duraq_core::Outcome::Completed).await);
    assert_eq!(h.get(c).await.status, JobStatus::Queued, "released with b");
    assert_eq!(h.get(&flow.jobs["b"]).await.status, JobStatus::Queued);
    h.drive_to(c, "c", JobStatus::Completed).await;
    let row = h.get(d).await;
    assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
    h.drive_to(&flow.jobs["b"], "b", JobStatus::Completed).await;
    assert_eq!(h.get(d).await.status, JobStatus::Queued);
}

pub async fn a_step_after_a_failed_step_follows_its_policy(h: &Harness) {
    let flow = a_then_b(h).await;
    h.drive_to(&flow.jobs["a"], "a", JobStatus::Failed).await;
    let lenient = job(
        "r",
        json!([]),
        EnqueueOptions::new().on_dependency_failure(DependencyFailure::Run),
    );
    let added = append(
        h,
        Workflow::append_to(&flow.workflow_id)
            .step_after("c", step("c"), ["a"])
            .step_after("r", lenient, ["a"]),
    )
    .await;
    let c = h.get(&added.jobs["c"]).await;
    assert_eq!(c.status, JobStatus::Cancelled);
    assert_eq!(c.cancel_reason, Some(duraq_core::CancelReason::Dependency));
    let error = c.last_error.unwrap();
    assert!(error.starts_with("dependency-failed:"), "{error}");
    assert!(error.contains(&flow.jobs["a"]), "{error}");
    assert_eq!(h.get(&added.jobs["r"]).await.status, JobStatus::Queued);
}

pub async fn a_refused_append_writes_nothing(h: &Harness) {
    let flow = a_then_b(h).await;
    let add = || Workflow::append_to(&flow.workflow_id);
    let before = h.state().await;
    let refused = |add: WorkflowAppend| append_workflow(h.store.as_ref(), add);
    expect_invalid(
        refused(add().step("c", step("c")).step_after("b", step("b"), ["a"])).await,
        ErrorCode::DuplicateStep,
    );
    h.assert_unchanged(&before, "an existing step name").await;
    expect_invalid(
        refused(add().step("c", step("c")).step("c", step("c"))).await,
        ErrorCode::DuplicateStep,
    );
    expect_invalid(
        refused(
            add()
                .step("c", step("c"))
                .step_after("d", step("d"), ["ghost"]),
        )
        .await,
        ErrorCode::DependencyNotFound,
    );
    h.assert_unchanged(&before, "an unknown step").await;
    expect_invalid(
        refused(
            add()
                .step_after("c", step("c"), ["a", "e"])
                .step_after("d", step("d"), ["c"])
                .step_after("e", step("e"), ["d"]),
        )
        .await,
        ErrorCode::WorkflowCycle,
    );
    expect_not_found(
        refused(Workflow::append_to("no-such-workflow").step("c", step("c"))).await,
        ErrorCode::WorkflowNotFound,
    );
    h.assert_unchanged(&before, "a refused append").await;
}

pub async fn a_keyed_append_replays_its_ids(h: &Harness) {
    let flow = a_then_b(h).await;
    let add = |args: serde_json::Value| {
        Workflow::append_to(&flow.workflow_id)
            .idempotency_key("add-c")
            .step_after("c", job("c", args, EnqueueOptions::new()), ["b"])
            .step_after("d", step("d"), ["c"])
    };
    let first = append(h, add(json!([1]))).await;
    assert!(!first.replayed);
    let c = h.get(&first.jobs["c"]).await;
    assert_eq!(c.idempotency_key.as_deref(), Some("add-c/c"));
    let before = h.state().await;
    let again = append(h, add(json!([1]))).await;
    assert_eq!((&again.jobs, again.replayed), (&first.jobs, true));
    h.assert_unchanged(&before, "a replayed append").await;
    expect_conflict(
        append_workflow(h.store.as_ref(), add(json!([2]))).await,
        ErrorCode::IdempotencyConflict,
    );
    let other_key = Workflow::append_to(&flow.workflow_id)
        .idempotency_key("other")
        .step("c", step("c"));
    expect_invalid(
        append_workflow(h.store.as_ref(), other_key).await,
        ErrorCode::DuplicateStep,
    );
    h.assert_unchanged(&before, "a refused keyed append").await;
}

/// Reading the steps and inserting are two calls: an append checked against
/// steps read before another append took its name is refused by the store.
pub async fn two_appends_of_one_step_name_never_both_insert(h: &Harness) {
    let flow = a_then_b(h).await;
    let add = || Workflow::append_to(&flow.workflow_id).step_after("c", step("c"), ["a"]);
    let stale = workflow_steps(h.store.as_ref(), &flow.workflow_id)
        .await
        .unwrap();
    let late = add().plan(&stale).unwrap();
    append(h, add()).await;
    let before = h.state().await;
    expect_conflict(
        h.store.enqueue_batch(late.jobs).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "the second append of one name")
        .await;
}
