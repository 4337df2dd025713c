//! Pause and resume of a queue: a paused queue's due jobs are never
//! claimed while other queues' are (whatever their priority), the worker's timer
//! ignores them, jobs handed off before the pause finish and report as usual,
//! resuming makes them claimable in claim order and wakes idle workers, the pause
//! is durable (seen through a newly opened handle), idempotent, not a count
//! mutation, and a bad queue name is `invalid-queue` without any write.

use std::collections::BTreeMap;

use duraq_core::driver::ClaimRequest;
use duraq_core::inspect::QueueSnapshot;
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, Outcome, QueueConfig, QueueName};
use serde_json::json;

use crate::harness::{claim_req, expect_invalid, job, Harness, WireOptions};

fn queue(name: &str) -> QueueName {
    QueueName::new(name).expect("valid queue name")
}

fn in_queue(name: &str) -> EnqueueOptions {
    EnqueueOptions::new().queue(name)
}

async fn pause(h: &Harness, name: &str) -> bool {
    h.store
        .pause_queue(&queue(name))
        .await
        .expect("pause_queue")
}

async fn resume(h: &Harness, name: &str) -> bool {
    h.store
        .resume_queue(&queue(name))
        .await
        .expect("resume_queue")
}

async fn queue_snapshot(h: &Harness) -> QueueSnapshot {
    h.store.queue_snapshot().await.expect("queue_snapshot")
}

/// `(queue, paused)` of every entry of the snapshot.
async fn paused_flags(h: &Harness) -> Vec<(String, bool)> {
    queue_snapshot(h)
        .await
        .queues
        .into_iter()
        .map(|q| (q.queue, q.paused))
        .collect()
}

fn ids(jobs: &[duraq_core::Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

pub async fn paused_queue_is_skipped_not_blocking(h: &Harness) {
    // The paused queue's jobs are the oldest and of the highest priority queue:
    // had they been a barrier, nothing else would be claimed.
    for i in 0..3 {
        h.insert(job("j", json!([i]), in_queue("mail")).with_id(format!("mail-{i}")))
            .await;
    }
    h.advance(1);
    h.insert(job("j", json!([]), in_queue("video")).with_id("video-0"))
        .await;
    h.insert(job("j", json!([]), in_queue("default")).with_id("default-0"))
        .await;
    assert!(pause(h, "mail").await, "mail was running");
    let prioritized = ClaimRequest {
        queue_config: BTreeMap::from([(
            "mail".to_owned(),
            QueueConfig {
                max_concurrent: None,
                priority: 10,
            },
        )]),
        ..claim_req("w1", &["j"], 10)
    };
    let claimed = h.claim_with(&prioritized).await;
    assert_eq!(ids(&claimed), ["default-0", "video-0"]);
    // Naming only the paused queue claims nothing.
    let only_mail = ClaimRequest {
        queues: Some(vec!["mail".into()]),
        ..claim_req("w2", &["j"], 10)
    };
    assert!(h.claim_with(&only_mail).await.is_empty());
    assert!(h.claim("w3", &["j"], 10).await.is_empty());
    for i in 0..3 {
        assert_eq!(h.get(&format!("mail-{i}")).await.status, JobStatus::Queued);
    }
    // The timer ignores the paused queue's due jobs (an idle worker would spin
    // on them), but not a later job of a running queue.
    let names = ["j".to_owned()];
    let next = h.store.next_scheduled_at(&names, None).await.unwrap();
    assert_eq!(next, None, "only paused jobs are queued");
    let at = h.now() + 5_000;
    h.insert(job("j", json!([]), in_queue("video").scheduled_at_ms(at)).with_id("video-later"))
        .await;
    assert_eq!(
        h.store.next_scheduled_at(&names, None).await.unwrap(),
        Some(at)
    );
    let mail = ["mail".to_owned()];
    assert_eq!(
        h.store
            .next_scheduled_at(&names, Some(&mail))
            .await
            .unwrap(),
        None
    );
    // Enqueueing into a paused queue still works; the snapshot shows the pause
    // next to the counts.
    h.insert(job("j", json!([9]), in_queue("mail")).with_id("mail-9"))
        .await;
    let snap = queue_snapshot(h).await;
    let entry = snap.queue("mail").expect("mail listed");
    assert!(entry.paused);
    assert_eq!(entry.counts.queued, 4);
    assert!(!snap.queue("video").unwrap().paused);
}

pub async fn pause_is_idempotent_and_not_a_count_mutation(h: &Harness) {
    h.enqueue_with("j", json!([]), in_queue("mail")).await;
    let before = h.state().await;
    let mut work = h.store.work_signal();
    work.borrow_and_update();
    assert!(pause(h, "mail").await, "first pause changes the queue");
    assert!(!pause(h, "mail").await, "second pause changes nothing");
    assert!(!resume(h, "video").await, "a running queue is not resumed");
    h.assert_unchanged(&before, "pausing").await;
    // A queue without jobs can be paused and is listed (so it can be resumed).
    assert!(pause(h, "empty").await);
    assert_eq!(
        paused_flags(h).await,
        [("empty".to_owned(), true), ("mail".to_owned(), true)]
    );
    let empty = queue_snapshot(h).await;
    let empty = empty.queue("empty").unwrap();
    assert_eq!(
        (empty.counts.all, empty.latency_ms),
        (0, None),
        "a paused queue without jobs has zero counts"
    );
    work.borrow_and_update();
    assert!(resume(h, "mail").await, "first resume changes the queue");
    assert!(work.has_changed().unwrap(), "resuming wakes idle workers");
    work.borrow_and_update();
    assert!(!resume(h, "mail").await, "second resume changes nothing");
    assert!(resume(h, "empty").await);
    assert_eq!(paused_flags(h).await, [("mail".to_owned(), false)]);
    h.assert_unchanged(&before, "pausing and resuming").await;
    assert_eq!(queue_snapshot(h).await.revision, before.snapshot.revision);
    // The blank name is the default queue, as at enqueue.
    assert!(pause(h, "  ").await);
    assert!(!pause(h, "default").await);
    assert!(resume(h, "default").await);
}

pub async fn resume_makes_jobs_claimable_in_order(h: &Harness) {
    assert!(pause(h, "mail").await);
    let mut expected = Vec::new();
    for i in 0..3 {
        let id = format!("mail-{i}");
        h.insert(job("j", json!([i]), in_queue("mail")).with_id(&id))
            .await;
        expected.push(id);
        h.advance(10);
    }
    h.advance(60_000);
    assert!(h.claim("w", &["j"], 10).await.is_empty());
    let mut work = h.store.work_signal();
    work.borrow_and_update();
    assert!(resume(h, "mail").await);
    assert!(work.has_changed().unwrap(), "resume signals work");
    let claimed = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&claimed), expected, "claimed in due order");
    assert!(claimed.iter().all(|j| j.status == JobStatus::HandedOff));
}

pub async fn handed_off_jobs_finish_after_a_pause(h: &Harness) {
    for i in 0..2 {
        let opts = in_queue("mail").max_retries(3);
        h.insert(job("j", json!([i]), opts).with_id(format!("m{i}")))
            .await;
    }
    let running = h.claim("w", &["j"], 2).await;
    assert_eq!(running.len(), 2);
    assert!(pause(h, "mail").await);
    let revision = h.revision().await;
    assert!(h.report(&running[0], Outcome::Completed).await);
    assert_eq!(h.get("m0").await.status, JobStatus::Completed);
    let failed = Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: Some(0),
        discard: false,
    };
    assert!(h.report(&running[1], failed).await, "fenced as usual");
    assert_eq!(h.revision().await, revision + 2, "reports are mutations");
    let retried = h.get("m1").await;
    assert_eq!(retried.status, JobStatus::Queued);
    assert!(retried.scheduled_at_ms <= h.now(), "due again at once");
    assert!(
        h.claim("w", &["j"], 2).await.is_empty(),
        "a retry waits while its queue is paused"
    );
    assert!(resume(h, "mail").await);
    assert_eq!(ids(&h.claim("w", &["j"], 2).await), ["m1"]);
}

pub async fn pause_is_durable(h: &Harness) {
    h.insert(job("j", json!([]), in_queue("mail")).with_id("m"))
        .await;
    h.insert(job("j", json!([]), in_queue("video")).with_id("v"))
        .await;
    assert!(pause(h, "mail").await);
    // A newly opened handle (another process, a restart) sees the pause; stores
    // that live only in their process check through the same handle.
    let other = h.reopen().await.unwrap_or_else(|| h.store.clone());
    let snap = other.queue_snapshot().await.unwrap();
    assert!(snap.queue("mail").unwrap().paused);
    assert!(!snap.queue("video").unwrap().paused);
    assert!(!other.pause_queue(&queue("mail")).await.unwrap());
    let claimed = other.claim(&claim_req("w2", &["j"], 10)).await.unwrap();
    assert_eq!(ids(&claimed), ["v"]);
    // Resumed there, claimable here.
    assert!(other.resume_queue(&queue("mail")).await.unwrap());
    assert_eq!(ids(&h.claim("w1", &["j"], 10).await), ["m"]);
}

pub async fn invalid_queue_name_changes_nothing(h: &Harness) {
    h.enqueue_with("j", json!([]), in_queue("mail")).await;
    assert!(pause(h, "mail").await);
    let before = h.state().await;
    let flags = paused_flags(h).await;
    for bad in ["q\u{1b}[2J", "line\nbreak", &"q".repeat(256)] {
        expect_invalid(QueueName::new(bad), ErrorCode::InvalidQueue);
    }
    h.assert_unchanged(&before, "refused queue names").await;
    assert_eq!(paused_flags(h).await, flags);
    // The longest valid name works end to end.
    let longest = "q".repeat(255);
    assert!(pause(h, &longest).await);
    assert!(queue_snapshot(h).await.queue(&longest).unwrap().paused);
    assert!(resume(h, &longest).await);
    h.assert_unchanged(&before, "pausing the longest name")
        .await;
}
