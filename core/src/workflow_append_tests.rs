use super::*;
use crate::transitions::new_job_row;
use crate::{DependencyFailure, EnqueueOptions};

fn job(name: &str) -> NewJob {
    NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap()
}

/// The rows of a workflow `a` → `b`, as a store would hold them.
fn existing() -> (String, Vec<Job>) {
    let plan = Workflow::new("w")
        .step("a", job("a"))
        .step_after("b", job("b"), ["a"])
        .build()
        .unwrap();
    let rows = plan.jobs.iter().map(|j| new_job_row(j, 0)).collect();
    (plan.workflow_id, rows)
}

fn code(result: Result<WorkflowPlan>) -> ErrorCode {
    result.unwrap_err().code()
}

#[test]
fn new_steps_wait_for_new_and_existing_steps_by_name() {
    let (id, rows) = existing();
    let lenient = NewJob::new(
        "sum",
        serde_json::json!([]),
        EnqueueOptions::new().on_dependency_failure(DependencyFailure::Run),
    )
    .unwrap();
    let plan = Workflow::append_to(&id)
        .step_after("sum", lenient, ["c", "a"])
        .step_after("c", job("c"), ["b"])
        .plan(&rows)
        .unwrap();
    assert_eq!(plan.workflow_id, id);
    let names: Vec<&str> = plan.jobs.iter().map(|j| j.job_name().as_str()).collect();
    assert_eq!(names, ["c", "sum"], "each after the new steps it waits for");
    let (c, sum) = (&plan.jobs[0], &plan.jobs[1]);
    assert_eq!((c.workflow_id(), c.step()), (Some(id.as_str()), Some("c")));
    assert_eq!(c.dependencies()[0].job_id, rows[1].id, "existing step b");
    let deps: Vec<&str> = sum
        .dependencies()
        .iter()
        .map(|d| d.job_id.as_str())
        .collect();
    assert_eq!(deps, [plan.steps["c"].as_str(), rows[0].id.as_str()]);
    assert!(sum
        .dependencies()
        .iter()
        .all(|d| d.on_failure == DependencyFailure::Run));
    assert_eq!(plan.steps["c"], step_id(&id, "c"), "ids are derived");
    assert!(c.idempotency_key().is_none());
}

#[test]
fn every_bad_append_is_refused_with_its_code() {
    let (id, rows) = existing();
    let add = || Workflow::append_to(&id);
    assert_eq!(
        code(add().step("c", job("c")).plan(&[])),
        ErrorCode::WorkflowNotFound
    );
    assert_eq!(code(add().plan(&rows)), ErrorCode::InvalidWorkflow);
    assert_eq!(
        code(add().step("c\n", job("c")).plan(&rows)),
        ErrorCode::InvalidWorkflow
    );
    assert_eq!(
        code(add().step_after("a", job("a"), ["b"]).plan(&rows)),
        ErrorCode::DuplicateStep,
        "a name the workflow already has"
    );
    assert_eq!(
        code(add().step("c", job("c")).step("c", job("c")).plan(&rows)),
        ErrorCode::DuplicateStep
    );
    assert_eq!(
        code(add().step_after("c", job("c"), ["ghost"]).plan(&rows)),
        ErrorCode::DependencyNotFound
    );
    assert_eq!(
        code(
            add()
                .step_after("c", job("c"), ["a", "d"])
                .step_after("d", job("d"), ["c"])
                .plan(&rows)
        ),
        ErrorCode::WorkflowCycle
    );
    let keyed_step = NewJob::new(
        "c",
        serde_json::json!([]),
        EnqueueOptions::new().idempotency_key("own"),
    )
    .unwrap();
    assert_eq!(
        code(add().idempotency_key("k").step("c", keyed_step).plan(&rows)),
        ErrorCode::UnsupportedOption
    );
    assert_eq!(
        code(add().idempotency_key("").step("c", job("c")).plan(&rows)),
        ErrorCode::InvalidIdempotencyKey
    );
}

#[test]
fn a_keyed_append_finds_its_earlier_try_and_nothing_else() {
    let (id, mut rows) = existing();
    let add = |key: Option<&str>| {
        let add = Workflow::append_to(&id)
            .step_after("c", job("c"), ["a"])
            .step_after("d", job("d"), ["c"]);
        match key {
            Some(key) => add.idempotency_key(key),
            None => add,
        }
    };
    let first = add(Some("k")).plan(&rows).unwrap();
    assert_eq!(
        first.jobs[1].idempotency_key().map(|k| k.as_str()),
        Some("k/d")
    );
    rows.extend(first.jobs.iter().map(|j| new_job_row(j, 1)));
    let again = add(Some("k")).plan(&rows).unwrap();
    assert_eq!(again.steps, first.steps);
    assert_eq!(again.jobs[1].dependencies(), first.jobs[1].dependencies());
    assert_eq!(
        code(add(Some("other")).plan(&rows)),
        ErrorCode::DuplicateStep
    );
    assert_eq!(code(add(None).plan(&rows)), ErrorCode::DuplicateStep);
}
