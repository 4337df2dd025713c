use super::*;
use crate::{DependencyFailure, EnqueueOptions};

fn job(name: &str) -> NewJob {
    NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap()
}

fn code(result: Result<WorkflowPlan>) -> ErrorCode {
    result.unwrap_err().code()
}

#[test]
fn every_bad_graph_is_refused_with_its_code() {
    assert_eq!(code(Workflow::new("w").build()), ErrorCode::InvalidWorkflow);
    assert_eq!(
        code(Workflow::new("").step("a", job("a")).build()),
        ErrorCode::InvalidWorkflow
    );
    assert_eq!(
        code(Workflow::new("w").step("a\n", job("a")).build()),
        ErrorCode::InvalidWorkflow
    );
    assert_eq!(
        code(
            Workflow::new("w")
                .step("a", job("a"))
                .step("a", job("b"))
                .build()
        ),
        ErrorCode::DuplicateStep
    );
    assert_eq!(
        code(
            Workflow::new("w")
                .step_after("a", job("a"), ["ghost"])
                .build()
        ),
        ErrorCode::DependencyNotFound
    );
    let cycle = Workflow::new("w")
        .step("root", job("r"))
        .step_after("a", job("a"), ["root", "c"])
        .step_after("b", job("b"), ["a"])
        .step_after("c", job("c"), ["b"]);
    let err = cycle.build().unwrap_err();
    assert_eq!(err.code(), ErrorCode::WorkflowCycle);
    assert!(!err.to_string().contains("root"), "{err}");
    let keyed_step = NewJob::new(
        "a",
        serde_json::json!([]),
        EnqueueOptions::new().idempotency_key("own"),
    )
    .unwrap();
    assert_eq!(
        code(
            Workflow::new("w")
                .idempotency_key("k")
                .step("a", keyed_step)
                .build()
        ),
        ErrorCode::UnsupportedOption
    );
}

#[test]
fn steps_come_after_what_they_wait_for_with_the_jobs_policy() {
    let lenient = NewJob::new(
        "sum",
        serde_json::json!([]),
        EnqueueOptions::new().on_dependency_failure(DependencyFailure::Run),
    )
    .unwrap();
    let plan = Workflow::new("w")
        .step_after("sum", lenient, ["a", "b", "a"])
        .step_after("b", job("b"), ["a"])
        .step("a", job("a"))
        .build()
        .unwrap();
    let names: Vec<&str> = plan.jobs.iter().map(|j| j.job_name().as_str()).collect();
    assert_eq!(names, ["a", "b", "sum"]);
    let sum = &plan.jobs[2];
    assert_eq!(
        sum.dependencies().len(),
        2,
        "a step named twice is one edge"
    );
    assert!(sum
        .dependencies()
        .iter()
        .all(|d| d.on_failure == DependencyFailure::Run));
    assert_eq!(plan.jobs[1].dependencies()[0].job_id, plan.steps["a"]);
}

#[test]
fn a_keyed_workflow_derives_its_ids_and_keys_its_steps() {
    let flow = |key: &str| {
        Workflow::new("w")
            .idempotency_key(key)
            .step("a", job("a"))
            .step_after("b", job("b"), ["a"])
            .build()
            .unwrap()
    };
    let (first, again, other) = (flow("k1"), flow("k1"), flow("k2"));
    assert_eq!(
        (&first.workflow_id, &first.steps),
        (&again.workflow_id, &again.steps)
    );
    assert_ne!(first.steps["a"], other.steps["a"]);
    assert_eq!(
        first.jobs[1].idempotency_key().map(|k| k.as_str()),
        Some("k1/b")
    );
    let unkeyed = Workflow::new("w").step("a", job("a")).build().unwrap();
    assert!(unkeyed.jobs[0].idempotency_key().is_none());
}
