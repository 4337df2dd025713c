//! Fair turns (`docs/queues.md`): within a queue, due jobs of different
//! fairness keys are claimed in turn, the jobs without a key taking their
//! turns as one more key; a claim starts after the lane the worker's last
//! claim ended on; a weight gives a key several turns in a row; a key alone
//! drains in plain claim order; priorities, future jobs, other queues and
//! paused queues keep their meaning; bad keys are refused, writing nothing.

use duraq_core::driver::steps::{Turn, Turns};
use duraq_core::inspect::{JobFilter, KeyBacklog};
use duraq_core::{EnqueueOptions, ErrorCode, Job, JobStatus, NewJob, Outcome, QueueName};
use serde_json::json;

use crate::harness::{claim_req, expect_invalid, job, Harness};

fn ids(jobs: &[Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

/// Enqueues `n` jobs of key `key` (none for `""`) in queue `queue`, 1 ms
/// apart, named `{queue}.{key}{i}`.
async fn jobs_of(h: &Harness, queue: &str, key: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let mut opts = EnqueueOptions::new().queue(queue);
        if !key.is_empty() {
            opts = opts.fairness_key(key);
        }
        let id = format!("{queue}.{key}{i}");
        out.push(h.insert(job("j", json!([key, i]), opts).with_id(id)).await);
        h.advance(1);
    }
    out
}

fn lane(queue: &str, key: &str) -> Turn {
    Turn::Key {
        queue: queue.into(),
        key: key.into(),
    }
}

pub async fn keys_take_turns_within_a_queue(h: &Harness) {
    let a = jobs_of(h, "q", "a", 6).await;
    let b = jobs_of(h, "q", "b", 2).await;
    let c = jobs_of(h, "q", "c", 1).await;
    let first = h.claim("w", &["j"], 5).await;
    assert_eq!(ids(&first), [&a[0], &b[0], &c[0], &a[1], &b[1]]);
    // The next claim begins after b, the lane the last one ended on.
    let mut req = claim_req("w", &["j"], 5);
    req.turns.advance(&first);
    assert_eq!(req.turns.after, Some(lane("q", "b")));
    assert_eq!(ids(&h.claim_with(&req).await), &a[2..6]);
}

pub async fn a_claim_starts_after_the_lane_the_last_one_ended_on(h: &Harness) {
    let a = jobs_of(h, "q", "a", 3).await;
    let b = jobs_of(h, "q", "b", 3).await;
    let c = jobs_of(h, "q", "c", 3).await;
    let mut req = claim_req("w", &["j"], 1);
    let mut order = Vec::new();
    for _ in 0..7 {
        let got = h.claim_with(&req).await;
        req.turns.advance(&got);
        order.extend(got.into_iter().map(|j| j.id));
    }
    let want = [&a[0], &b[0], &c[0], &a[1], &b[1], &c[1], &a[2]];
    let order: Vec<&String> = order.iter().collect();
    assert_eq!(order, want, "one job at a time goes round the keys");
}

pub async fn a_key_alone_drains_in_claim_order(h: &Harness) {
    let a = jobs_of(h, "q", "a", 5).await;
    assert_eq!(ids(&h.claim("w", &["j"], 3).await), &a[..3]);
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), &a[3..]);
}

/// A job enqueued due earlier than a job its key already handed out (a
/// worker may start a key's reads where its last claim left it) still comes
/// first in its key's turn.
pub async fn a_job_due_before_those_already_claimed_comes_first(h: &Harness) {
    let a = jobs_of(h, "q", "a", 2).await;
    assert_eq!(ids(&h.claim("w", &["j"], 1).await), [&a[0]]);
    let past = std::time::UNIX_EPOCH + std::time::Duration::from_millis((h.now() - 60_000) as u64);
    let opts = EnqueueOptions::new()
        .queue("q")
        .fairness_key("a")
        .run_at(past);
    let early = h
        .insert(job("j", json!(["early"]), opts).with_id("q.early"))
        .await;
    assert_eq!(ids(&h.claim("w", &["j"], 1).await), [&early]);
    assert_eq!(ids(&h.claim("w", &["j"], 1).await), [&a[1]]);
}

/// A candidate a claim passes by (at its concurrency cap) while it takes
/// later jobs of the same key still comes first once it may start.
pub async fn a_job_passed_by_at_its_cap_comes_first_once_free(h: &Harness) {
    let mut ids_of = Vec::new();
    for (i, capped) in [true, true, false, false].into_iter().enumerate() {
        let mut opts = EnqueueOptions::new().queue("q").fairness_key("a");
        if capped {
            opts = opts.concurrency("c", 1);
        }
        let new = job("j", json!([i]), opts).with_id(format!("q.a{i}"));
        ids_of.push(h.insert(new).await);
        h.advance(1);
    }
    let first = h.claim("w", &["j"], 2).await;
    assert_eq!(
        ids(&first),
        [&ids_of[0], &ids_of[2]],
        "a1 waits for the cap"
    );
    assert!(h.report(&first[0], Outcome::Completed).await);
    assert_eq!(ids(&h.claim("w", &["j"], 1).await), [&ids_of[1]]);
}

pub async fn jobs_without_a_key_take_turns_as_one_key(h: &Harness) {
    let plain = jobs_of(h, "q", "", 3).await;
    let other = jobs_of(h, "r", "", 1).await;
    let a = jobs_of(h, "q", "a", 3).await;
    let got = h.claim("w", &["j"], 6).await;
    // The lane without a key spans the queues of the level, in claim order.
    let want = [&plain[0], &a[0], &plain[1], &a[1], &plain[2], &a[2]];
    assert_eq!(ids(&got), want);
    assert_eq!(ids(&h.claim("w", &["j"], 6).await), [&other[0]]);
}

pub async fn a_weight_gives_a_key_turns_in_a_row(h: &Harness) {
    let a = jobs_of(h, "q", "a", 5).await;
    let b = jobs_of(h, "q", "b", 5).await;
    let mut req = claim_req("w", &["j"], 6);
    req.turns = Turns {
        after: None,
        weights: [("a".to_owned(), 2)].into(),
    };
    let got = h.claim_with(&req).await;
    assert_eq!(ids(&got), [&a[0], &a[1], &b[0], &a[2], &a[3], &b[1]]);
}

pub async fn priorities_queues_and_pauses_keep_their_meaning(h: &Harness) {
    let a = jobs_of(h, "q", "a", 2).await;
    let urgent = h
        .insert(
            job(
                "j",
                json!(["u"]),
                EnqueueOptions::new()
                    .queue("q")
                    .fairness_key("b")
                    .priority(5),
            )
            .with_id("urgent"),
        )
        .await;
    let later = EnqueueOptions::new()
        .queue("q")
        .fairness_key("c")
        .run_in(std::time::Duration::from_secs(60));
    let future = h.insert(job("j", json!(["later"]), later)).await;
    let elsewhere = jobs_of(h, "r", "a", 1).await;
    let paused = jobs_of(h, "p", "a", 1).await;
    let p = QueueName::new("p").unwrap();
    assert!(h.store.pause_queue(&p).await.unwrap());
    let got = h.claim("w", &["j"], 10).await;
    assert_eq!(ids(&got), [&urgent, &a[0], &elsewhere[0], &a[1]]);
    assert_eq!(h.get(&future).await.status, JobStatus::Queued);
    assert_eq!(h.get(&paused[0]).await.status, JobStatus::Queued);
    let mut only_r = claim_req("w", &["j"], 10);
    only_r.queues = Some(vec!["p".into(), "r".into()]);
    assert!(h.claim_with(&only_r).await.is_empty(), "p is paused");
    h.advance(60_000);
    assert_eq!(ids(&h.claim("w", &["j"], 10).await), [&future]);
}

pub async fn a_job_keeps_its_key_and_a_search_finds_it(h: &Harness) {
    let a = jobs_of(h, "q", "tenant:1", 2).await;
    jobs_of(h, "q", "", 1).await;
    assert_eq!(h.get(&a[0]).await.fairness_key.as_deref(), Some("tenant:1"));
    let filter = JobFilter {
        fairness_key: Some("tenant:1".into()),
        ..JobFilter::default()
    };
    let found = h.store.search_jobs(&filter).await.unwrap().jobs;
    let mut found: Vec<&str> = ids(&found);
    found.sort();
    assert_eq!(found, [&a[0], &a[1]]);
}

pub async fn a_queue_lists_its_keys_with_their_queued_jobs(h: &Harness) {
    jobs_of(h, "q", "b", 2).await;
    jobs_of(h, "q", "a", 2).await;
    jobs_of(h, "q", "", 1).await;
    jobs_of(h, "r", "c", 2).await;
    let urgent = EnqueueOptions::new()
        .queue("q")
        .fairness_key("a")
        .priority(5);
    let urgent = h.insert(job("j", json!(["u"]), urgent)).await;
    let later = EnqueueOptions::new()
        .queue("q")
        .fairness_key("d")
        .run_in(std::time::Duration::from_secs(60));
    h.insert(job("j", json!(["later"]), later)).await;
    let counted = |keys: Vec<KeyBacklog>| -> Vec<(String, u64, bool)> {
        keys.into_iter()
            .map(|k| (k.key, k.queued, k.more))
            .collect()
    };
    let keys = counted(h.store.fairness_keys("q").await.unwrap());
    let want = [("a", 3), ("b", 2), ("d", 1)].map(|(k, n)| (k.to_owned(), n, false));
    assert_eq!(keys, want, "queued jobs by key, due or not, every priority");
    let mut only_q = claim_req("w", &["j"], 1);
    only_q.queues = Some(vec!["q".into()]);
    assert_eq!(ids(&h.claim_with(&only_q).await), [&urgent]);
    let keys = counted(h.store.fairness_keys("q").await.unwrap());
    assert_eq!(
        keys[0],
        ("a".to_owned(), 2, false),
        "a running job waits no more"
    );
    assert!(h.store.fairness_keys("none").await.unwrap().is_empty());
}

pub async fn a_bad_fairness_key_is_refused_and_writes_nothing(h: &Harness) {
    h.enqueue("seed", json!([])).await;
    let before = h.state().await;
    for key in ["", "bad\nkey", &"k".repeat(300)] {
        let opts = EnqueueOptions::new().fairness_key(key);
        expect_invalid(
            NewJob::new("j", json!([]), opts),
            ErrorCode::InvalidFairnessKey,
        );
    }
    h.assert_unchanged(&before, "refused fairness keys").await;
}
