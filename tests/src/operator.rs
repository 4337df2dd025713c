//! Operator actions (`jobs retry`, `jobs cancel`, `jobs show`): outcomes in every
//! status, `job-not-found` / `invalid-job-state` writing nothing, a cancelled lease
//! fenced off, and a retried keyed job taking its key back only when it is free.

use duraq_core::{CancelReason, EnqueueOptions, ErrorCode, Job, JobStatus, Outcome};
use serde_json::json;

use crate::harness::{expect_invalid, expect_not_found, job, key, Harness};

/// A job driven into `status` (maxRetries 0; named uniquely).
async fn in_status(h: &Harness, status: JobStatus) -> Job {
    let name = format!("op-{status}");
    let mut opts = EnqueueOptions::new().max_retries(0);
    if status == JobStatus::Pending {
        // Pending is where a job waits for another: one that never runs here.
        opts = opts.after(h.enqueue("op-never", json!([])).await);
    }
    let id = h.insert(job(&name, json!([status.as_str()]), opts)).await;
    if status == JobStatus::Pending {
        return h.get(&id).await;
    }
    h.drive_to(&id, &name, status).await
}

pub async fn retry_terminal_jobs(h: &Harness) {
    for status in [
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
        JobStatus::Orphaned,
    ] {
        let before = in_status(h, status).await;
        h.advance(3);
        let r0 = h.revision().await;
        let retried = h.store.retry_job(&before.id).await.unwrap();
        assert_eq!(h.revision().await, r0 + 1);
        assert_eq!(
            retried,
            h.get(&before.id).await,
            "retry returns the stored row"
        );
        let expected = Job {
            status: JobStatus::Queued,
            attempts: 0,
            scheduled_at_ms: h.now(),
            handed_off_at_ms: None,
            completed_at_ms: None,
            failed_at_ms: None,
            cancelled_at_ms: None,
            cancel_reason: None,
            orphaned_at_ms: None,
            worker_id: None,
            handoff_id: None,
            ..before.clone()
        };
        assert_eq!(retried, expected, "retry of a {status} job");
        assert_eq!(retried.last_error, before.last_error, "lastError is kept");
        let name = format!("op-{status}");
        let claimed = h.claim_id("w2", &name, &before.id).await;
        assert_eq!(claimed.attempts, 1, "a fresh attempt");
    }
}

pub async fn retry_rejects_live_and_missing(h: &Harness) {
    let queued = in_status(h, JobStatus::Queued).await;
    let running = in_status(h, JobStatus::HandedOff).await;
    let before = h.state().await;
    expect_invalid(
        h.store.retry_job(&queued.id).await,
        ErrorCode::InvalidJobState,
    );
    expect_invalid(
        h.store.retry_job(&running.id).await,
        ErrorCode::InvalidJobState,
    );
    expect_not_found(h.store.retry_job("missing").await, ErrorCode::JobNotFound);
    h.assert_unchanged(&before, "rejected retries").await;
}

pub async fn cancel_live_jobs(h: &Harness) {
    let queued = in_status(h, JobStatus::Queued).await;
    h.advance(2);
    let cancelled = h.store.cancel_job(&queued.id).await.unwrap();
    assert_eq!(
        (cancelled.status, cancelled.cancelled_at_ms),
        (JobStatus::Cancelled, Some(h.now()))
    );
    assert_eq!(cancelled.cancel_reason, Some(CancelReason::Operator));
    assert_eq!(cancelled, h.get(&queued.id).await);
    let running = in_status(h, JobStatus::HandedOff).await;
    let cancelled = h.store.cancel_job(&running.id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.cancel_reason, Some(CancelReason::Operator));
    let before = h.state().await;
    assert!(
        !h.report(&running, Outcome::Completed).await,
        "the lease was voided"
    );
    h.assert_unchanged(&before, "a report on a cancelled lease")
        .await;
    assert!(h
        .claim("w", &[&format!("op-{}", JobStatus::Queued)], 5)
        .await
        .is_empty());
}

pub async fn cancel_rejects_terminal_and_missing(h: &Harness) {
    let mut terminal = Vec::new();
    for status in [
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
        JobStatus::Orphaned,
    ] {
        terminal.push(in_status(h, status).await);
    }
    let before = h.state().await;
    for j in &terminal {
        expect_invalid(h.store.cancel_job(&j.id).await, ErrorCode::InvalidJobState);
    }
    expect_not_found(h.store.cancel_job("missing").await, ErrorCode::JobNotFound);
    h.assert_unchanged(&before, "rejected cancels").await;
}

pub async fn get_job_in_every_status(h: &Harness) {
    for status in JobStatus::ALL {
        let j = in_status(h, status).await;
        let got = h.store.get_job(&j.id).await.unwrap().expect("job");
        assert_eq!(
            (got.status, got.terminal_at_ms().is_some()),
            (status, status.is_terminal())
        );
        assert_eq!(got.lease().is_some(), status == JobStatus::HandedOff);
    }
    assert_eq!(h.store.get_job("").await.unwrap(), None);
    assert_eq!(h.store.get_job("missing").await.unwrap(), None);
}

pub async fn retry_takes_free_key_back(h: &Harness) {
    let new = job("j", json!([]), EnqueueOptions::new().max_retries(0));
    let out = h
        .store
        .replace_scheduled(&key("k"), new, duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    h.drive_to(&out.job_id, "j", JobStatus::Failed).await;
    assert_eq!(
        h.store
            .get_scheduled(&key("k"), false)
            .await
            .unwrap()
            .current_job,
        None
    );
    h.store.retry_job(&out.job_id).await.unwrap();
    let got = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(
        got.current_job.map(|j| j.id),
        Some(out.job_id.clone()),
        "the free key is taken back"
    );
    // Now it is the owner again: a replace cancels it.
    let next = h.replace("k", "j", json!([2])).await;
    assert_eq!(
        (next.previous_job_id, next.previous_status),
        (Some(out.job_id), Some(JobStatus::Queued))
    );
}

pub async fn retry_leaves_taken_key_alone(h: &Harness) {
    let first = h.replace("k", "j", json!([1])).await;
    let second = h.replace("k", "j", json!([2])).await;
    h.store.retry_job(&first.job_id).await.unwrap();
    let got = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(
        got.current_job.map(|j| j.id),
        Some(second.job_id.clone()),
        "the newer owner stays"
    );
    let third = h.replace("k", "j", json!([3])).await;
    assert_eq!(third.previous_job_id, Some(second.job_id));
    assert_eq!(
        h.get(&first.job_id).await.status,
        JobStatus::Queued,
        "the retried job is not the owner"
    );
}
