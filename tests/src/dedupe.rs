//! `docs/idempotency.md` `deduplicateWhileQueued`: transient dedupe against the earliest
//! identical (jobName, canonical args, queue) job that is still `queued` and due no
//! later than the new request; anything else enqueues normally.

use duraq_core::{EnqueueOptions, EnqueueOutcome, JobStatus};
use serde_json::json;

use crate::harness::{job, Harness, WireOptions};

fn dedupe() -> EnqueueOptions {
    EnqueueOptions::new().deduplicate_while_queued()
}

pub async fn returns_earliest_queued(h: &Harness) {
    let t = h.now();
    h.insert(
        job(
            "j",
            json!([1]),
            EnqueueOptions::new().scheduled_at_ms(t + 5),
        )
        .with_id("late"),
    )
    .await;
    h.insert(job("j", json!([1]), EnqueueOptions::new().scheduled_at_ms(t)).with_id("z-early"))
        .await;
    h.insert(job("j", json!([1]), EnqueueOptions::new().scheduled_at_ms(t)).with_id("y-early"))
        .await;
    h.advance(10);
    let before = h.state().await;
    let out = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert_eq!(
        out,
        EnqueueOutcome::Deduplicated("y-early".into()),
        "ties broken by id"
    );
    h.assert_unchanged(&before, "a deduplicated enqueue").await;
}

pub async fn earlier_created_wins_at_same_time(h: &Harness) {
    let at = h.now() + 1_000;
    h.insert(job("j", json!([1]), EnqueueOptions::new().scheduled_at_ms(at)).with_id("b-first"))
        .await;
    h.advance(1);
    h.insert(job("j", json!([1]), EnqueueOptions::new().scheduled_at_ms(at)).with_id("a-second"))
        .await;
    let out = h
        .store
        .enqueue(job("j", json!([1]), dedupe().scheduled_at_ms(at)))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated("b-first".into()));
}

pub async fn canonical_args_match(h: &Harness) {
    let id = h
        .insert(job(
            "j",
            json!({"b": [1, {"y": 2, "x": 1}], "a": null}),
            EnqueueOptions::new(),
        ))
        .await;
    let out = h
        .store
        .enqueue(job(
            "j",
            json!({"a": null, "b": [1, {"x": 1, "y": 2}]}),
            dedupe(),
        ))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated(id));
}

pub async fn other_options_do_not_matter(h: &Harness) {
    let id = h
        .insert(job("j", json!([1]), EnqueueOptions::new().max_retries(1)))
        .await;
    let opts = dedupe().max_retries(7).timeout_ms(9).concurrency("c", 1);
    let out = h.store.enqueue(job("j", json!([1]), opts)).await.unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated(id));
}

pub async fn only_identical_name_args_queue(h: &Harness) {
    h.insert(job("j", json!([1]), EnqueueOptions::new().queue("q")))
        .await;
    for (name, args, queue) in [
        ("k", json!([1]), "q"),
        ("j", json!([2]), "q"),
        ("j", json!([1]), "r"),
        ("j", json!(1), "q"),
    ] {
        let out = h
            .store
            .enqueue(job(name, args.clone(), dedupe().queue(queue)))
            .await
            .unwrap();
        assert!(
            matches!(out, EnqueueOutcome::Created(_)),
            "{name} {args} {queue}: {out:?}"
        );
    }
    let plain = h
        .store
        .enqueue(job("j", json!([1]), EnqueueOptions::new().queue("q")))
        .await
        .unwrap();
    assert!(
        matches!(plain, EnqueueOutcome::Created(_)),
        "without the flag nothing is deduplicated"
    );
}

pub async fn later_scheduled_is_not_matched(h: &Harness) {
    let t = h.now();
    let future = h
        .insert(job(
            "j",
            json!([1]),
            EnqueueOptions::new().scheduled_at_ms(t + 3_600_000),
        ))
        .await;
    let now = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert!(
        matches!(now, EnqueueOutcome::Created(ref id) if *id != future),
        "{now:?}"
    );
    // A request due later than (or as late as) the existing job matches it.
    h.store.cancel_job(now.job_id()).await.unwrap();
    let later = h
        .store
        .enqueue(job(
            "j",
            json!([1]),
            dedupe().scheduled_at_ms(t + 7_200_000),
        ))
        .await
        .unwrap();
    assert_eq!(later, EnqueueOutcome::Deduplicated(future.clone()));
    let same = h
        .store
        .enqueue(job(
            "j",
            json!([1]),
            dedupe().scheduled_at_ms(t + 3_600_000),
        ))
        .await
        .unwrap();
    assert_eq!(same, EnqueueOutcome::Deduplicated(future));
}

pub async fn not_handed_off_or_terminal(h: &Harness) {
    let running = h.insert(job("j", json!([1]), EnqueueOptions::new())).await;
    h.drive_to(&running, "j", JobStatus::HandedOff).await;
    let out = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert!(
        matches!(out, EnqueueOutcome::Created(ref id) if *id != running),
        "{out:?}"
    );
    h.store.cancel_job(out.job_id()).await.unwrap();
    let again = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert!(
        matches!(again, EnqueueOutcome::Created(_)),
        "cancelled jobs are not matched: {again:?}"
    );
    let third = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert_eq!(
        third,
        EnqueueOutcome::Deduplicated(again.job_id().to_owned())
    );
    assert_eq!(h.snapshot().await.counts.queued, 1);
}

/// Jobs enqueued before their (name, queue) ever saw a dedupe request, and out
/// of the queue at that moment (running, failed, cancelled), are still matched
/// once they are queued again: dedupe is a property of the queued set, not of
/// how or when a job was enqueued.
pub async fn jobs_back_in_the_queue_are_matched(h: &Harness) {
    let running = h.insert(job("j", json!([1]), EnqueueOptions::new())).await;
    h.drive_to(&running, "j", JobStatus::HandedOff).await;
    let failed = h.insert(job("j", json!([2]), EnqueueOptions::new())).await;
    h.drive_to(&failed, "j", JobStatus::Failed).await;
    let cancelled = h.insert(job("j", json!([3]), EnqueueOptions::new())).await;
    h.drive_to(&cancelled, "j", JobStatus::Cancelled).await;
    // The first dedupe request of the scope matches nothing and creates a job.
    let other = h
        .store
        .enqueue(job("j", json!([4]), dedupe()))
        .await
        .unwrap();
    assert!(matches!(other, EnqueueOutcome::Created(_)), "{other:?}");

    h.store.retry_job(&failed).await.unwrap();
    h.store.retry_job(&cancelled).await.unwrap();
    h.advance(60_001);
    let recovered = h.store.recover_stale(60_000).await.unwrap();
    assert!(recovered.contains(&running), "{recovered:?}");
    h.advance(3_600_000 * 24); // past any retry backoff
    for (args, id) in [
        (json!([1]), &running),
        (json!([2]), &failed),
        (json!([3]), &cancelled),
    ] {
        let out = h
            .store
            .enqueue(job("j", args.clone(), dedupe()))
            .await
            .unwrap();
        assert_eq!(out, EnqueueOutcome::Deduplicated(id.clone()), "{args}");
    }
}

/// Inside one batch, a dedupe request sees the jobs enqueued before it, and the
/// jobs enqueued after it are found by later requests.
pub async fn a_batch_dedupes_against_its_own_jobs(h: &Harness) {
    let plain = |id: &str| job("j", json!([1]), EnqueueOptions::new()).with_id(id);
    let out = h
        .store
        .enqueue_batch(vec![plain("a"), job("j", json!([1]), dedupe()), plain("c")])
        .await
        .unwrap();
    assert_eq!(
        out,
        [
            EnqueueOutcome::Created("a".into()),
            EnqueueOutcome::Deduplicated("a".into()),
            EnqueueOutcome::Created("c".into()),
        ]
    );
    h.claim_id("w", "j", "a").await;
    let later = h
        .store
        .enqueue(job("j", json!([1]), dedupe()))
        .await
        .unwrap();
    assert_eq!(later, EnqueueOutcome::Deduplicated("c".into()));
}

/// A batch of plain jobs (no option of its own to check first) enqueued after
/// its scope has seen a dedupe request is matched by later requests like any
/// job of the scope.
pub async fn plain_batch_jobs_are_matched_in_a_seen_scope(h: &Harness) {
    let q = |n: i64| job("j", json!({"n": n}), dedupe().queue("q"));
    let first = h.store.enqueue(q(0)).await.unwrap();
    assert!(matches!(first, EnqueueOutcome::Created(_)), "{first:?}");
    let batch: Vec<_> = (1..=300)
        .map(|n| {
            job("j", json!({"n": n}), EnqueueOptions::new().queue("q")).with_id(format!("q-{n}"))
        })
        .collect();
    assert_eq!(h.store.enqueue_batch(batch).await.unwrap().len(), 300);
    for n in [1, 256, 300] {
        let again = h.store.enqueue(q(n)).await.unwrap();
        assert_eq!(again, EnqueueOutcome::Deduplicated(format!("q-{n}")), "{n}");
    }
    let new = h.store.enqueue(q(301)).await.unwrap();
    assert!(matches!(new, EnqueueOutcome::Created(_)), "{new:?}");
}

/// Jobs enqueued before their scope's first dedupe request, in batches as well as
/// one by one, are matched once it arrives: the store keys them then, from their
/// stored args (canonical whatever the key order they were enqueued with), in
/// more than one round of rows.
pub async fn jobs_before_the_first_request_are_matched(h: &Harness) {
    let args = |n: i64| json!({"z": [n, {"b": 1, "a": 2}], "n": n});
    let same = |n: i64| json!({"n": n, "z": [n, {"a": 2, "b": 1}]});
    let batch: Vec<_> = (0..600)
        .map(|n| job("j", args(n), EnqueueOptions::new()).with_id(format!("b-{n:03}")))
        .collect();
    assert_eq!(h.store.enqueue_batch(batch).await.unwrap().len(), 600);
    let single = h.insert(job("j", args(600), EnqueueOptions::new())).await;
    let before = h.state().await;
    for n in [0, 255, 256, 599] {
        let out = h.store.enqueue(job("j", same(n), dedupe())).await.unwrap();
        assert_eq!(
            out,
            EnqueueOutcome::Deduplicated(format!("b-{n:03}")),
            "{n}"
        );
    }
    let out = h
        .store
        .enqueue(job("j", same(600), dedupe()))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated(single));
    h.assert_unchanged(&before, "deduplicated enqueues").await;
    let new = h
        .store
        .enqueue(job("j", same(601), dedupe()))
        .await
        .unwrap();
    assert!(matches!(new, EnqueueOutcome::Created(_)), "{new:?}");
}
