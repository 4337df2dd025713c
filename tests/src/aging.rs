//! Priority aging (`docs/queues.md`): an aging pass raises a queue's queued,
//! due jobs by one step of priority per interval waited, up to the bound and
//! never above 100; other queues, jobs not yet due and running jobs are left
//! alone; a claim then takes the aged job first; a return to `queued` gives
//! the steps back; a pass raises at most its limit and leaves jobs due before
//! its oldest due time.

use std::time::Duration;

use duraq_core::driver::AgingPass;
use duraq_core::{EnqueueOptions, Outcome, PriorityAging};
use serde_json::json;

use crate::harness::{job, Harness};

fn pass(every_ms: u64, max_steps: u8) -> AgingPass {
    AgingPass {
        queue: "q".into(),
        aging: PriorityAging::new(Duration::from_millis(every_ms), max_steps).unwrap(),
        oldest_due_ms: None,
        limit: 100,
    }
}

fn in_q(priority: i8) -> EnqueueOptions {
    EnqueueOptions::new().queue("q").priority(priority)
}

async fn aged(h: &Harness, id: &str) -> (i64, i64) {
    let j = h.get(id).await;
    (j.priority, j.aged_steps)
}

pub async fn a_due_job_rises_one_step_per_interval_up_to_the_bound(h: &Harness) {
    let low = h.insert(job("j", json!([1]), in_q(-5))).await;
    let top = h.insert(job("j", json!([2]), in_q(99))).await;
    let other = h.insert(job("j", json!([3]), EnqueueOptions::new())).await;
    let later = in_q(0).run_in(Duration::from_secs(3_600));
    let later = h.insert(job("j", json!([4]), later)).await;
    let running = h.insert(job("r", json!([5]), in_q(0))).await;
    h.claim_id("w", "r", &running).await;
    let before = h.snapshot().await;

    h.advance(2_500);
    assert_eq!(h.store.age_priorities(&pass(1_000, 3)).await.unwrap(), 2);
    assert_eq!(aged(h, &low).await, (-3, 2));
    assert_eq!(aged(h, &top).await, (100, 1), "never above 100");
    assert_eq!(aged(h, &other).await, (0, 0), "another queue");
    assert_eq!(aged(h, &later).await, (0, 0), "not due yet");
    assert_eq!(aged(h, &running).await, (0, 0), "running");
    assert_eq!(h.store.age_priorities(&pass(1_000, 3)).await.unwrap(), 0);
    h.advance(60_000);
    assert_eq!(h.store.age_priorities(&pass(1_000, 3)).await.unwrap(), 1);
    assert_eq!(aged(h, &low).await, (-2, 3), "bounded at 3 steps");
    assert_eq!(h.snapshot().await, before, "no count moved, no revision");
}

/// An old low-priority job overtakes a newer higher one once aged, and a
/// failed attempt gives the steps back with the wait that earned them.
pub async fn an_aged_job_is_claimed_first_and_a_retry_gives_the_steps_back(h: &Harness) {
    let old = h
        .insert(job("j", json!([1]), in_q(-5).max_retries(3)))
        .await;
    h.advance(8_000);
    let new = h.insert(job("j", json!([2]), in_q(2))).await;
    h.store.age_priorities(&pass(1_000, 10)).await.unwrap();
    assert_eq!(aged(h, &old).await, (3, 8));
    assert_eq!(aged(h, &new).await, (2, 0), "not due an interval yet");
    let claimed = h.claim("w", &["j"], 1).await.remove(0);
    assert_eq!(claimed.id, old, "aged past the newer job");
    let failed = Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: Some(0),
        discard: false,
    };
    assert!(h.report(&claimed, failed).await);
    assert_eq!(aged(h, &old).await, (-5, 0), "its own priority again");
    assert_eq!(h.claim("w", &["j"], 1).await[0].id, new);
}

/// A pass raises at most `limit` jobs, and none due before `oldest_due_ms`.
pub async fn a_pass_keeps_to_its_limit_and_its_oldest_due_time(h: &Harness) {
    let first = h.insert(job("j", json!([1]), in_q(0))).await;
    h.advance(10);
    let second = h.insert(job("j", json!([2]), in_q(0))).await;
    h.advance(10);
    let third = h.insert(job("j", json!([3]), in_q(0))).await;
    h.advance(5_000);
    let skip_first = AgingPass {
        oldest_due_ms: Some(h.get(&second).await.scheduled_at_ms),
        limit: 1,
        ..pass(1_000, 2)
    };
    assert_eq!(h.store.age_priorities(&skip_first).await.unwrap(), 1);
    assert_eq!(aged(h, &first).await, (0, 0), "due before the oldest");
    let raised = [aged(h, &second).await, aged(h, &third).await];
    assert!(
        raised.contains(&(2, 2)) && raised.contains(&(0, 0)),
        "{raised:?}"
    );
    assert_eq!(h.store.age_priorities(&skip_first).await.unwrap(), 1);
    assert_eq!(aged(h, &third).await, (2, 2));
    assert_eq!(h.store.age_priorities(&skip_first).await.unwrap(), 0);
}
