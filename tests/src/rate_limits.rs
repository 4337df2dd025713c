//! Durable rate limits (`docs/queues.md`): at most `max` starts per period per
//! rate key; a job over the limit stays `queued` and becomes due when the window
//! frees (a backlog is spread over later periods), a saturated key never blocks
//! other jobs, a key keeps the limit it was first registered with
//! (`rate-limit-conflict`, nothing written), a badly formed limit is
//! `invalid-rate-limit`, and the limit is persisted and part of an idempotent
//! request. Across processes: `tests/tests/multiprocess_*.rs`.

use std::time::Duration;

use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, Outcome};
use serde_json::json;

use crate::harness::{claim_req, expect_conflict, expect_invalid, job, lease, Harness};

fn limited(max: u32, period_ms: u64) -> EnqueueOptions {
    EnqueueOptions::new().rate_limit("api", max, Duration::from_millis(period_ms))
}

async fn enqueue_limited(h: &Harness, n: usize, max: u32, period_ms: u64) -> Vec<String> {
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| job("j", json!([i]), limited(max, period_ms)))
        .collect();
    let outcomes = h.store.enqueue_batch(jobs).await.expect("batch");
    outcomes.iter().map(|o| o.job_id().to_owned()).collect()
}

/// The due times of the jobs still queued, earliest first.
async fn queued_due_times(h: &Harness) -> Vec<i64> {
    let mut due: Vec<i64> = h
        .jobs()
        .await
        .into_iter()
        .filter(|j| j.status == JobStatus::Queued)
        .map(|j| j.scheduled_at_ms)
        .collect();
    due.sort_unstable();
    due
}

pub async fn at_most_max_starts_per_period(h: &Harness) {
    let ids = enqueue_limited(h, 5, 2, 1_000).await;
    let start = h.now();
    let first = h.claim("w", &["j"], 10).await;
    assert_eq!(first.len(), 2, "two starts allowed in the first period");
    // The rest stay queued, due when the window frees, spread by period.
    let mut waiting: Vec<i64> = Vec::new();
    for id in &ids {
        let j = h.get(id).await;
        if j.status == JobStatus::Queued {
            assert_eq!(j.attempts, 0, "a postponed job used no attempt");
            waiting.push(j.scheduled_at_ms);
        }
    }
    waiting.sort_unstable();
    assert_eq!(waiting, [start + 1_000, start + 1_000, start + 2_000]);
    h.advance(999);
    assert!(h.claim("w", &["j"], 10).await.is_empty(), "not due yet");
    h.advance(1);
    assert_eq!(h.claim("w", &["j"], 10).await.len(), 2, "the window freed");
    h.advance(1_000);
    assert_eq!(h.claim("w", &["j"], 10).await.len(), 1);
}

/// Claim admission checks the cap before the rate (`docs/queues.md`): a job
/// at its concurrency cap is skipped as it is, due as before, and takes no rate
/// start, even when its rate key is saturated too; checked the other way round,
/// it would be postponed by the rate limit.
pub async fn the_cap_is_checked_before_the_rate(h: &Harness) {
    let both = || limited(1, 1_000).concurrency("c", 1);
    let first = h.insert(job("j", json!([1]), both())).await;
    let second = h.insert(job("j", json!([2]), both())).await;
    let due = h.get(&second).await.scheduled_at_ms;
    let claimed = h.claim("w", &["j"], 10).await;
    assert_eq!(
        claimed.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [first.as_str()]
    );
    let skipped = h.get(&second).await;
    assert_eq!(
        (skipped.status, skipped.scheduled_at_ms),
        (JobStatus::Queued, due),
        "skipped at the cap, not postponed by the rate"
    );
}

/// A worker's report-and-claim applies the limit as a plain claim does, in one
/// mutation with its reports: the jobs over the limit are postponed and the
/// starts logged in the same commit as the claimed rows.
pub async fn report_and_claim_applies_the_limit(h: &Harness) {
    enqueue_limited(h, 5, 2, 1_000).await;
    let start = h.now();
    let req = claim_req("w", &["j"], 10);
    let first = h.store.report_and_claim(Vec::new(), &req).await.unwrap();
    assert_eq!(
        first.claimed.len(),
        2,
        "two starts allowed in the first period"
    );
    assert_eq!(
        queued_due_times(h).await,
        [start + 1_000, start + 1_000, start + 2_000]
    );
    h.advance(1_000);
    let before = h.revision().await;
    let reports = first
        .claimed
        .iter()
        .map(|j| (lease(j), Outcome::Completed))
        .collect();
    let second = h.store.report_and_claim(reports, &req).await.unwrap();
    assert_eq!(second.reported, [true, true]);
    assert_eq!(second.claimed.len(), 2, "the window freed");
    assert_eq!(h.revision().await, before + 1, "one mutation");
    for j in &first.claimed {
        assert_eq!(h.get(&j.id).await.status, JobStatus::Completed);
    }
    for j in &second.claimed {
        assert_eq!(h.get(&j.id).await.status, JobStatus::HandedOff);
    }
    assert_eq!(
        queued_due_times(h).await,
        [start + 2_000],
        "the third period's job still waits"
    );
}

pub async fn the_window_slides(h: &Harness) {
    let t0 = h.now();
    enqueue_limited(h, 4, 2, 1_000).await;
    assert_eq!(h.claim("w", &["j"], 1).await.len(), 1);
    h.advance(600);
    assert_eq!(h.claim("w", &["j"], 1).await.len(), 1);
    h.advance(600);
    // 1200 ms: the first start left the window, the second (at 600) is still in it.
    assert_eq!(h.claim("w", &["j"], 10).await.len(), 1);
    assert_eq!(
        queued_due_times(h).await,
        [t0 + 1_600],
        "due when the start at 600 ms expires"
    );
}

pub async fn a_saturated_key_never_blocks_other_jobs(h: &Harness) {
    let limited_ids = enqueue_limited(h, 3, 1, 60_000).await;
    h.advance(1);
    let free = [
        h.insert(job("j", json!(["free", 0]), EnqueueOptions::new()))
            .await,
        h.insert(job("j", json!(["free", 1]), EnqueueOptions::new()))
            .await,
    ];
    let claimed = h.claim("w", &["j"], 10).await;
    let mut claimed_ids: Vec<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
    claimed_ids.sort_unstable();
    let mut expected = vec![limited_ids[0].as_str(), free[0].as_str(), free[1].as_str()];
    expected.sort_unstable();
    assert_eq!(
        claimed_ids, expected,
        "the oldest limited job and both free ones"
    );
}

pub async fn a_key_keeps_its_first_limit(h: &Harness) {
    h.insert(job("j", json!([]), limited(2, 1_000))).await;
    let before = h.state().await;
    for other in [limited(3, 1_000), limited(2, 2_000)] {
        let res = h.store.enqueue(job("j", json!([1]), other.clone())).await;
        expect_conflict(res, ErrorCode::RateLimitConflict);
        let batch = h
            .store
            .enqueue_batch(vec![
                job("j", json!([2]), EnqueueOptions::new()),
                job("j", json!([3]), other),
            ])
            .await;
        expect_conflict(batch, ErrorCode::RateLimitConflict);
    }
    h.assert_unchanged(&before, "rate-limit-conflict").await;
    // The same limit is welcome, under another name too.
    h.insert(job("other", json!([]), limited(2, 1_000))).await;
}

pub async fn invalid_rate_limits_change_nothing(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    let wire = |key: Option<&str>, max: Option<i64>, period: Option<i64>| EnqueueOptions {
        rate_key: key.map(str::to_owned),
        rate_max: max,
        rate_period_ms: period,
        ..EnqueueOptions::new()
    };
    for opts in [
        wire(Some("k"), None, None),
        wire(None, Some(1), Some(1_000)),
        wire(Some("k"), Some(0), Some(1_000)),
        wire(Some("k"), Some(1), Some(0)),
        wire(Some(""), Some(1), Some(1_000)),
        wire(Some("bad\u{7}key"), Some(1), Some(1_000)),
        wire(Some(&"k".repeat(256)), Some(1), Some(1_000)),
    ] {
        expect_invalid(
            NewJob::new("j", json!([]), opts),
            ErrorCode::InvalidRateLimit,
        );
    }
    h.assert_unchanged(&before, "invalid-rate-limit").await;
}

pub async fn rate_limit_is_persisted_and_part_of_the_request(h: &Harness) {
    let id = h.insert(job("j", json!([]), limited(5, 1_500))).await;
    let j = h.get(&id).await;
    assert_eq!(
        (j.rate_key.as_deref(), j.rate_max, j.rate_period_ms),
        (Some("api"), Some(5), Some(1_500))
    );
    let keyed = |opts: EnqueueOptions| opts.idempotency_key("k");
    let first = h
        .insert(job("j", json!([]), keyed(limited(5, 1_500))))
        .await;
    let replay = h
        .store
        .enqueue(job("j", json!([]), keyed(limited(5, 1_500))))
        .await
        .unwrap();
    assert_eq!(replay, EnqueueOutcome::Replayed(first));
    let without = h
        .store
        .enqueue(job("j", json!([]), keyed(EnqueueOptions::new())))
        .await;
    expect_conflict(without, ErrorCode::IdempotencyConflict);
}
