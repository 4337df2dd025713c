//! `docs/workflows.md`, listing: `Inspect::list_workflows` pages through the
//! workflows largest id first, one summary each with its steps counted per
//! status, and `workflow_tally` counts them per state; jobs outside every
//! workflow are never listed.

use duraq_core::inspect::{workflow_tally, WorkflowListRequest, WorkflowState, WorkflowSummary};
use duraq_core::{enqueue_workflow, EnqueueOptions, JobStatus, Workflow};
use serde_json::json;

use crate::harness::{job, Harness};

/// A workflow `signup → welcome` whose steps run the jobs `<prefix>-a` and
/// `<prefix>-b`; returns (workflow id, signup's id, welcome's id).
async fn two_steps(h: &Harness, prefix: &str) -> (String, String, String) {
    named_two_steps(h, "onboard", prefix).await
}

/// [`two_steps`] in a workflow named `name`.
async fn named_two_steps(h: &Harness, name: &str, prefix: &str) -> (String, String, String) {
    let step = |suffix: &str| {
        job(
            &format!("{prefix}-{suffix}"),
            json!([]),
            EnqueueOptions::new(),
        )
    };
    let flow =
        Workflow::new(name)
            .step("signup", step("a"))
            .step_after("welcome", step("b"), ["signup"]);
    let out = enqueue_workflow(h.store.as_ref(), flow).await.unwrap();
    (
        out.workflow_id,
        out.jobs["signup"].clone(),
        out.jobs["welcome"].clone(),
    )
}

async fn list(h: &Harness, before: Option<&str>, limit: usize) -> Vec<WorkflowSummary> {
    named(h, None, before, limit).await
}

async fn named(
    h: &Harness,
    name: Option<&str>,
    before: Option<&str>,
    limit: usize,
) -> Vec<WorkflowSummary> {
    let req = WorkflowListRequest {
        before: before.map(str::to_owned),
        limit,
        name: name.map(str::to_owned),
    };
    h.store.list_workflows(&req).await.expect("list_workflows")
}

pub async fn a_name_lists_only_its_workflows_in_pages(h: &Harness) {
    let mut nightly = Vec::new();
    for n in 0..3 {
        nightly.push(named_two_steps(h, "nightly", &format!("n{n}")).await.0);
        two_steps(h, &format!("o{n}")).await;
        h.advance(10);
    }
    nightly.sort_by(|a, b| b.as_bytes().cmp(a.as_bytes()));
    let ids = |page: Vec<WorkflowSummary>| -> Vec<String> {
        page.into_iter().map(|w| w.workflow_id).collect()
    };

    let all = named(h, Some("nightly"), None, 10).await;
    assert!(all
        .iter()
        .all(|w| w.name.as_deref() == Some("nightly") && w.steps() == 2));
    assert_eq!(ids(all), nightly);
    let first = ids(named(h, Some("nightly"), None, 2).await);
    assert_eq!(first, nightly[..2]);
    let rest = ids(named(h, Some("nightly"), Some(&first[1]), 2).await);
    assert_eq!(
        rest,
        nightly[2..],
        "the next page continues within the name"
    );
    assert!(
        named(h, Some("Nightly"), None, 10).await.is_empty(),
        "names are exact"
    );
    assert!(named(h, Some("missing"), None, 10).await.is_empty());
    assert_eq!(
        list(h, None, 10).await.len(),
        6,
        "no name lists every workflow"
    );
}

pub async fn workflows_are_listed_in_pages_largest_id_first(h: &Harness) {
    assert!(list(h, None, 10).await.is_empty(), "an empty store");
    h.enqueue("plain", json!([])).await;
    assert!(
        list(h, None, 10).await.is_empty(),
        "a job outside every workflow is no workflow"
    );
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(two_steps(h, &format!("w{n}")).await.0);
        h.advance(10);
    }
    ids.sort_by(|a, b| b.as_bytes().cmp(a.as_bytes()));

    let all = list(h, None, 10).await;
    let listed: Vec<&str> = all.iter().map(|w| w.workflow_id.as_str()).collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(all.iter().all(|w| w.steps() == 2));

    let first = list(h, None, 2).await;
    assert_eq!(first.len(), 2);
    let second = list(h, Some(&first[1].workflow_id), 2).await;
    let third = list(h, Some(&second[1].workflow_id), 2).await;
    let paged: Vec<String> = [first, second, third]
        .concat()
        .into_iter()
        .map(|w| w.workflow_id)
        .collect();
    assert_eq!(paged, ids, "pages continue without gaps or repeats");
    assert!(list(h, Some(&ids[4]), 2).await.is_empty());
}

pub async fn a_summary_counts_steps_per_status_and_names_the_state(h: &Harness) {
    let t0 = h.now();
    let (done, a, b) = two_steps(h, "ok").await;
    h.advance(5);
    let (failing, c, _) = two_steps(h, "bad").await;
    let summary = |all: &[WorkflowSummary], id: &str| {
        all.iter()
            .find(|w| w.workflow_id == id)
            .cloned()
            .expect("listed")
    };

    let now = list(h, None, 10).await;
    let first = summary(&now, &done);
    assert_eq!(
        (first.counts.queued, first.counts.pending, first.counts.all),
        (1, 1, 2)
    );
    assert_eq!(
        (first.state(), first.created_at_ms),
        (WorkflowState::Active, t0)
    );

    h.drive_to(&a, "ok-a", JobStatus::Completed).await;
    let first = summary(&list(h, None, 10).await, &done);
    assert_eq!((first.counts.completed, first.counts.queued), (1, 1));
    assert_eq!(first.state(), WorkflowState::Active);
    h.drive_to(&b, "ok-b", JobStatus::Completed).await;
    let first = summary(&list(h, None, 10).await, &done);
    assert_eq!(
        (first.counts.completed, first.state()),
        (2, WorkflowState::Completed)
    );

    h.drive_to(&c, "bad-a", JobStatus::Failed).await;
    let second = summary(&list(h, None, 10).await, &failing);
    assert_eq!(
        (
            second.counts.failed,
            second.counts.cancelled,
            second.state()
        ),
        (1, 1, WorkflowState::Failed),
        "the failure cancelled the step after it, and the workflow ended failed"
    );

    let tally = workflow_tally(h.store.as_ref(), 100).await.unwrap();
    assert_eq!(
        (tally.active, tally.completed, tally.failed, tally.truncated),
        (0, 1, 1, false)
    );
    let tally = workflow_tally(h.store.as_ref(), 1).await.unwrap();
    assert_eq!(
        tally.active + tally.completed + tally.failed,
        1,
        "a budget of one counts one workflow"
    );
    assert!(tally.truncated, "and says more exist");
    let tally = workflow_tally(h.store.as_ref(), 2).await.unwrap();
    assert!(!tally.truncated, "a budget met exactly is not truncated");
}
