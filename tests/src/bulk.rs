//! Bulk operator actions (`jobs retry|cancel|delete|run-now` with ids or a
//! filter): one transaction per batch with one revision, what the action
//! forbids skipped rather than refused, running jobs' workers told of a bulk
//! cancel, dry runs and unknown ids writing nothing, and filters walked in
//! bounded batches; a run-now moving only the scheduled time of the queued
//! jobs due later, waking idle workers.

use duraq_core::driver::LeaseLoss;
use duraq_core::inspect::{
    run_bulk, BulkAction, BulkBatch, BulkReport, BulkRequest, BulkSelection, JobFilter,
};
use duraq_core::{EnqueueOptions, ErrorCode, Job, JobStatus};
use serde_json::json;

use crate::harness::{expect_not_found, job, lease, Harness, WireOptions};

/// Every status, in an order that drives each job there without touching the
/// others (orphaning moves the clock past the lease timeout, so it goes before
/// the running job exists).
const EVERY: [JobStatus; 6] = [
    JobStatus::Orphaned,
    JobStatus::Completed,
    JobStatus::Failed,
    JobStatus::Cancelled,
    JobStatus::Queued,
    JobStatus::HandedOff,
];

/// One job in each status (maxRetries 0), named after its status.
async fn one_of_each(h: &Harness) -> Vec<Job> {
    let mut jobs = Vec::new();
    for status in EVERY {
        let name = format!("bulk-{status}");
        let id = h
            .insert(job(&name, json!([]), EnqueueOptions::new().max_retries(0)))
            .await;
        jobs.push(h.drive_to(&id, &name, status).await);
    }
    jobs
}

/// `n` failed jobs named `name` in `queue`.
async fn failed(h: &Harness, name: &str, queue: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let id = h
            .insert(job(
                name,
                json!([i]),
                EnqueueOptions::new().queue(queue).max_retries(0),
            ))
            .await;
        h.drive_to(&id, name, JobStatus::Failed).await;
        ids.push(id);
    }
    ids
}

fn in_status(jobs: &[Job], status: JobStatus) -> &Job {
    jobs.iter()
        .find(|j| j.status == status)
        .expect("a job in that status")
}

fn ids(jobs: &[Job]) -> Vec<String> {
    jobs.iter().map(|j| j.id.clone()).collect()
}

pub async fn each_action_changes_what_it_may_and_skips_the_rest(h: &Harness) {
    for action in [BulkAction::Retry, BulkAction::Cancel, BulkAction::Delete] {
        let jobs = one_of_each(h).await;
        let mut asked = ids(&jobs);
        asked.push("no-such-job".into());
        h.advance(5);
        let r0 = h.revision().await;
        let batch = h.store.act_on_jobs(action, &asked).await.unwrap();
        let applies = EVERY.iter().filter(|s| action.applies_to(**s)).count() as u64;
        assert_eq!(
            batch,
            BulkBatch {
                changed: applies,
                skipped: 6 - applies,
                missing: 1
            },
            "{action:?}"
        );
        assert_eq!(h.revision().await, r0 + 1, "{action:?} is one mutation");
        for before in &jobs {
            let after = h.store.get_job(&before.id).await.unwrap();
            match (action.applies_to(before.status), action) {
                (false, _) => assert_eq!(after.as_ref(), Some(before), "{action:?} skips"),
                (true, BulkAction::Retry) => {
                    assert_eq!(after.map(|j| j.status), Some(JobStatus::Queued))
                }
                (true, BulkAction::Cancel) => {
                    assert_eq!(after.map(|j| j.status), Some(JobStatus::Cancelled))
                }
                (true, BulkAction::Delete) => assert_eq!(after, None, "deleted"),
                (true, BulkAction::RunNow) => unreachable!("not among the actions"),
            }
        }
        // Tidy up for the next action: nothing live is left to claim.
        let live: Vec<String> = h
            .jobs()
            .await
            .into_iter()
            .filter(|j| !j.status.is_terminal())
            .map(|j| j.id)
            .collect();
        h.store
            .act_on_jobs(BulkAction::Cancel, &live)
            .await
            .unwrap();
        let all = ids(&h.jobs().await);
        h.store.act_on_jobs(BulkAction::Delete, &all).await.unwrap();
        assert!(h.snapshot().await.counts.is_zero(), "counts follow deletes");
    }
}

pub async fn nothing_changed_is_no_mutation(h: &Harness) {
    let jobs = one_of_each(h).await;
    let queued = in_status(&jobs, JobStatus::Queued).id.clone();
    let before = h.state().await;
    let batch = h
        .store
        .act_on_jobs(BulkAction::Retry, &[queued, "missing".into()])
        .await
        .unwrap();
    assert_eq!((batch.changed, batch.skipped, batch.missing), (0, 1, 1));
    h.assert_unchanged(&before, "a batch that changed nothing")
        .await;
}

pub async fn a_bulk_cancel_tells_the_running_jobs_worker(h: &Harness) {
    let mut cancels = h.store.subscribe_cancellations();
    let jobs = one_of_each(h).await;
    let running = in_status(&jobs, JobStatus::HandedOff);
    h.store
        .act_on_jobs(BulkAction::Cancel, &ids(&jobs))
        .await
        .unwrap();
    let told = tokio::time::timeout(std::time::Duration::from_secs(10), cancels.recv())
        .await
        .expect("a cancellation notice")
        .expect("the notice");
    assert_eq!(told, running.id);
    let lost = h.store.lost_leases(&[lease(running)]).await.unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].loss, LeaseLoss::Cancelled);
}

pub async fn a_filter_is_walked_in_bounded_batches(h: &Harness) {
    let picked = failed(h, "bulk-a", "a", 23).await;
    let other_queue = failed(h, "bulk-b", "b", 3).await;
    let live = h
        .insert(job(
            "bulk-a",
            json!(["live"]),
            EnqueueOptions::new().queue("a"),
        ))
        .await;
    let r0 = h.revision().await;
    let req = BulkRequest {
        batch_size: 10,
        ..BulkRequest::new(
            BulkAction::Retry,
            BulkSelection::Matching(JobFilter {
                statuses: vec![JobStatus::Failed, JobStatus::Cancelled],
                queue: Some("a".into()),
                ..JobFilter::default()
            }),
        )
    };
    let mut seen: Vec<BulkReport> = Vec::new();
    let report = run_bulk(h.store.as_ref(), &req, &mut |r| seen.push(r.clone()))
        .await
        .unwrap();
    assert_eq!(
        (report.matched, report.changed, report.skipped),
        (23, 23, 0)
    );
    assert_eq!(report.batches, 3, "23 jobs in batches of 10");
    assert_eq!(seen.len(), 3, "progress after every batch");
    assert_eq!(seen[0].changed, 10);
    assert_eq!(h.revision().await, r0 + 3, "one mutation per batch");
    assert_eq!(report.sample.len(), BulkReport::SAMPLE);
    for id in &picked {
        assert_eq!(h.get(id).await.status, JobStatus::Queued);
    }
    for id in &other_queue {
        assert_eq!(h.get(id).await.status, JobStatus::Failed, "another queue");
    }
    assert_eq!(h.get(&live).await.status, JobStatus::Queued);
}

pub async fn a_dry_run_counts_and_changes_nothing(h: &Harness) {
    let jobs = one_of_each(h).await;
    failed(h, "bulk-dry", "default", 4).await;
    let before = h.state().await;
    let mut by_filter = BulkRequest::new(
        BulkAction::Delete,
        BulkSelection::Matching(JobFilter::default()),
    );
    by_filter.dry_run = true;
    by_filter.batch_size = 3;
    let report = run_bulk(h.store.as_ref(), &by_filter, &mut |_| {})
        .await
        .unwrap();
    assert_eq!((report.matched, report.changed, report.skipped), (10, 8, 2));
    assert_eq!(report.batches, 0);
    let mut by_ids = BulkRequest::new(BulkAction::Cancel, BulkSelection::Ids(ids(&jobs)));
    by_ids.dry_run = true;
    let report = run_bulk(h.store.as_ref(), &by_ids, &mut |_| {})
        .await
        .unwrap();
    assert_eq!((report.matched, report.changed, report.skipped), (6, 2, 4));
    h.assert_unchanged(&before, "dry runs").await;
}

pub async fn an_unknown_id_changes_nothing(h: &Harness) {
    let jobs = one_of_each(h).await;
    let before = h.state().await;
    let mut asked = ids(&jobs);
    asked.insert(1, "no-such-job".into());
    let req = BulkRequest::new(BulkAction::Retry, BulkSelection::Ids(asked));
    expect_not_found(
        run_bulk(h.store.as_ref(), &req, &mut |_| {}).await,
        ErrorCode::JobNotFound,
    );
    h.assert_unchanged(&before, "a bulk retry naming a missing job")
        .await;
}

/// A queued job named `name` due `in_ms` from now.
async fn due_in(h: &Harness, name: &str, in_ms: i64) -> String {
    let at = h.now() + in_ms;
    h.insert(job(
        name,
        json!([]),
        EnqueueOptions::new().scheduled_at_ms(at),
    ))
    .await
}

pub async fn run_now_makes_only_jobs_due_later_due(h: &Harness) {
    let jobs = one_of_each(h).await;
    let later = due_in(h, "bulk-later", 60_000).await;
    let mut asked = ids(&jobs);
    asked.push(later.clone());
    asked.push("no-such-job".into());
    h.advance(5);
    let before = h.jobs().await;
    let r0 = h.revision().await;
    let mut work = h.store.work_signal();
    work.borrow_and_update();
    let batch = h
        .store
        .act_on_jobs(BulkAction::RunNow, &asked)
        .await
        .unwrap();
    let expected = BulkBatch {
        changed: 1,
        skipped: 6,
        missing: 1,
    };
    assert_eq!(
        batch, expected,
        "due, running and finished jobs are skipped"
    );
    assert!(work.has_changed().unwrap(), "idle workers hear of it");
    assert_eq!(h.revision().await, r0, "no count moved");
    for old in before {
        let now = h.get(&old.id).await;
        if old.id == later {
            let moved = Job {
                scheduled_at_ms: h.now(),
                ..old
            };
            assert_eq!(now, moved, "only the scheduled time moves");
        } else {
            assert_eq!(now, old, "skipped jobs are untouched");
        }
    }
    let claimed = h.claim("w", &["bulk-later"], 10).await;
    assert_eq!(ids(&claimed), vec![later], "due now, so claimable");

    let again = h
        .store
        .act_on_jobs(BulkAction::RunNow, &ids(&claimed))
        .await
        .unwrap();
    assert_eq!((again.changed, again.skipped), (0, 1), "running: skipped");
}

pub async fn run_now_by_filter_counts_exactly(h: &Harness) {
    let later: Vec<String> = [
        due_in(h, "bulk-soon", 1_000).await,
        due_in(h, "bulk-soon", 2_000).await,
        due_in(h, "bulk-soon", 3_000).await,
    ]
    .to_vec();
    let due = due_in(h, "bulk-soon", 0).await;
    h.advance(1_500);
    let filter = JobFilter {
        statuses: vec![JobStatus::Queued],
        job_name: Some("bulk-soon".into()),
        ..JobFilter::default()
    };
    let mut dry = BulkRequest::new(BulkAction::RunNow, BulkSelection::Matching(filter.clone()));
    dry.dry_run = true;
    dry.now_ms = h.now();
    let before = h.state().await;
    let report = run_bulk(h.store.as_ref(), &dry, &mut |_| {}).await.unwrap();
    assert_eq!((report.matched, report.changed, report.skipped), (4, 2, 2));
    h.assert_unchanged(&before, "a dry run").await;
    let req = BulkRequest {
        batch_size: 3,
        ..BulkRequest::new(BulkAction::RunNow, BulkSelection::Matching(filter))
    };
    let report = run_bulk(h.store.as_ref(), &req, &mut |_| {}).await.unwrap();
    assert_eq!(
        (
            report.matched,
            report.changed,
            report.skipped,
            report.batches
        ),
        (4, 2, 2, 2)
    );
    for id in later.iter().chain([&due]) {
        assert!(h.get(id).await.scheduled_at_ms <= h.now(), "{id} is due");
    }
    assert_eq!(h.get(&later[2]).await.scheduled_at_ms, h.now());
}
