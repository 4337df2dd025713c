//! Sequences (`docs/queues.md`): jobs sharing a sequence key run one at a
//! time, in the order they were enqueued, across every claimer; a job whose
//! last attempt failed holds the jobs behind it until it is retried to
//! completion, cancelled or deleted, unless it was enqueued to let the next
//! one run; a retried job waits for the one running; sequences of different
//! keys and jobs without one are never held; bad keys and a sequence with
//! dependencies are refused, writing nothing.

use duraq_core::inspect::PruneRequest;
use duraq_core::{EnqueueOptions, ErrorCode, Job, JobStatus, NewJob, Outcome, SequenceFailure};
use serde_json::json;

use crate::harness::{expect_invalid, job, Harness};

fn ids(jobs: &[Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

/// Enqueues `n` jobs of sequence `key`, 1 ms apart, named `{key}{i}`.
async fn sequence(h: &Harness, key: &str, n: usize, opts: EnqueueOptions) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let opts = opts.clone().sequence(key);
        let id = format!("{key}{i}");
        out.push(h.insert(job("j", json!([key, i]), opts).with_id(id)).await);
        h.advance(1);
    }
    out
}

fn fails() -> Outcome {
    Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: None,
        discard: true,
    }
}

async fn finish(h: &Harness, job: &Job, outcome: Outcome) {
    assert!(h.report(job, outcome).await, "{}", job.id);
}

pub async fn a_sequence_runs_one_job_at_a_time_in_order(h: &Harness) {
    let s = sequence(h, "s", 3, EnqueueOptions::new()).await;
    let free = h
        .insert(job("j", json!(["free"]), EnqueueOptions::new()))
        .await;
    let first = h.claim("w1", &["j"], 10).await;
    assert_eq!(ids(&first), [s[0].as_str(), free.as_str()]);
    assert!(h.claim("w2", &["j"], 10).await.is_empty(), "s0 runs");
    finish(h, &first[0], Outcome::Completed).await;
    let second = h.claim("w2", &["j"], 10).await;
    assert_eq!(ids(&second), [s[1].as_str()]);
    assert!(h.claim("w1", &["j"], 10).await.is_empty(), "s1 runs");
    finish(h, &second[0], Outcome::Completed).await;
    assert_eq!(ids(&h.claim("w1", &["j"], 10).await), [s[2].as_str()]);
}

/// A failed job holds its sequence; retried, it runs before the next and,
/// completed, lets it run.
pub async fn a_failed_job_holds_its_sequence_until_retried_to_completion(h: &Harness) {
    let s = sequence(h, "s", 2, EnqueueOptions::new()).await;
    let head = h.claim("w", &["j"], 10).await.remove(0);
    finish(h, &head, fails()).await;
    assert!(h.claim("w", &["j"], 10).await.is_empty(), "held by s0");
    h.store.retry_job(&s[0]).await.unwrap();
    let again = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&again), [s[0].as_str()], "the retry runs first, alone");
    finish(h, &again[0], Outcome::Completed).await;
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), [s[1].as_str()]);
}

/// A held sequence goes on when its failed job is cancelled (after a retry
/// put it back in the queue) or deleted.
pub async fn a_cancelled_or_deleted_job_lets_its_sequence_go_on(h: &Harness) {
    let s = sequence(h, "s", 3, EnqueueOptions::new()).await;
    let head = h.claim("w", &["j"], 10).await.remove(0);
    finish(h, &head, fails()).await;
    h.store.retry_job(&s[0]).await.unwrap();
    h.store.cancel_job(&s[0]).await.unwrap();
    let next = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&next), [s[1].as_str()], "a cancel moves the turn on");
    finish(h, &next[0], fails()).await;
    assert!(h.claim("w", &["j"], 10).await.is_empty(), "held by s1");
    h.advance(10);
    let prune = PruneRequest {
        completed_older_than: None,
        failed_older_than: Some(std::time::Duration::from_millis(1)),
        cancelled_older_than: None,
        batch_size: 100,
    };
    assert_eq!(h.store.prune(&prune).await.unwrap().deleted, 1);
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), [s[2].as_str()]);
}

/// `continue`: the next job runs after a failure; a retry of the failed one
/// waits for the job running, then runs before the rest.
pub async fn continue_lets_the_next_run_and_a_retry_waits_its_turn(h: &Harness) {
    let opts = EnqueueOptions::new().on_sequence_failure(SequenceFailure::Continue);
    let s = sequence(h, "s", 3, opts).await;
    let head = h.claim("w", &["j"], 10).await.remove(0);
    assert!(h.get(&s[0]).await.sequence_continues);
    finish(h, &head, fails()).await;
    let running = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&running), [s[1].as_str()], "the failure let s1 run");
    h.store.retry_job(&s[0]).await.unwrap();
    assert!(h.claim("w", &["j"], 10).await.is_empty(), "s1 still runs");
    finish(h, &running[0], Outcome::Completed).await;
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), [s[0].as_str()]);
}

/// Two sequences run side by side, and a queued head that is cancelled
/// moves its own turn on.
pub async fn sequences_of_different_keys_never_hold_each_other(h: &Harness) {
    let a = sequence(h, "a", 2, EnqueueOptions::new()).await;
    let b = sequence(h, "b", 2, EnqueueOptions::new()).await;
    h.store.cancel_job(&a[0]).await.unwrap();
    let claimed = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&claimed), [a[1].as_str(), b[0].as_str()]);
}

/// A search by sequence finds only that sequence's jobs.
pub async fn a_search_by_sequence_finds_its_jobs(h: &Harness) {
    let a = sequence(h, "a", 2, EnqueueOptions::new()).await;
    sequence(h, "b", 1, EnqueueOptions::new()).await;
    h.enqueue("j", json!(["none"])).await;
    let filter = duraq_core::inspect::JobFilter {
        sequence_key: Some("a".into()),
        ..Default::default()
    };
    let found = h.store.search_jobs(&filter).await.unwrap().jobs;
    let mut found: Vec<&str> = ids(&found);
    found.sort_unstable();
    assert_eq!(found, [a[0].as_str(), a[1].as_str()]);
}

pub async fn a_bad_sequence_is_refused_and_writes_nothing(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    for key in ["", "bad\nkey"] {
        let opts = EnqueueOptions::new().sequence(key);
        expect_invalid(
            NewJob::new("j", json!([]), opts),
            ErrorCode::InvalidSequence,
        );
    }
    let with_after = EnqueueOptions::new()
        .sequence("s")
        .after("0193a0b0-0000-7000-8000-000000000001");
    expect_invalid(
        NewJob::new("j", json!([]), with_after),
        ErrorCode::UnsupportedOption,
    );
    h.assert_unchanged(&before, "refused sequences").await;
    let kept = h
        .insert(job("j", json!([]), EnqueueOptions::new().sequence("s")))
        .await;
    assert_eq!(h.get(&kept).await.sequence_key.as_deref(), Some("s"));
    assert_eq!(h.get(&kept).await.status, JobStatus::Queued);
}
