//! Throughput history (`docs/history.md`): each queue's monotonic outcome totals
//! move once per transition of their kind (enqueue, completion, terminal
//! failure, retry of a failed or lost attempt, orphaning, cancellation) and for
//! nothing else (reschedule, shutdown return, operator retry, prune, delete);
//! the sampler keeps the first sample of a minute, changes no count, and drops
//! samples older than seven days; the first sample ever follows a zero
//! baseline, so a fresh database counts from its first enqueue; a second
//! handle on the database sees the same history.

use duraq_core::inspect::{throughput, throughput_sum, HistoryRange, OutcomeTotals, PruneRequest};
use duraq_core::limits::{HISTORY_RETENTION_MS, MINUTE_MS};
use duraq_core::{EnqueueOptions, JobStatus, Outcome};
use serde_json::json;
use std::time::Duration;

use crate::harness::{job, Harness};

/// Enqueues a job named `name` in `queue` with `max_retries`.
async fn enqueue_in(h: &Harness, name: &str, queue: &str, max_retries: i64) -> String {
    let opts = EnqueueOptions {
        queue: Some(queue.to_owned()),
        max_retries: Some(max_retries),
        ..EnqueueOptions::new()
    };
    h.insert(job(name, json!([]), opts)).await
}

/// The totals of `queue` (zeros when the store has no row for it).
async fn totals(h: &Harness, queue: &str) -> OutcomeTotals {
    h.store
        .outcome_totals()
        .await
        .expect("outcome_totals")
        .into_iter()
        .find(|q| q.queue == queue)
        .map(|q| q.totals)
        .unwrap_or_default()
}

fn t(a: [i64; 6]) -> OutcomeTotals {
    OutcomeTotals::from_array(a)
}

pub async fn totals_move_once_per_outcome_and_queue(h: &Harness) {
    // enqueued, completed, failed, retried, cancelled, orphaned
    let a = enqueue_in(h, "ja", "a", 0).await;
    let b = enqueue_in(h, "jb", "b", 0).await;
    assert_eq!(totals(h, "a").await, t([1, 0, 0, 0, 0, 0]));
    assert_eq!(totals(h, "b").await, t([1, 0, 0, 0, 0, 0]));

    h.drive_to(&a, "ja", JobStatus::Completed).await;
    assert_eq!(totals(h, "a").await, t([1, 1, 0, 0, 0, 0]));
    assert_eq!(totals(h, "b").await, t([1, 0, 0, 0, 0, 0]), "other queue");

    h.drive_to(&b, "jb", JobStatus::Failed).await;
    assert_eq!(totals(h, "b").await, t([1, 0, 1, 0, 0, 0]));

    let c = enqueue_in(h, "jc", "a", 0).await;
    h.drive_to(&c, "jc", JobStatus::Cancelled).await;
    assert_eq!(totals(h, "a").await, t([2, 1, 0, 0, 1, 0]));

    let d = enqueue_in(h, "jd", "a", 0).await;
    h.drive_to(&d, "jd", JobStatus::Orphaned).await;
    assert_eq!(totals(h, "a").await, t([3, 1, 0, 0, 1, 1]));
}

pub async fn retries_count_failed_and_lost_attempts_only(h: &Harness) {
    let id = enqueue_in(h, "r", "q", 5).await;
    let claimed = h.claim_id("w1", "r", &id).await;
    assert!(h.report(&claimed, Outcome::failed("boom")).await);
    assert_eq!(
        totals(h, "q").await,
        t([1, 0, 0, 1, 0, 0]),
        "failed attempt"
    );

    h.advance(3_600_000);
    let claimed = h.claim_id("w1", "r", &id).await;
    assert!(
        h.report(&claimed, Outcome::Reschedule { delay_ms: 0 })
            .await
    );
    let claimed = h.claim_id("w1", "r", &id).await;
    assert!(h.report(&claimed, Outcome::ReturnToQueue).await);
    assert_eq!(
        totals(h, "q").await,
        t([1, 0, 0, 1, 0, 0]),
        "a reschedule and a shutdown return are not retries"
    );

    h.claim_id("w-dead", "r", &id).await;
    h.advance(60_001);
    let lost = h.store.recover_stale(60_000).await.expect("recover_stale");
    assert_eq!(lost, vec![id.clone()]);
    assert_eq!(h.get(&id).await.status, JobStatus::Queued);
    assert_eq!(totals(h, "q").await, t([1, 0, 0, 2, 0, 0]), "lost attempt");

    h.advance(3_600_000);
    let claimed = h.claim_id("w1", "r", &id).await;
    let discard = Outcome::Failed {
        error: "fatal".into(),
        retry_in_ms: None,
        discard: true,
    };
    assert!(h.report(&claimed, discard).await);
    assert_eq!(totals(h, "q").await, t([1, 0, 1, 2, 0, 0]), "discarded");
}

pub async fn operator_retry_and_prune_never_lower_totals(h: &Harness) {
    let id = enqueue_in(h, "p", "q", 0).await;
    h.drive_to(&id, "p", JobStatus::Failed).await;
    h.store.retry_job(&id).await.expect("retry_job");
    assert_eq!(
        totals(h, "q").await,
        t([1, 0, 1, 0, 0, 0]),
        "an operator retry is not a retry of an attempt"
    );
    h.drive_to(&id, "p", JobStatus::Completed).await;
    h.advance(10);
    let req = PruneRequest {
        completed_older_than: Some(Duration::ZERO),
        failed_older_than: Some(Duration::ZERO),
        ..PruneRequest::default()
    };
    let report = h.store.prune(&req).await.expect("prune");
    assert_eq!(report.deleted, 1);
    assert_eq!(h.snapshot().await.counts.all, 0);
    assert_eq!(totals(h, "q").await, t([1, 1, 1, 0, 0, 0]), "after prune");
}

pub async fn the_first_sample_of_a_minute_wins(h: &Harness) {
    let first = enqueue_in(h, "s", "q", 0).await;
    let before = h.state().await;
    assert!(h.store.record_history().await.expect("record_history"));
    h.assert_unchanged(&before, "sampling").await;
    enqueue_in(h, "s", "q", 0).await;
    h.advance(MINUTE_MS / 2 - 1);
    assert!(
        !h.store.record_history().await.unwrap(),
        "same minute: kept the first sample"
    );
    let samples = h.store.history(0).await.expect("history");
    assert_eq!(samples.len(), 2, "the first sample ever follows a baseline");
    assert_eq!(samples[0].totals, OutcomeTotals::default(), "the baseline");
    assert_eq!(samples[1].queue, "q");
    assert_eq!(samples[1].totals.enqueued, 1);
    assert_eq!(samples[1].minute_ms % MINUTE_MS, 0);

    h.drive_to(&first, "s", JobStatus::Completed).await;
    h.advance(MINUTE_MS);
    assert!(h.store.record_history().await.unwrap());
    let samples = h.store.history(0).await.unwrap();
    assert_eq!(samples.len(), 3, "no second baseline");
    assert_eq!(samples[2].minute_ms - samples[1].minute_ms, MINUTE_MS);
    let points = throughput(&samples, None, HistoryRange::Hour, h.now());
    let sum = throughput_sum(&points);
    assert_eq!((sum.enqueued, sum.completed, sum.failed), (2, 1, 0));
    let since = h.store.history(samples[2].minute_ms).await.unwrap();
    assert_eq!(since, samples[2..].to_vec(), "history(since) starts there");
}

pub async fn samples_older_than_seven_days_are_deleted(h: &Harness) {
    enqueue_in(h, "o", "q", 0).await;
    assert!(h.store.record_history().await.unwrap());
    h.advance(MINUTE_MS);
    assert!(h.store.record_history().await.unwrap());
    assert_eq!(
        h.store.history(0).await.unwrap().len(),
        3,
        "a baseline, two samples"
    );
    h.advance(HISTORY_RETENTION_MS);
    assert!(h.store.record_history().await.unwrap());
    let samples = h.store.history(0).await.unwrap();
    assert_eq!(
        samples.len(),
        2,
        "the oldest sample went, the 7-day-old one stays"
    );
    assert_eq!(
        samples[1].minute_ms - samples[0].minute_ms,
        HISTORY_RETENTION_MS
    );
}

pub async fn a_second_handle_sees_the_same_history(h: &Harness) {
    let id = enqueue_in(h, "x", "q", 0).await;
    assert!(h.store.record_history().await.unwrap());
    h.drive_to(&id, "x", JobStatus::Completed).await;
    h.advance(MINUTE_MS);
    let other = h.reopen().await.unwrap_or_else(|| h.store.clone());
    assert!(other.record_history().await.unwrap());
    assert!(
        !h.store.record_history().await.unwrap(),
        "other sampled first"
    );
    assert_eq!(
        other.history(0).await.unwrap(),
        h.store.history(0).await.unwrap()
    );
    assert_eq!(
        other.outcome_totals().await.unwrap(),
        h.store.outcome_totals().await.unwrap()
    );
}

pub async fn a_fresh_database_counts_from_its_first_enqueue(h: &Harness) {
    assert!(
        !h.store.record_history().await.unwrap(),
        "an empty database has nothing to sample"
    );
    h.advance(5 * MINUTE_MS);
    for _ in 0..14 {
        enqueue_in(h, "f", "q", 0).await;
    }
    h.advance(3 * MINUTE_MS);
    assert!(h.store.record_history().await.unwrap());
    let samples = h.store.history(0).await.unwrap();
    let points = throughput(&samples, None, HistoryRange::Hour, h.now());
    assert_eq!(throughput_sum(&points).enqueued, 14, "{samples:?}");
    let enqueued_at = points
        .iter()
        .position(|p| p.counts.is_some_and(|c| c.enqueued == 14))
        .expect("one point holds them");
    assert_eq!(
        points[enqueued_at].start_ms,
        duraq_core::inspect::history_minute(h.now() - 3 * MINUTE_MS),
        "in the minute of the first enqueue"
    );
    h.advance(MINUTE_MS);
    assert!(h.store.record_history().await.unwrap());
    let again = h.store.history(0).await.unwrap();
    assert_eq!(again.len(), samples.len() + 1, "one baseline, ever");
}
