//! `SECURITY.md`: queue names and concurrency keys follow the rule of job names
//! (1–255 characters, no control characters), and every store handles the
//! longest accepted ones end to end.
//!
//! Why: names used to be unbounded. A 20,000-character concurrency key made
//! PostgreSQL fail the claim with a raw `54000 index row requires … bytes`, and
//! a queue name carrying `ESC[2J` cleared the terminal of whoever listed jobs.
//! The rejections happen while building the job, before any store is reached;
//! each case still checks against a store holding data that nothing was
//! written. The accepted maximum is exercised with four-byte characters (1,020
//! bytes, 1,026 for the derived `queue:<name>` key), so byte-limited indexes
//! meet the worst case.

use std::collections::BTreeMap;

use duraq_core::driver::ClaimRequest;
use duraq_core::limits::MAX_NAME_CHARS;
use duraq_core::{EnqueueOptions, ErrorCode, Job, NewJob, Outcome, QueueConfig};
use serde_json::json;

use crate::harness::{claim_req, expect_invalid, job, Harness};

/// Too long, far too long, and with control characters (a terminal escape, a
/// newline, DEL): every one must be refused.
fn bad_names() -> Vec<String> {
    vec![
        "q".repeat(MAX_NAME_CHARS + 1),
        "q".repeat(100_000),
        "a\u{1b}[2J".to_owned(),
        "line\nbreak".to_owned(),
        "del\u{7f}".to_owned(),
    ]
}

/// The longest accepted name, in four-byte characters.
fn longest_name() -> String {
    "🦀".repeat(MAX_NAME_CHARS)
}

async fn seeded(h: &Harness) -> crate::StoreState {
    h.enqueue("seed", json!([1])).await;
    h.enqueue_with(
        "seed",
        json!([2]),
        EnqueueOptions::new().concurrency("k", 1),
    )
    .await;
    h.state().await
}

fn short(name: &str) -> String {
    let head: String = name.chars().take(12).collect();
    format!("{head:?}… ({} chars)", name.chars().count())
}

pub async fn invalid_queue_names_are_rejected(h: &Harness) {
    let before = seeded(h).await;
    for name in bad_names() {
        let opts = EnqueueOptions::new().queue(name.clone());
        expect_invalid(NewJob::new("j", json!([]), opts), ErrorCode::InvalidQueue);
        h.assert_unchanged(&before, &format!("queue {}", short(&name)))
            .await;
    }
}

pub async fn invalid_concurrency_keys_are_rejected(h: &Harness) {
    let before = seeded(h).await;
    for key in bad_names() {
        let opts = EnqueueOptions::new().concurrency(key.clone(), 1);
        expect_invalid(
            NewJob::new("j", json!([]), opts),
            ErrorCode::InvalidConcurrency,
        );
        h.assert_unchanged(&before, &format!("concurrency key {}", short(&key)))
            .await;
    }
}

/// Claims with `req` and returns the ids.
async fn claimed(h: &Harness, req: &ClaimRequest) -> Vec<Job> {
    h.claim_with(req).await
}

pub async fn longest_concurrency_key_works_end_to_end(h: &Harness) {
    let key = longest_name();
    let opts = || EnqueueOptions::new().concurrency(key.clone(), 1);
    let a = h.insert(job("j", json!([1]), opts()).with_id("a")).await;
    let b = h.insert(job("j", json!([2]), opts()).with_id("b")).await;
    assert_eq!(
        h.get(&a).await.concurrency_key.as_deref(),
        Some(key.as_str())
    );
    let req = claim_req("w", &["j"], 10);
    let first = claimed(h, &req).await;
    assert_eq!(first.len(), 1, "the cap of 1 holds for a 255-character key");
    assert_eq!(first[0].id, a);
    assert!(claimed(h, &req).await.is_empty(), "the key is saturated");
    assert!(h.report(&first[0], Outcome::Completed).await);
    let second = claimed(h, &req).await;
    assert_eq!(second.len(), 1, "the reservation was released");
    assert_eq!(second[0].id, b);
    assert!(h.report(&second[0], Outcome::Completed).await);
    assert_eq!(h.snapshot().await.counts.completed, 2);
}

pub async fn capped_queue_with_longest_name_is_claimable(h: &Harness) {
    let queue = longest_name();
    for i in 0..2 {
        let opts = EnqueueOptions::new().queue(queue.clone());
        h.insert(job("j", json!([i]), opts).with_id(format!("q{i}")))
            .await;
    }
    assert_eq!(h.get("q0").await.queue, queue);
    let req = ClaimRequest {
        queue_config: BTreeMap::from([(
            queue.clone(),
            QueueConfig {
                max_concurrent: Some(1),
                priority: 0,
            },
        )]),
        ..claim_req("w", &["j"], 10)
    };
    let first = claimed(h, &req).await;
    assert_eq!(first.len(), 1, "the queue cap of 1 holds");
    assert!(
        claimed(h, &req).await.is_empty(),
        "`queue:<name>` is saturated"
    );
    assert!(h.report(&first[0], Outcome::Completed).await);
    let second = claimed(h, &req).await;
    assert_eq!(second.len(), 1, "the queue reservation was released");
    assert_ne!(second[0].id, first[0].id);
}
