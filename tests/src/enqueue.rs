//! `docs/jobs.md` enqueue paths: plain and scheduled enqueue, registered concurrency
//! caps, `enqueue_batch` (all or nothing, one mutation, later jobs see earlier
//! ones), the worker timer query, the work signal and `search_jobs`.

use std::time::Duration;

use duraq_core::inspect::{JobCursor, JobFilter};
use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, NewOperation};
use serde_json::json;

use crate::harness::{expect_conflict, expect_invalid, job, Harness, WireOptions};

pub async fn enqueue_returns_created_and_persists(h: &Harness) {
    let new = job("j", json!(["x"]), EnqueueOptions::new()).with_id("job-1");
    assert_eq!(
        h.store.enqueue(new).await.unwrap(),
        EnqueueOutcome::Created("job-1".into())
    );
    assert_eq!(h.get("job-1").await.args, json!(["x"]));
    assert_eq!(h.store.get_job("missing").await.unwrap(), None);
    let snap = h.snapshot().await;
    assert_eq!((snap.counts.queued, snap.counts.all, snap.total), (1, 1, 1));
    // An id in use is refused, alone or in a batch, and nothing of the request
    // stays behind (not even the cap it would have registered).
    let again = || {
        job(
            "j",
            json!(["y"]),
            EnqueueOptions::new().concurrency("cap", 2),
        )
        .with_id("job-1")
    };
    expect_conflict(
        h.store.enqueue(again()).await,
        ErrorCode::IdempotencyConflict,
    );
    let plain = job("j", json!(["y"]), EnqueueOptions::new()).with_id("job-1");
    expect_conflict(h.store.enqueue(plain).await, ErrorCode::IdempotencyConflict);
    let fresh = job("j", json!(["z"]), EnqueueOptions::new());
    expect_conflict(
        h.store.enqueue_batch(vec![fresh, again()]).await,
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(h.get("job-1").await.args, json!(["x"]));
    assert_eq!(h.snapshot().await.total, 1);
    let other_cap = job("j", json!([]), EnqueueOptions::new().concurrency("cap", 3));
    assert!(
        h.store.enqueue(other_cap).await.is_ok(),
        "no cap was registered"
    );
}

/// A finished job keeps its id: enqueueing that id again is refused on every
/// path (one job, a keyed one, a job that waits, a small batch and one large
/// enough for a store's bulk path), and nothing is written. PostgreSQL keeps
/// finished jobs apart from live ones, so this is checked across the two.
pub async fn an_id_a_finished_job_holds_is_refused(h: &Harness) {
    for (id, status) in [
        ("done-c", JobStatus::Completed),
        ("done-f", JobStatus::Failed),
    ] {
        h.insert(job("j", json!([]), EnqueueOptions::new()).with_id(id))
            .await;
        h.drive_to(id, "j", status).await;
    }
    let dep = h.enqueue("j", json!(["dep"])).await;
    let before = h.state().await;
    let again = |id: &str, options: EnqueueOptions| job("j", json!([id]), options).with_id(id);
    for id in ["done-c", "done-f"] {
        expect_conflict(
            h.store.enqueue(again(id, EnqueueOptions::new())).await,
            ErrorCode::IdempotencyConflict,
        );
        let keyed = EnqueueOptions::new().idempotency_key(format!("k-{id}"));
        expect_conflict(
            h.store.enqueue(again(id, keyed)).await,
            ErrorCode::IdempotencyConflict,
        );
        let waits = EnqueueOptions::new().after(dep.as_str());
        let other = job("j", json!(["w"]), EnqueueOptions::new().after(dep.as_str()));
        expect_conflict(
            h.store.enqueue_batch(vec![other, again(id, waits)]).await,
            ErrorCode::IdempotencyConflict,
        );
        let fresh = job("j", json!(["z"]), EnqueueOptions::new());
        expect_conflict(
            h.store
                .enqueue_batch(vec![fresh, again(id, EnqueueOptions::new())])
                .await,
            ErrorCode::IdempotencyConflict,
        );
        let mut large: Vec<_> = (0..400)
            .map(|i| job("j", json!([i]), EnqueueOptions::new()))
            .collect();
        large.push(again(id, EnqueueOptions::new()));
        expect_conflict(
            h.store.enqueue_batch(large).await,
            ErrorCode::IdempotencyConflict,
        );
    }
    h.assert_unchanged(&before, "an id a finished job holds")
        .await;
}

pub async fn future_job_waits_until_due(h: &Harness) {
    let at = h.now() + 10_000;
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().scheduled_at_ms(at))
        .await;
    assert!(h.claim("w", &["j"], 10).await.is_empty());
    h.advance(9_999);
    assert!(h.claim("w", &["j"], 10).await.is_empty());
    h.advance(1);
    let claimed = h.claim("w", &["j"], 10).await;
    assert_eq!(
        claimed.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [id.job_id()]
    );
}

pub async fn concurrency_cap_conflict(h: &Harness) {
    h.enqueue_with(
        "j",
        json!([1]),
        EnqueueOptions::new().concurrency("tenant", 2),
    )
    .await;
    h.enqueue_with(
        "other",
        json!([2]),
        EnqueueOptions::new().concurrency("tenant", 2),
    )
    .await;
    let before = h.state().await;
    let bad = job(
        "j",
        json!([3]),
        EnqueueOptions::new().concurrency("tenant", 3),
    );
    expect_conflict(
        h.store.enqueue(bad.clone()).await,
        ErrorCode::ConcurrencyCapConflict,
    );
    expect_conflict(
        h.store.enqueue_batch(vec![bad.clone()]).await,
        ErrorCode::ConcurrencyCapConflict,
    );
    let k = crate::harness::key("cap-key");
    expect_conflict(
        h.store
            .replace_scheduled(&k, bad, duraq_core::RunningOwner::KeepRunning)
            .await,
        ErrorCode::ConcurrencyCapConflict,
    );
    h.assert_unchanged(&before, "concurrency-cap-conflict")
        .await;
    // The key keeps its first cap even once its jobs are gone.
    for j in h.jobs().await {
        h.store.cancel_job(&j.id).await.unwrap();
    }
    let again = job(
        "j",
        json!([4]),
        EnqueueOptions::new().concurrency("tenant", 1),
    );
    expect_conflict(
        h.store.enqueue(again).await,
        ErrorCode::ConcurrencyCapConflict,
    );
}

/// A job named with every key: cap `cap`, `rate` starts an hour, operation
/// `op`, idempotency key `idem`, waiting for job `after`.
fn keyed(idem: &str, args: i64, cap: u32, rate: u32, op: &str, after: Option<&str>) -> NewJob {
    let mut opts = EnqueueOptions::new()
        .idempotency_key(idem)
        .concurrency("cap", cap)
        .rate_limit("rate", rate, Duration::from_secs(3_600));
    if let Some(after) = after {
        opts = opts.after(after);
    }
    let op = NewOperation {
        key: op.into(),
        data: json!({}),
    };
    job("j", json!([args]), opts).with_operation(op).unwrap()
}

/// The first failing check is the answer (cap, rate limit, operation key,
/// then the dependencies), and a refused enqueue keeps nothing it wrote on
/// the way: its scope, its keys' first registrations, its operation.
pub async fn the_first_failing_check_wins_and_keeps_nothing(h: &Harness) {
    let first = h
        .store
        .enqueue(keyed("first", 0, 2, 5, "taken", None))
        .await;
    assert!(matches!(first.unwrap(), EnqueueOutcome::Created(_)));
    let before = h.state().await;
    let missing = Some("0193a0b0-0000-7000-8000-000000000001");
    let refused = |cap, rate, op| h.store.enqueue(keyed("second", 1, cap, rate, op, missing));
    expect_conflict(
        refused(3, 6, "taken").await,
        ErrorCode::ConcurrencyCapConflict,
    );
    expect_conflict(refused(2, 6, "taken").await, ErrorCode::RateLimitConflict);
    expect_conflict(refused(2, 5, "taken").await, ErrorCode::IdempotencyConflict);
    expect_invalid(refused(2, 5, "free").await, ErrorCode::DependencyNotFound);
    h.assert_unchanged(&before, "refused enqueues").await;

    // Fresh keys, refused only by the missing dependency: none is kept.
    let fresh = |cap: u32, after: Option<&str>| {
        let mut opts = EnqueueOptions::new()
            .idempotency_key("fresh")
            .concurrency("fresh-cap", cap)
            .rate_limit("fresh-rate", cap, Duration::from_secs(60));
        if let Some(after) = after {
            opts = opts.after(after);
        }
        let op = NewOperation {
            key: "fresh-op".into(),
            data: json!({}),
        };
        job("k", json!([cap]), opts).with_operation(op).unwrap()
    };
    expect_invalid(
        h.store.enqueue(fresh(1, missing)).await,
        ErrorCode::DependencyNotFound,
    );
    h.assert_unchanged(&before, "a refused enqueue with fresh keys")
        .await;
    // Another request of the scope, with other limits for the keys and the
    // same operation key, is a first enqueue of each.
    let created = h.store.enqueue(fresh(2, None)).await.unwrap();
    let EnqueueOutcome::Created(id) = created else {
        panic!("expected a created job, got {created:?}");
    };
    let op = h.store.get_operation("fresh-op").await.unwrap();
    assert_eq!(op.map(|op| op.job_id), Some(id));
}

pub async fn batch_is_one_mutation(h: &Harness) {
    let mut deltas = h.store.subscribe_counts();
    let r0 = h.revision().await;
    let jobs = (0..3)
        .map(|i| job("j", json!([i]), EnqueueOptions::new()).with_id(format!("b{i}")))
        .collect();
    let out = h.store.enqueue_batch(jobs).await.unwrap();
    let ids: Vec<_> = out.iter().map(|o| o.job_id().to_owned()).collect();
    assert_eq!(ids, ["b0", "b1", "b2"]);
    assert!(out.iter().all(|o| matches!(o, EnqueueOutcome::Created(_))));
    let snap = h.snapshot().await;
    assert_eq!((snap.revision, snap.counts.queued), (r0 + 1, 3));
    let delta = crate::harness::next_delta(&mut deltas, "enqueue_batch").await;
    assert_eq!(
        (delta.revision, delta.deltas.queued, delta.deltas.all),
        (r0 + 1, 3, 3)
    );
    assert!(deltas.try_recv().is_err(), "exactly one delta per batch");
    let before = h.state().await;
    assert!(h.store.enqueue_batch(vec![]).await.unwrap().is_empty());
    h.assert_unchanged(&before, "empty batch").await;
}

pub async fn batch_sees_earlier_jobs(h: &Harness) {
    let a = job("j", json!([1]), EnqueueOptions::new().idempotency_key("k")).with_id("a");
    let b = job("j", json!([1]), EnqueueOptions::new().idempotency_key("k")).with_id("b");
    let c = job("d", json!([1]), EnqueueOptions::new()).with_id("c");
    let d = job(
        "d",
        json!([1]),
        EnqueueOptions::new().deduplicate_while_queued(),
    )
    .with_id("d");
    let out = h.store.enqueue_batch(vec![a, b, c, d]).await.unwrap();
    assert_eq!(
        out,
        [
            EnqueueOutcome::Created("a".into()),
            EnqueueOutcome::Replayed("a".into()),
            EnqueueOutcome::Created("c".into()),
            EnqueueOutcome::Deduplicated("c".into()),
        ]
    );
    assert_eq!(h.snapshot().await.counts.queued, 2);
}

pub async fn batch_is_all_or_nothing(h: &Harness) {
    h.enqueue_with("j", json!([1]), EnqueueOptions::new().idempotency_key("k"))
        .await;
    h.enqueue_with("j", json!([1]), EnqueueOptions::new().concurrency("c", 1))
        .await;
    let before = h.state().await;
    let ok = || job("j", json!(["fresh"]), EnqueueOptions::new());
    let idem = job("j", json!([2]), EnqueueOptions::new().idempotency_key("k"));
    let batch = vec![ok(), ok(), idem];
    expect_conflict(
        h.store.enqueue_batch(batch).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "batch with an idempotency conflict")
        .await;
    let cap = job("j", json!([3]), EnqueueOptions::new().concurrency("c", 2));
    expect_conflict(
        h.store.enqueue_batch(vec![ok(), cap]).await,
        ErrorCode::ConcurrencyCapConflict,
    );
    // A conflict between two jobs of the same batch also rolls back the first.
    let x = job("j", json!([4]), EnqueueOptions::new().concurrency("new", 1));
    let y = job("j", json!([5]), EnqueueOptions::new().concurrency("new", 2));
    expect_conflict(
        h.store.enqueue_batch(vec![x, y]).await,
        ErrorCode::ConcurrencyCapConflict,
    );
    let z = job("j", json!([6]), EnqueueOptions::new().idempotency_key("z"));
    let z2 = job("j", json!([7]), EnqueueOptions::new().idempotency_key("z"));
    expect_conflict(
        h.store.enqueue_batch(vec![z, z2]).await,
        ErrorCode::IdempotencyConflict,
    );
    h.assert_unchanged(&before, "failed batches").await;
    // Nothing of the failed batches was registered: the cap of "new" is still free.
    h.enqueue_with("j", json!([8]), EnqueueOptions::new().concurrency("new", 2))
        .await;
    h.enqueue_with("j", json!([9]), EnqueueOptions::new().idempotency_key("z"))
        .await;
}

pub async fn next_scheduled_at_for_timer(h: &Harness) {
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        h.store
            .next_scheduled_at(&names(&["a"]), None)
            .await
            .unwrap(),
        None
    );
    let t = h.now();
    h.enqueue_with(
        "a",
        json!([]),
        EnqueueOptions::new().queue("q1").scheduled_at_ms(t + 5_000),
    )
    .await;
    h.enqueue_with(
        "b",
        json!([]),
        EnqueueOptions::new().queue("q2").scheduled_at_ms(t + 1_000),
    )
    .await;
    let running = h
        .enqueue_with("c", json!([]), EnqueueOptions::new().queue("q1"))
        .await;
    h.claim_id("w", "c", running.job_id()).await;
    let next = |n: Vec<String>, q: Option<Vec<String>>| {
        let store = h.store.clone();
        async move { store.next_scheduled_at(&n, q.as_deref()).await.unwrap() }
    };
    assert_eq!(next(names(&["a"]), None).await, Some(t + 5_000));
    assert_eq!(next(names(&["a", "b", "c"]), None).await, Some(t + 1_000));
    assert_eq!(
        next(names(&["a", "b"]), Some(names(&["q1"]))).await,
        Some(t + 5_000)
    );
    assert_eq!(
        next(names(&["c"]), None).await,
        None,
        "handed-off jobs are not waited for"
    );
    assert_eq!(next(names(&["b"]), Some(names(&["q1"]))).await, None);
}

pub async fn work_signal_moves(h: &Harness) {
    let mut rx = h.store.work_signal();
    rx.borrow_and_update();
    let id = h.enqueue("j", json!([])).await;
    assert!(rx.has_changed().unwrap(), "enqueue signals work");
    rx.borrow_and_update();
    let k = crate::harness::key("sig");
    let at = h.now() + 60_000;
    let keyed = job("j", json!([]), EnqueueOptions::new().scheduled_at_ms(at));
    h.store
        .replace_scheduled(&k, keyed, duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    rx.borrow_and_update();
    h.store.wake_scheduled(&k).await.unwrap();
    assert!(rx.has_changed().unwrap(), "wake signals work");
    let claimed = h.claim_id("w", "j", &id).await;
    rx.borrow_and_update();
    assert!(h.report(&claimed, duraq_core::Outcome::failed("x")).await);
    assert!(
        rx.has_changed().unwrap(),
        "a failed attempt back in the queue signals work"
    );
}

pub async fn list_jobs_filters_and_order(h: &Harness) {
    for (id, name, queue) in [("a", "x", "q1"), ("c", "y", "q1"), ("b", "x", "q2")] {
        h.insert(job(name, json!([id]), EnqueueOptions::new().queue(queue)).with_id(id))
            .await;
    }
    h.advance(1);
    h.insert(job("x", json!([]), EnqueueOptions::new()).with_id("0-newest"))
        .await;
    h.store.cancel_job("c").await.unwrap();
    let list = |f: JobFilter| {
        let store = h.store.clone();
        async move {
            store
                .search_jobs(&f)
                .await
                .unwrap()
                .jobs
                .into_iter()
                .map(|j| j.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list(JobFilter::default()).await,
        ["0-newest", "c", "b", "a"]
    );
    let limit = JobFilter {
        limit: Some(2),
        ..JobFilter::default()
    };
    assert_eq!(list(limit).await, ["0-newest", "c"]);
    let status = JobFilter {
        statuses: vec![JobStatus::Cancelled],
        ..JobFilter::default()
    };
    assert_eq!(list(status).await, ["c"]);
    let name = JobFilter {
        job_name: Some("x".into()),
        ..JobFilter::default()
    };
    assert_eq!(list(name).await, ["0-newest", "b", "a"]);
    let queue = JobFilter {
        queue: Some("q1".into()),
        job_name: Some("x".into()),
        ..JobFilter::default()
    };
    assert_eq!(list(queue).await, ["a"]);
    let health = h.store.health().await.unwrap();
    assert!(
        ["memory", "sqlite", "postgres"].contains(&health.backend.as_str()),
        "{health:?}"
    );
}

/// Keyset paging: each page starts after the previous page's last job, and jobs
/// added meanwhile (newer) never shift later pages; the schedule-key filter
/// combines with the others.
pub async fn list_jobs_pages_by_cursor_and_key(h: &Harness) {
    // Two jobs share a createdAtMs, so the id breaks the tie.
    for id in ["p1", "p2", "p3"] {
        h.insert(job("x", json!([id]), EnqueueOptions::new()).with_id(id))
            .await;
        if id != "p1" {
            h.advance(1);
        }
    }
    let keyed = h.replace("event:1", "x", json!([])).await.job_id;
    h.advance(1);
    let other = h.replace("event:2", "y", json!([])).await.job_id;
    let page = |after: Option<JobCursor>| {
        let store = h.store.clone();
        async move {
            store
                .search_jobs(&JobFilter {
                    after,
                    limit: Some(2),
                    ..JobFilter::default()
                })
                .await
                .unwrap()
                .jobs
        }
    };
    let first = page(None).await;
    // A job added between pages is newer: it does not move the next pages.
    h.advance(1);
    h.insert(job("x", json!([]), EnqueueOptions::new()).with_id("p9"))
        .await;
    let second = page(Some(JobCursor::after(&first[1]))).await;
    let third = page(Some(JobCursor::after(&second[1]))).await;
    let ids: Vec<&str> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|j| j.id.as_str())
        .collect();
    assert_eq!(ids, [other.as_str(), keyed.as_str(), "p3", "p2", "p1"]);
    assert!(page(Some(JobCursor::after(&third[0]))).await.is_empty());

    let by_key = h
        .store
        .search_jobs(&JobFilter {
            schedule_key: Some("event:1".into()),
            job_name: Some("x".into()),
            ..JobFilter::default()
        })
        .await
        .unwrap()
        .jobs;
    assert_eq!(by_key.len(), 1);
    assert_eq!(by_key[0].id, keyed);
}
