//! Ephemeral jobs (`keepCompleted = false`, `docs/jobs.md`): the row is
//! deleted in the transaction that completes the job, by a single report and
//! by a batch of completions alike; the counts stay exact (the job leaves
//! `completed` as a pruned one does) while the throughput totals count the
//! completion; failed and cancelled ephemeral jobs are kept; an idempotent
//! enqueue replays the deleted job's id; a schedule key is free again; and a
//! workflow step others depend on is kept, its output readable.

use duraq_core::{EnqueueOptions, EnqueueOutcome, JobStatus, Outcome};
use serde_json::json;

use crate::harness::{job, key, Harness};

fn ephemeral() -> EnqueueOptions {
    EnqueueOptions::new().keep_completed(false)
}

/// The counts equal the rows in each status.
async fn assert_counts_match_rows(h: &Harness) {
    let snap = h.snapshot().await;
    let jobs = h.jobs().await;
    for status in JobStatus::ALL {
        let rows = jobs.iter().filter(|j| j.status == status).count() as i64;
        assert_eq!(snap.counts.get(status), rows, "{status} count");
    }
}

async fn completed_total(h: &Harness) -> i64 {
    let totals = h.store.outcome_totals().await.expect("outcome_totals");
    totals.iter().map(|q| q.totals.completed).sum()
}

/// A single report and a batch of completions both delete the row; a job
/// kept by default is not.
pub async fn an_ephemeral_job_is_deleted_when_it_completes(h: &Harness) {
    let gone = h.insert(job("j", json!([1]), ephemeral())).await;
    let batch: Vec<String> = enqueue_ephemeral(h, 3).await;
    let kept = h.insert(job("j", json!([2]), EnqueueOptions::new())).await;
    let queued = h.get(&gone).await;
    assert!(!queued.keep_completed, "the option is stored");
    assert!(h.get(&kept).await.keep_completed, "kept by default");

    let running = h.claim("w", &["j"], 10).await;
    assert_eq!(running.len(), 5);
    let one = running.iter().find(|j| j.id == gone).unwrap();
    let before = h.revision().await;
    assert!(h.report(one, Outcome::Completed).await);
    assert_eq!(h.revision().await, before + 1, "one mutation");
    assert_eq!(h.store.get_job(&gone).await.unwrap(), None, "deleted");

    let reports = running
        .iter()
        .filter(|j| j.id != gone)
        .map(|j| (j.lease().unwrap(), Outcome::Completed))
        .collect();
    let applied = h.store.report_batch(reports).await.unwrap();
    assert_eq!(applied, [true; 4]);
    for id in &batch {
        assert_eq!(h.store.get_job(id).await.unwrap(), None, "{id}");
    }
    assert_eq!(h.get(&kept).await.status, JobStatus::Completed);
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.completed, snap.counts.handed_off), (1, 0));
    assert_counts_match_rows(h).await;
    assert_eq!(
        completed_total(h).await,
        5,
        "the totals count every completion"
    );
}

/// Enqueues `n` ephemeral jobs in one batch; their ids.
async fn enqueue_ephemeral(h: &Harness, n: usize) -> Vec<String> {
    let jobs = (0..n)
        .map(|i| job("j", json!(["b", i]), ephemeral()))
        .collect();
    let out = h.store.enqueue_batch(jobs).await.unwrap();
    out.iter().map(|o| o.job_id().to_owned()).collect()
}

/// Someone will want to see why: a failed or cancelled ephemeral job stays,
/// and so does one waiting to retry.
pub async fn failed_and_cancelled_ephemeral_jobs_are_kept(h: &Harness) {
    let failing = h
        .insert(job("j", json!([1]), ephemeral().max_retries(0)))
        .await;
    let running = h.claim_id("w", "j", &failing).await;
    let failed = Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: None,
        discard: false,
    };
    assert!(h.report(&running, failed).await);
    assert_eq!(h.get(&failing).await.status, JobStatus::Failed);
    let cancelled = h.insert(job("j", json!([2]), ephemeral())).await;
    h.store.cancel_job(&cancelled).await.unwrap();
    assert_eq!(h.get(&cancelled).await.status, JobStatus::Cancelled);
    assert_counts_match_rows(h).await;
}

/// An idempotent enqueue of a deleted ephemeral job replays its id and
/// inserts nothing; its schedule key is free for a new job.
pub async fn an_ephemeral_job_replays_and_frees_its_key(h: &Harness) {
    let keyed = || ephemeral().idempotency_key("once");
    let first = h.store.enqueue(job("j", json!([]), keyed())).await.unwrap();
    let running = h.claim("w", &["j"], 1).await.remove(0);
    assert!(h.report(&running, Outcome::Completed).await);
    let before = h.state().await;
    let again = h.store.enqueue(job("j", json!([]), keyed())).await.unwrap();
    assert_eq!(again, EnqueueOutcome::Replayed(first.job_id().to_owned()));
    h.assert_unchanged(&before, "a replay of a deleted job")
        .await;

    let placed = h
        .store
        .replace_scheduled(
            &key("k"),
            job("k", json!([1]), ephemeral()),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let running = h.claim_id("w", "k", &placed.job_id).await;
    assert!(h.report(&running, Outcome::Completed).await);
    let next = h
        .store
        .replace_scheduled(
            &key("k"),
            job("k", json!([2]), ephemeral()),
            duraq_core::RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_eq!(next.previous_job_id, None, "the key was given back");
    assert_eq!(h.get(&next.job_id).await.status, JobStatus::Queued);
    assert_counts_match_rows(h).await;
}

/// A step that other jobs wait for is kept when it completes: they read its
/// output when they run. A leaf step is deleted.
pub async fn an_ephemeral_job_with_dependents_is_kept(h: &Harness) {
    let parent = h.insert(job("p", json!([]), ephemeral())).await;
    let child = h
        .insert(job("c", json!([]), ephemeral().after(parent.as_str())))
        .await;
    let running = h.claim_id("w", "p", &parent).await;
    let done = Outcome::CompletedWith {
        output: json!({"rows": 3}),
    };
    assert!(h.report(&running, done).await);
    let kept = h.get(&parent).await;
    assert_eq!(kept.status, JobStatus::Completed);
    assert_eq!(kept.output, Some(json!({"rows": 3})));
    let running = h.claim_id("w", "c", &child).await;
    assert!(h.report(&running, Outcome::Completed).await);
    assert_eq!(h.store.get_job(&child).await.unwrap(), None, "a leaf goes");
    assert_counts_match_rows(h).await;
}
