//! Awaiting a job (`Inspect::wait_for`): the wait answers with the finished
//! job (its status, output, last error), with the job as it is when the time
//! runs out, or says the job was deleted as it completed (an ephemeral job);
//! a missing job is `job-not-found`. A report through a second handle on the
//! same database (another process's commit, which this handle may not hear
//! of) ends the wait too.

use std::time::Duration;

use duraq_core::inspect::Waited;
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, Outcome};
use serde_json::json;

use crate::harness::{expect_not_found, job, Harness};

/// Generous: a wait that works ends long before it.
const LONG: Duration = Duration::from_secs(30);

pub async fn a_wait_answers_with_the_job_once_it_completes(h: &Harness) {
    let id = h.enqueue("j", json!([1])).await;
    let running = h.claim_id("w", "j", &id).await;
    let store = h.store.clone();
    let wait_id = id.clone();
    let waiting = tokio::spawn(async move { store.wait_for(&wait_id, LONG).await });
    let output = json!({"total": 3});
    assert!(
        h.report(
            &running,
            Outcome::CompletedWith {
                output: output.clone()
            }
        )
        .await
    );
    let Waited::Finished(job) = waiting.await.unwrap().unwrap() else {
        panic!("the wait did not see the job finish");
    };
    assert_eq!(
        (job.id.as_str(), job.status),
        (id.as_str(), JobStatus::Completed)
    );
    assert_eq!(job.output, Some(output));
}

pub async fn a_finished_job_answers_at_once_with_its_outcome(h: &Harness) {
    let failed = h.enqueue("f", json!([1])).await;
    h.drive_to(&failed, "f", JobStatus::Failed).await;
    let cancelled = h.enqueue("c", json!([1])).await;
    h.drive_to(&cancelled, "c", JobStatus::Cancelled).await;
    // A zero timeout still reads the job once.
    for (id, status) in [
        (&failed, JobStatus::Failed),
        (&cancelled, JobStatus::Cancelled),
    ] {
        let Waited::Finished(job) = h.store.wait_for(id, Duration::ZERO).await.unwrap() else {
            panic!("{status:?} is finished");
        };
        assert_eq!(job.status, status);
    }
    let Waited::Finished(job) = h.store.wait_for(&failed, LONG).await.unwrap() else {
        panic!("failed is finished");
    };
    assert_eq!(job.last_error.as_deref(), Some("boom"));
}

pub async fn a_wait_times_out_with_the_job_as_it_is(h: &Harness) {
    let id = h.enqueue("j", json!([1])).await;
    let waited = h
        .store
        .wait_for(&id, Duration::from_millis(50))
        .await
        .unwrap();
    let Waited::TimedOut(job) = waited else {
        panic!("a queued job with no worker cannot finish: {waited:?}");
    };
    assert_eq!(job.status, JobStatus::Queued);
    h.claim_id("w", "j", &id).await;
    let Waited::TimedOut(job) = h.store.wait_for(&id, Duration::ZERO).await.unwrap() else {
        panic!("a running job is not finished");
    };
    assert_eq!(job.status, JobStatus::HandedOff);
}

pub async fn a_wait_for_no_job_is_job_not_found(h: &Harness) {
    let missing = "0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b";
    expect_not_found(
        h.store.wait_for(missing, LONG).await,
        ErrorCode::JobNotFound,
    );
}

pub async fn an_ephemeral_job_deleted_as_it_completes_ends_the_wait(h: &Harness) {
    let opts = EnqueueOptions::new().keep_completed(false);
    let id = h.insert(job("j", json!([1]), opts)).await;
    let running = h.claim_id("w", "j", &id).await;
    let store = h.store.clone();
    let wait_id = id.clone();
    let waiting = tokio::spawn(async move { store.wait_for(&wait_id, LONG).await });
    // The wait has read the running job before the row goes (or reads
    // nothing and says so): either way it ends now, not at the timeout.
    assert!(h.report(&running, Outcome::Completed).await);
    match waiting.await.unwrap() {
        Ok(Waited::Deleted) => {}
        Err(e) => assert_eq!(e.code(), ErrorCode::JobNotFound, "read after the delete"),
        other => panic!("{other:?}"),
    }
}

/// A report through another handle on the same database (on SQLite another
/// process's commit, which sends this handle no count change) ends the wait.
pub async fn a_report_through_another_handle_ends_the_wait(h: &Harness) {
    let Some(other) = h.reopen().await else {
        return; // an in-process store has no second handle
    };
    let id = h.enqueue("j", json!([1])).await;
    let store = h.store.clone();
    let wait_id = id.clone();
    let waiting = tokio::spawn(async move { store.wait_for(&wait_id, LONG).await });
    let claim = crate::harness::claim_req("w", &["j"], 1);
    let running = other.claim(&claim).await.unwrap();
    assert_eq!(running.len(), 1);
    let lease = running[0].lease().unwrap();
    let applied = other
        .report_batch(vec![(lease, Outcome::Completed)])
        .await
        .unwrap();
    assert_eq!(applied, [true]);
    let Waited::Finished(job) = waiting.await.unwrap().unwrap() else {
        panic!("the other handle's report did not end the wait");
    };
    assert_eq!(job.status, JobStatus::Completed);
}
