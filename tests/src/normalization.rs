//! `docs/jobs.md` and `docs/schedule-keys.md` and `docs/idempotency.md`: option normalization and every validation
//! code. Validation happens before a store is reached, but each case still runs
//! against a store holding data and checks that nothing was written afterwards, so
//! a store that validated late (or wrote first) would fail here.

use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, NewJob, NewOperation, ScheduleKey};
use serde_json::json;

use crate::harness::{expect_invalid, job, Harness, WireOptions};

/// Seeds a little state so that "unchanged" is a meaningful check.
async fn seeded(h: &Harness) -> crate::StoreState {
    h.enqueue("seed", json!([1])).await;
    h.replace("seed-key", "seed", json!([2])).await;
    h.state().await
}

/// Building a job from `opts` must fail with `code`, and the store stays untouched.
async fn rejected(h: &Harness, name: &str, opts: EnqueueOptions, code: ErrorCode) {
    let before = h.state().await;
    expect_invalid(NewJob::new(name, json!([]), opts.clone()), code);
    h.assert_unchanged(&before, &format!("{code} for {opts:?}"))
        .await;
}

pub async fn defaults_are_applied(h: &Harness) {
    let id = h
        .enqueue("send_email", json!({"to": "a@example.com", "n": [1, 2]}))
        .await;
    let j = h.get(&id).await;
    assert_eq!(j.job_name, "send_email");
    assert_eq!(j.args, json!({"to": "a@example.com", "n": [1, 2]}));
    assert_eq!(j.queue, "default");
    assert_eq!(j.status, JobStatus::Queued);
    assert_eq!((j.attempts, j.max_retries), (0, 10));
    assert_eq!((j.scheduled_at_ms, j.created_at_ms), (h.now(), h.now()));
    assert_eq!(j.handed_off_at_ms, None);
    assert_eq!(
        (
            j.completed_at_ms,
            j.failed_at_ms,
            j.cancelled_at_ms,
            j.orphaned_at_ms
        ),
        (None, None, None, None)
    );
    assert_eq!(
        (j.last_error, j.worker_id, j.handoff_id),
        (None, None, None)
    );
    assert_eq!((j.schedule_key, j.schedule_order), (None, None));
    assert_eq!((j.concurrency_key, j.max_concurrency), (None, None));
    assert_eq!((j.idempotency_key, j.timeout_ms), (None, None));
}

pub async fn options_are_persisted(h: &Harness) {
    let opts = EnqueueOptions::new()
        .queue("  mail ")
        .max_retries(0)
        .scheduled_at_ms(h.now() + 5_000)
        .concurrency("tenant:7", 2)
        .idempotency_key("order-1")
        .timeout_ms(1);
    let id = h
        .enqueue_with("  resize ", json!([7]), opts)
        .await
        .job_id()
        .to_owned();
    let j = h.get(&id).await;
    assert_eq!((j.job_name.as_str(), j.queue.as_str()), ("resize", "mail"));
    assert_eq!((j.max_retries, j.scheduled_at_ms), (0, h.now() + 5_000));
    assert_eq!(
        (j.concurrency_key.as_deref(), j.max_concurrency),
        (Some("tenant:7"), Some(2))
    );
    assert_eq!(
        (j.idempotency_key.as_deref(), j.timeout_ms),
        (Some("order-1"), Some(1))
    );
}

pub async fn blank_queue_is_default(h: &Harness) {
    for q in ["", "   ", "default", " default "] {
        let id = h
            .enqueue_with("j", json!([q]), EnqueueOptions::new().queue(q))
            .await;
        assert_eq!(h.get(id.job_id()).await.queue, "default", "queue {q:?}");
    }
}

pub async fn past_schedule_is_due_now(h: &Harness) {
    let id = h
        .enqueue_with("j", json!([]), EnqueueOptions::new().scheduled_at_ms(0))
        .await;
    let claimed = h.claim("w", &["j"], 5).await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, id.job_id());
}

pub async fn invalid_job_name(h: &Harness) {
    seeded(h).await;
    for name in ["", "   ", "a\nb", "tab\there", "\u{7f}x"] {
        rejected(h, name, EnqueueOptions::new(), ErrorCode::InvalidJobName).await;
    }
    rejected(
        h,
        &"n".repeat(256),
        EnqueueOptions::new(),
        ErrorCode::InvalidJobName,
    )
    .await;
    let ok = job(&"é".repeat(255), json!([]), EnqueueOptions::new());
    h.insert(ok).await;
}

pub async fn invalid_max_retries(h: &Harness) {
    seeded(h).await;
    rejected(
        h,
        "j",
        EnqueueOptions {
            max_retries: Some(-1),
            ..EnqueueOptions::new()
        },
        ErrorCode::InvalidMaxRetries,
    )
    .await;
    rejected(
        h,
        "j",
        EnqueueOptions {
            max_retries: Some(i64::MIN),
            ..EnqueueOptions::new()
        },
        ErrorCode::InvalidMaxRetries,
    )
    .await;
}

pub async fn invalid_scheduled_at(h: &Harness) {
    seeded(h).await;
    rejected(
        h,
        "j",
        EnqueueOptions::new().scheduled_at_ms(-1),
        ErrorCode::InvalidScheduledAt,
    )
    .await;
}

pub async fn invalid_concurrency(h: &Harness) {
    seeded(h).await;
    let key_only = EnqueueOptions {
        concurrency_key: Some("k".into()),
        ..EnqueueOptions::new()
    };
    let cap_only = EnqueueOptions {
        max_concurrency: Some(2),
        ..EnqueueOptions::new()
    };
    for opts in [
        key_only,
        cap_only,
        EnqueueOptions::new().concurrency("k", 0),
        EnqueueOptions {
            concurrency_key: Some("k".into()),
            max_concurrency: Some(-3),
            ..EnqueueOptions::new()
        },
        EnqueueOptions::new().concurrency("", 1),
        EnqueueOptions::new().concurrency("queue:mail", 1),
        EnqueueOptions::new().concurrency("queue:", 1),
    ] {
        rejected(h, "j", opts, ErrorCode::InvalidConcurrency).await;
    }
}

pub async fn invalid_idempotency_key(h: &Harness) {
    seeded(h).await;
    rejected(
        h,
        "j",
        EnqueueOptions::new().idempotency_key(""),
        ErrorCode::InvalidIdempotencyKey,
    )
    .await;
    let long = "k".repeat(1025);
    rejected(
        h,
        "j",
        EnqueueOptions::new().idempotency_key(long),
        ErrorCode::InvalidIdempotencyKey,
    )
    .await;
    // 1025 bytes from two-byte characters: the limit is in bytes.
    let wide = format!("{}k", "é".repeat(512));
    rejected(
        h,
        "j",
        EnqueueOptions::new().idempotency_key(wide),
        ErrorCode::InvalidIdempotencyKey,
    )
    .await;
    // An operation record needs an idempotency key.
    let plain = job("j", json!([]), EnqueueOptions::new());
    let op = NewOperation {
        key: "op".into(),
        data: json!({}),
    };
    expect_invalid(plain.with_operation(op), ErrorCode::InvalidIdempotencyKey);
    // Exactly 1024 bytes is accepted.
    h.enqueue_with(
        "j",
        json!([]),
        EnqueueOptions::new().idempotency_key("k".repeat(1024)),
    )
    .await;
}

pub async fn invalid_timeout(h: &Harness) {
    seeded(h).await;
    rejected(
        h,
        "j",
        EnqueueOptions::new().timeout_ms(0),
        ErrorCode::InvalidTimeout,
    )
    .await;
    rejected(
        h,
        "j",
        EnqueueOptions::new().timeout_ms(-10),
        ErrorCode::InvalidTimeout,
    )
    .await;
}

pub async fn unsupported_option_combination(h: &Harness) {
    seeded(h).await;
    let opts = EnqueueOptions::new()
        .idempotency_key("k")
        .deduplicate_while_queued();
    rejected(h, "j", opts, ErrorCode::UnsupportedOption).await;
}

pub async fn invalid_schedule_key(h: &Harness) {
    let before = seeded(h).await;
    for k in [
        "".to_owned(),
        "k".repeat(256),
        "a\u{0}b".into(),
        "line\nbreak".into(),
        "\u{9b}".into(),
    ] {
        expect_invalid(ScheduleKey::new(k.clone()), ErrorCode::InvalidScheduleKey);
    }
    h.assert_unchanged(&before, "invalid schedule keys").await;
    // 255 characters (more bytes) is fine and round-trips.
    let long = "ü".repeat(255);
    let out = h.replace(&long, "j", json!([])).await;
    assert_eq!(
        h.get(&out.job_id).await.schedule_key.as_deref(),
        Some(long.as_str())
    );
}
