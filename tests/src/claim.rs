//! `docs/jobs.md` claiming and fencing: what a claim writes, claim order (queue priority,
//! due time, creation, id), name/queue filters and limits, a fresh lease per claim,
//! and reports under stale, foreign or missing leases answering `false` and
//! changing nothing; a job whose expiry has passed is cancelled, never claimed.
//! What an applied report does is in [`crate::retry`]; caps are in
//! [`crate::concurrency`].

use std::collections::BTreeMap;
use std::time::Duration;

use duraq_core::driver::{ClaimRequest, Lease};
use duraq_core::inspect::utc_time;
use duraq_core::worker::retry_backoff_ms;
use duraq_core::{
    CancelReason, EnqueueOptions, Job, JobStatus, Outcome, QueueConfig, QueueName, RunningOwner,
};
use serde_json::json;

use crate::harness::{claim_req, job, key, lease, Harness, WireOptions};

fn ids(jobs: &[duraq_core::Job]) -> Vec<String> {
    jobs.iter().map(|j| j.id.clone()).collect()
}

pub async fn claim_sets_lease_fields(h: &Harness) {
    let id = h.enqueue("j", json!([1])).await;
    h.advance(7);
    let claimed = h.claim_id("worker-1", "j", &id).await;
    assert_eq!(
        (claimed.status, claimed.attempts),
        (JobStatus::HandedOff, 1)
    );
    assert_eq!(claimed.worker_id.as_deref(), Some("worker-1"));
    assert_eq!(claimed.handed_off_at_ms, Some(h.now()));
    assert!(claimed.handoff_id.as_deref().is_some_and(|s| !s.is_empty()));
    assert_eq!(h.get(&id).await, claimed, "claim returns the stored row");
    assert!(
        h.claim("worker-2", &["j"], 5).await.is_empty(),
        "a job is handed off once"
    );
}

pub async fn claim_order(h: &Harness) {
    let t = h.now();
    let at = |ms| EnqueueOptions::new().scheduled_at_ms(ms);
    h.insert(job("j", json!([]), at(t - 10)).with_id("c")).await;
    h.insert(job("j", json!([]), at(t - 10)).with_id("b")).await;
    h.insert(job("j", json!([]), at(t - 20)).with_id("z")).await;
    h.advance(1);
    h.insert(job("j", json!([]), at(t - 10)).with_id("a")).await;
    h.insert(job("j", json!([]), at(t - 10).queue("urgent")).with_id("y"))
        .await;
    h.insert(job("j", json!([]), at(t - 30).queue("slow")).with_id("x"))
        .await;
    let config = BTreeMap::from([
        (
            "urgent".to_owned(),
            QueueConfig {
                max_concurrent: None,
                priority: 5,
            },
        ),
        (
            "slow".to_owned(),
            QueueConfig {
                max_concurrent: None,
                priority: -1,
            },
        ),
    ]);
    let req = ClaimRequest {
        queue_config: config,
        ..claim_req("w", &["j"], 3)
    };
    assert_eq!(ids(&h.claim_with(&req).await), ["y", "z", "b"]);
    assert_eq!(ids(&h.claim_with(&req).await), ["c", "a", "x"]);
}

pub async fn claim_filters_and_limits(h: &Harness) {
    for (id, name, queue) in [
        ("1", "a", "q1"),
        ("2", "b", "q1"),
        ("3", "a", "q2"),
        ("4", "a", "q1"),
    ] {
        h.insert(job(name, json!([]), EnqueueOptions::new().queue(queue)).with_id(id))
            .await;
    }
    assert!(
        h.claim("w", &["a"], 0).await.is_empty(),
        "limit 0 claims nothing"
    );
    assert!(
        h.claim("w", &["c"], 10).await.is_empty(),
        "no handler for these names"
    );
    let req = ClaimRequest {
        queues: Some(vec!["q1".into()]),
        ..claim_req("w", &["a"], 1)
    };
    assert_eq!(ids(&h.claim_with(&req).await), ["1"]);
    assert_eq!(ids(&h.claim_with(&req).await), ["4"]);
    assert!(h.claim_with(&req).await.is_empty());
    assert_eq!(ids(&h.claim("w", &["a", "b"], 10).await), ["2", "3"]);
}

pub async fn each_claim_gets_a_fresh_lease(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let first = h.claim_id("w", "j", &id).await;
    assert!(h.report(&first, Outcome::failed("e")).await);
    h.advance(retry_backoff_ms(1));
    let second = h.claim_id("w", "j", &id).await;
    assert_ne!(first.handoff_id, second.handoff_id);
    assert_eq!(second.attempts, 2);
    let before = h.state().await;
    assert!(!h.report(&first, Outcome::Completed).await, "stale lease");
    h.assert_unchanged(&before, "a stale report").await;
    assert!(h.report(&second, Outcome::Completed).await);
}

pub async fn stale_reports_change_nothing(h: &Harness) {
    let id = h.enqueue("j", json!([])).await;
    let claimed = h.claim_id("w", "j", &id).await;
    let before = h.state().await;
    let wrong = Lease {
        job_id: id.clone(),
        handoff_id: "not-the-lease".into(),
    };
    let missing = Lease {
        job_id: "no-such-job".into(),
        handoff_id: lease(&claimed).handoff_id,
    };
    for bad in [&wrong, &missing] {
        for outcome in [
            Outcome::Completed,
            Outcome::failed("x"),
            Outcome::Reschedule { delay_ms: 5 },
        ] {
            assert!(!h.report_lease(bad, outcome).await);
        }
    }
    h.assert_unchanged(&before, "reports under foreign leases")
        .await;
    assert!(h.report(&claimed, Outcome::Completed).await);
    let done = h.state().await;
    for outcome in [
        Outcome::Completed,
        Outcome::failed("late"),
        Outcome::ReturnToQueue,
    ] {
        assert!(!h.report(&claimed, outcome).await, "a second report loses");
    }
    let results = h
        .store
        .report_batch(vec![(lease(&claimed), Outcome::Completed)])
        .await
        .unwrap();
    assert_eq!(results, [false]);
    h.assert_unchanged(&done, "late reports").await;
}

pub async fn report_batch_fences_each(h: &Harness) {
    let a = h.enqueue("j", json!([1])).await;
    let b = h.enqueue("j", json!([2])).await;
    let claimed = h.claim("w", &["j"], 2).await;
    assert_eq!(claimed.len(), 2);
    let stale = Lease {
        job_id: b.clone(),
        handoff_id: "stale".into(),
    };
    let reports = vec![
        (lease(&claimed[0]), Outcome::Completed),
        (stale, Outcome::Completed),
    ];
    assert_eq!(h.store.report_batch(reports).await.unwrap(), [true, false]);
    assert_eq!(h.get(&a).await.status, JobStatus::Completed);
    assert_eq!(h.get(&b).await.status, JobStatus::HandedOff);
}

/// `report_and_claim` applies its reports first (fenced, each on its own) and
/// then claims in the same mutation: a reservation the reports release is free
/// for the claim, and the revision moves once.
pub async fn report_and_claim_reports_first(h: &Harness) {
    let capped = |i: i64| job("j", json!([i]), EnqueueOptions::new().concurrency("k", 1));
    h.insert(capped(1).with_id("a")).await;
    h.advance(1);
    h.insert(capped(2).with_id("b")).await;
    h.advance(1);
    h.insert(capped(3).with_id("c")).await;
    let held = h.claim("w", &["j"], 3).await;
    assert_eq!(ids(&held), ["a"], "cap 1: only a");
    let stale = Lease {
        job_id: "b".into(),
        handoff_id: "stale".into(),
    };
    let before = h.revision().await;
    let done = h
        .store
        .report_and_claim(
            vec![
                (lease(&held[0]), Outcome::Completed),
                (stale, Outcome::Completed),
            ],
            &claim_req("w", &["j"], 2),
        )
        .await
        .unwrap();
    assert_eq!(done.reported, [true, false]);
    assert_eq!(
        ids(&done.claimed),
        ["b"],
        "a's reservation was released first"
    );
    assert_eq!(h.revision().await, before + 1, "one mutation");
    assert_eq!(h.get("a").await.status, JobStatus::Completed);
    let b = h.get("b").await;
    assert_eq!(
        (b.status, b.worker_id.as_deref()),
        (JobStatus::HandedOff, Some("w"))
    );
    assert_eq!(h.get("c").await.status, JobStatus::Queued);
}

/// A claim never starts a job whose expiry has passed: it ends `cancelled`
/// (`lastError` `expired: not started by <time>`) without taking a slot, its dependents are settled as
/// on any cancel, the counts follow exactly, and a job not yet expired is
/// claimed as usual.
pub async fn expired_jobs_are_cancelled_not_claimed(h: &Harness) {
    let t = h.now();
    let at = EnqueueOptions {
        expires_at_ms: Some(t + 10),
        ..EnqueueOptions::new()
    };
    let gone = h.insert(job("j", json!([1]), at).with_id("gone")).await;
    let ttl = EnqueueOptions::new().expires_in(Duration::from_millis(11));
    let later = h.insert(job("j", json!([2]), ttl).with_id("later")).await;
    let waits = EnqueueOptions::new().after(gone.as_str());
    let after = h.insert(job("k", json!([]), waits).with_id("after")).await;
    assert_eq!(h.get(&gone).await.expires_at_ms, Some(t + 10));
    assert_eq!(h.get(&later).await.expires_at_ms, Some(t + 11));
    h.advance(10);
    let before = h.snapshot().await;
    let claimed = h.claim("w", &["j"], 1).await;
    assert_eq!(ids(&claimed), [later], "the expired job takes no slot");
    let row = h.get(&gone).await;
    assert_eq!((row.status, row.attempts), (JobStatus::Cancelled, 0));
    assert_eq!(row.cancelled_at_ms, Some(h.now()));
    let reason = format!("{}: not started by {}", Job::EXPIRED, utc_time(t + 10));
    assert_eq!(row.last_error.as_deref(), Some(reason.as_str()));
    assert_eq!(row.cancel_reason, Some(CancelReason::Expired));
    assert_eq!(row.worker_id, None);
    let dependent = h.get(&after).await;
    assert_eq!(dependent.status, JobStatus::Cancelled);
    assert_eq!(dependent.cancel_reason, Some(CancelReason::Dependency));
    let now = h.snapshot().await;
    assert_eq!(now.revision, before.revision + 1, "one mutation");
    let moved = |s: JobStatus| now.counts.get(s) - before.counts.get(s);
    assert_eq!(
        (moved(JobStatus::Queued), moved(JobStatus::HandedOff)),
        (-2, 1)
    );
    assert_eq!(
        (moved(JobStatus::Cancelled), moved(JobStatus::Pending)),
        (2, -1)
    );
    let jobs = h.jobs().await;
    for status in JobStatus::ALL {
        let rows = jobs.iter().filter(|j| j.status == status).count() as i64;
        assert_eq!(now.counts.get(status), rows, "{status} count");
    }
    assert!(h.claim("w", &["j", "k"], 10).await.is_empty());
}

/// A job that expires while it waits to retry is never started again: the
/// claim that reaches it after its expiry cancels it.
pub async fn a_job_waiting_to_retry_expires(h: &Harness) {
    let ttl = EnqueueOptions::new()
        .max_retries(3)
        .expires_in(Duration::from_millis(50));
    let id = h.insert(job("j", json!([]), ttl).with_id("retrying")).await;
    let first = h.claim("w", &["j"], 1).await.remove(0);
    let failed = Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: Some(100),
        discard: false,
    };
    assert!(h.report(&first, failed).await);
    assert_eq!(
        h.get(&id).await.status,
        JobStatus::Queued,
        "waiting to retry"
    );
    h.advance(100);
    assert!(
        h.claim("w", &["j"], 1).await.is_empty(),
        "expired, not retried"
    );
    let row = h.get(&id).await;
    assert_eq!((row.status, row.attempts), (JobStatus::Cancelled, 1));
    assert_eq!(row.cancel_reason, Some(CancelReason::Expired));
    assert!(row.last_error.unwrap().starts_with(Job::EXPIRED));
    assert_eq!(
        row.errors.len(),
        1,
        "the failed attempt stays in the history"
    );
}

/// The recovery pass's sweep (`WorkerStore::expire_due`): expired queued
/// jobs that no claim reaches (a paused queue's, a name no worker handles)
/// end `cancelled` as a claim would cancel them, oldest expiry first and at
/// most `limit` a call, their schedule keys given back and the counts exact;
/// unexpired, running and unlimited jobs stay; nothing due writes nothing.
pub async fn the_recovery_pass_cancels_expired_jobs_no_claim_reaches(h: &Harness) {
    let t = h.now();
    let expiring = |ms: i64| EnqueueOptions {
        expires_at_ms: Some(t + ms),
        ..EnqueueOptions::new()
    };
    let paused = QueueName::new("paused").unwrap();
    h.store.pause_queue(&paused).await.unwrap();
    let in_paused = EnqueueOptions {
        queue: Some("paused".into()),
        ..expiring(5)
    };
    let a = h.insert(job("j", json!([1]), in_paused).with_id("a")).await;
    let b = h
        .insert(job("nobody", json!([]), expiring(3)).with_id("b"))
        .await;
    let keyed = h
        .store
        .replace_scheduled(
            &key("k"),
            job("nobody", json!([2]), expiring(4)),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap()
        .job_id;
    let later = h
        .insert(job("nobody", json!([3]), expiring(50)).with_id("later"))
        .await;
    let running = h
        .insert(job("r", json!([]), expiring(5)).with_id("running"))
        .await;
    let plain = h
        .insert(job("nobody", json!([4]), EnqueueOptions::new()).with_id("plain"))
        .await;
    assert_eq!(
        ids(&h.claim("w", &["r"], 1).await),
        std::slice::from_ref(&running)
    );

    let before = h.state().await;
    assert!(h.store.expire_due(10).await.unwrap().is_empty());
    h.assert_unchanged(&before, "expire_due before any expiry")
        .await;

    h.advance(10);
    let before = h.snapshot().await;
    let first = h.store.expire_due(2).await.unwrap();
    let mut oldest = vec![b.clone(), keyed.clone()];
    oldest.sort();
    assert_eq!(first, oldest, "oldest expiry first, at most the limit");
    assert_eq!(
        h.store.expire_due(10).await.unwrap(),
        std::slice::from_ref(&a)
    );
    for id in [&a, &b, &keyed] {
        let row = h.get(id).await;
        assert_eq!(row.status, JobStatus::Cancelled, "{id}");
        assert!(row.last_error.unwrap().starts_with(Job::EXPIRED));
    }
    for (id, status) in [
        (&later, JobStatus::Queued),
        (&running, JobStatus::HandedOff),
        (&plain, JobStatus::Queued),
    ] {
        assert_eq!(h.get(id).await.status, status, "{id}");
    }
    let now = h.snapshot().await;
    let moved = |s: JobStatus| now.counts.get(s) - before.counts.get(s);
    assert_eq!(
        (moved(JobStatus::Queued), moved(JobStatus::Cancelled)),
        (-3, 3)
    );
    let replaced = h
        .store
        .replace_scheduled(
            &key("k"),
            job("nobody", json!([5]), EnqueueOptions::new()),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_eq!(
        replaced.previous_job_id, None,
        "the expired owner gave its key back"
    );
    assert!(
        h.store.expire_due(10).await.unwrap().is_empty(),
        "idempotent"
    );
}
