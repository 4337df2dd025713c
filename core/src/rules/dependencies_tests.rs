use super::*;

fn dep(job_id: &str, on_failure: DependencyFailure) -> Dependency {
    Dependency {
        job_id: job_id.into(),
        on_failure,
    }
}

#[test]
fn a_new_job_starts_from_its_dependencies_statuses() {
    use DependencyFailure::{Cancel, Run};
    let deps = [
        dep("done", Cancel),
        dep("failed", Run),
        dep("running", Cancel),
    ];
    let status = |id: &str| {
        Some(match id {
            "done" => JobStatus::Completed,
            "failed" => JobStatus::Failed,
            _ => JobStatus::HandedOff,
        })
    };
    assert_eq!(
        start_of(&deps, status).unwrap(),
        DependencyStart::Waiting { open: 1 }
    );
    assert_eq!(
        start_of(&deps[..2], status).unwrap(),
        DependencyStart::Ready
    );
    let cancels = [dep("failed", Cancel), dep("running", Cancel)];
    let DependencyStart::Cancelled { error } = start_of(&cancels, status).unwrap() else {
        panic!("a failed dependency under cancel cancels the new job");
    };
    assert!(error.starts_with(CANCELLED_BY_DEPENDENCY), "{error}");
    assert!(error.contains("failed"), "{error}");
}

#[test]
fn an_unknown_dependency_is_refused_before_anything_else() {
    let deps = [
        dep("failed", DependencyFailure::Cancel),
        dep("ghost", DependencyFailure::Cancel),
    ];
    let err = start_of(&deps, |id| (id == "failed").then_some(JobStatus::Failed)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DependencyNotFound);
}

fn job_with(deps: Vec<Dependency>, status: JobStatus, last_error: Option<&str>) -> Job {
    let new = crate::NewJob::new("j", serde_json::json!([]), crate::EnqueueOptions::new()).unwrap();
    let mut job = crate::transitions::new_job_row(&new, 0);
    job.depends_on = deps;
    job.status = status;
    job.last_error = last_error.map(str::to_owned);
    job
}

#[test]
fn a_retry_reopens_only_what_a_dependency_cancelled_and_nothing_still_cancels() {
    use DependencyFailure::Cancel;
    let by_dep = job_with(
        vec![dep("retried", Cancel), dep("done", Cancel)],
        JobStatus::Cancelled,
        Some("dependency-failed: job retried ended failed"),
    );
    let status = |id: &str| match id {
        "retried" => Some(JobStatus::Queued),
        "done" => Some(JobStatus::Completed),
        "other" => Some(JobStatus::Failed),
        _ => None,
    };
    assert_eq!(reopened_open_count(&by_dep, status), Some(1));
    let by_operator = job_with(vec![dep("retried", Cancel)], JobStatus::Cancelled, None);
    assert_eq!(reopened_open_count(&by_operator, status), None);
    let mut still = by_dep.clone();
    still.depends_on.push(dep("other", Cancel));
    assert_eq!(reopened_open_count(&still, status), None);
    let mut pruned = by_dep.clone();
    pruned.depends_on = vec![dep("pruned", Cancel)];
    assert_eq!(reopened_open_count(&pruned, status), Some(0));

    let mut row = by_dep;
    row.cancelled_at_ms = Some(9);
    reopen(&mut row, 1, 50);
    assert_eq!(
        (row.status, row.open_dependencies, row.cancelled_at_ms),
        (JobStatus::Pending, 1, None)
    );
    reopen(&mut row, 0, 50);
    assert_eq!((row.status, row.scheduled_at_ms), (JobStatus::Queued, 50));
}
