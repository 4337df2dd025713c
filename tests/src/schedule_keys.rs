//! `docs/schedule-keys.md` stable schedule keys: replace/cancel/wake/get outcomes for an owner in
//! every state (none, queued, future, due, handed off, terminal), what each call
//! changes and what it must leave alone, and refused options writing nothing.
//! Ownership over time is in [`crate::schedule_ownership`].

use duraq_core::{CancelOutcome, EnqueueOptions, ErrorCode, JobStatus, Outcome, WakeOutcome};
use serde_json::json;

use crate::harness::{expect_invalid, job, key, Harness, WireOptions};

pub async fn replace_without_owner(h: &Harness) {
    let out = h.replace("k", "j", json!([1])).await;
    assert_eq!((out.previous_job_id, out.previous_status), (None, None));
    let j = h.get(&out.job_id).await;
    assert_eq!(
        (j.schedule_key.as_deref(), j.schedule_order, j.status),
        (Some("k"), Some(1), JobStatus::Queued)
    );
    let got = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!(got.current_job.map(|j| j.id), Some(out.job_id));
    assert_eq!(got.latest_terminal_job, None);
}

pub async fn replace_queued_owner_cancels_it(h: &Harness) {
    let first = h.replace("k", "j", json!([1])).await;
    let r0 = h.revision().await;
    let second = h.replace("k", "j", json!([2])).await;
    assert_eq!(
        second.previous_job_id.as_deref(),
        Some(first.job_id.as_str())
    );
    assert_eq!(second.previous_status, Some(JobStatus::Queued));
    let old = h.get(&first.job_id).await;
    assert_eq!(
        (old.status, old.cancelled_at_ms),
        (JobStatus::Cancelled, Some(h.now()))
    );
    assert_eq!(
        old.schedule_key.as_deref(),
        Some("k"),
        "a job keeps its key as history"
    );
    assert_eq!(h.get(&second.job_id).await.schedule_order, Some(2));
    assert_eq!(h.revision().await, r0 + 1, "replace is one mutation");
    // The cancelled owner can never be handed off.
    let claimed = h.claim("w", &["j"], 10).await;
    assert_eq!(
        claimed.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        [second.job_id]
    );
}

pub async fn replace_running_owner_moves_ownership(h: &Harness) {
    let first = h.replace("k", "j", json!([1])).await;
    let running = h.claim_id("w", "j", &first.job_id).await;
    let second = h.replace("k", "j", json!([2])).await;
    assert_eq!(second.previous_status, Some(JobStatus::HandedOff));
    assert_eq!(
        h.get(&first.job_id).await.status,
        JobStatus::HandedOff,
        "it keeps running"
    );
    // The superseded job finishing never removes the newer owner.
    assert!(h.report(&running, Outcome::Completed).await);
    let got = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!(got.current_job.map(|j| j.id), Some(second.job_id.clone()));
    assert_eq!(got.latest_terminal_job.map(|j| j.id), Some(first.job_id));
    let third = h.replace("k", "j", json!([3])).await;
    assert_eq!(third.previous_job_id, Some(second.job_id));
    assert_eq!(h.get(&third.job_id).await.schedule_order, Some(3));
}

pub async fn cancel_outcomes(h: &Harness) {
    let missing = h
        .store
        .cancel_scheduled(&key("none"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    assert_eq!(
        (missing.job_id, missing.outcome),
        (None, CancelOutcome::NotFound)
    );
    let queued = h.replace("q", "j", json!([])).await;
    let out = h
        .store
        .cancel_scheduled(&key("q"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    assert_eq!(
        (out.job_id.as_deref(), out.outcome),
        (Some(queued.job_id.as_str()), CancelOutcome::Cancelled)
    );
    assert_eq!(h.get(&queued.job_id).await.status, JobStatus::Cancelled);
    let again = h
        .store
        .cancel_scheduled(&key("q"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    assert_eq!(
        again.outcome,
        CancelOutcome::NotFound,
        "repeating a cancellation"
    );
    // A running owner loses its key but keeps running; no count changes.
    let run = h.replace("r", "j", json!([])).await;
    let claimed = h.claim_id("w", "j", &run.job_id).await;
    let before = h.snapshot().await;
    let out = h
        .store
        .cancel_scheduled(&key("r"), duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    assert_eq!(
        (out.job_id.as_deref(), out.outcome),
        (Some(run.job_id.as_str()), CancelOutcome::HandedOff)
    );
    assert_eq!(h.snapshot().await, before);
    assert_eq!(
        h.store
            .get_scheduled(&key("r"), false)
            .await
            .unwrap()
            .current_job,
        None
    );
    assert!(
        h.report(&claimed, Outcome::Completed).await,
        "the run was not stopped"
    );
    // A completed owner released the key.
    let done = h.replace("d", "j", json!([])).await;
    h.drive_to(&done.job_id, "j", JobStatus::Completed).await;
    assert_eq!(
        h.store
            .cancel_scheduled(&key("d"), duraq_core::RunningOwner::KeepRunning)
            .await
            .unwrap()
            .outcome,
        CancelOutcome::NotFound
    );
}

pub async fn wake_outcomes(h: &Harness) {
    let missing = h.store.wake_scheduled(&key("none")).await.unwrap();
    assert_eq!(
        (missing.job_id, missing.outcome),
        (None, WakeOutcome::NotFound)
    );
    let at = h.now() + 3_600_000;
    let future = job(
        "j",
        json!({"a": 1}),
        EnqueueOptions::new().scheduled_at_ms(at),
    );
    let out = h
        .store
        .replace_scheduled(&key("f"), future, duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    let before = h.get(&out.job_id).await;
    let r0 = h.revision().await;
    h.advance(5);
    let woke = h.store.wake_scheduled(&key("f")).await.unwrap();
    assert_eq!(
        (woke.job_id.as_deref(), woke.outcome),
        (Some(out.job_id.as_str()), WakeOutcome::Woken)
    );
    let after = h.get(&out.job_id).await;
    assert_eq!(after.scheduled_at_ms, h.now());
    assert_eq!(
        after,
        duraq_core::Job {
            scheduled_at_ms: h.now(),
            ..before
        },
        "wake changes nothing else"
    );
    assert_eq!(h.revision().await, r0, "wake changes no count");
    let again = h.store.wake_scheduled(&key("f")).await.unwrap();
    assert_eq!(again.outcome, WakeOutcome::AlreadyDue);
    let at_now = job(
        "j",
        json!([2]),
        EnqueueOptions::new().scheduled_at_ms(h.now()),
    );
    let due = h
        .store
        .replace_scheduled(&key("n"), at_now, duraq_core::RunningOwner::KeepRunning)
        .await
        .unwrap();
    let woke = h.store.wake_scheduled(&key("n")).await.unwrap();
    assert_eq!(
        (woke.job_id.as_deref(), woke.outcome),
        (Some(due.job_id.as_str()), WakeOutcome::AlreadyDue)
    );
    h.store.cancel_job(&due.job_id).await.unwrap();
    let claimed = h.claim_id("w", "j", &out.job_id).await;
    let running = h.store.wake_scheduled(&key("f")).await.unwrap();
    assert_eq!(
        (running.job_id.as_deref(), running.outcome),
        (Some(out.job_id.as_str()), WakeOutcome::HandedOff)
    );
    assert_eq!(h.get(&out.job_id).await, claimed);
    assert!(h.report(&claimed, Outcome::Completed).await);
    assert_eq!(
        h.store.wake_scheduled(&key("f")).await.unwrap().outcome,
        WakeOutcome::NotFound
    );
    assert_eq!(h.jobs().await.len(), 2, "wake never enqueues");
}

pub async fn wake_keeps_retry_state(h: &Harness) {
    let out = h.replace("k", "j", json!([])).await;
    let claimed = h.claim_id("w", "j", &out.job_id).await;
    assert!(h.report(&claimed, Outcome::failed("first failure")).await);
    let woke = h.store.wake_scheduled(&key("k")).await.unwrap();
    assert_eq!(woke.outcome, WakeOutcome::Woken);
    let j = h.get(&out.job_id).await;
    assert_eq!(
        (j.attempts, j.last_error.as_deref(), j.scheduled_at_ms),
        (1, Some("first failure"), h.now())
    );
    assert_eq!(j.schedule_key.as_deref(), Some("k"));
}

pub async fn get_in_every_state(h: &Harness) {
    let none = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!((none.current_job, none.latest_terminal_job), (None, None));
    let a = h.replace("k", "j", json!(["a"])).await;
    let b = h.replace("k", "j", json!(["b"])).await;
    let got = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!(
        got.current_job.as_ref().map(|j| j.id.as_str()),
        Some(b.job_id.as_str())
    );
    assert_eq!(
        got.latest_terminal_job.map(|j| j.id),
        Some(a.job_id.clone())
    );
    let without = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(
        (
            without.current_job.map(|j| j.id),
            without.latest_terminal_job
        ),
        (Some(b.job_id.clone()), None)
    );
    h.claim_id("w", "j", &b.job_id).await;
    let got = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!(
        got.current_job.map(|j| (j.id, j.status)),
        Some((b.job_id.clone(), JobStatus::HandedOff))
    );
    h.store.cancel_job(&b.job_id).await.unwrap();
    let got = h.store.get_scheduled(&key("k"), true).await.unwrap();
    assert_eq!(got.current_job, None, "a cancelled owner releases the key");
    assert_eq!(
        got.latest_terminal_job.map(|j| j.id),
        Some(b.job_id),
        "newest by scheduleOrder"
    );
}

pub async fn replace_refuses_idempotency_and_dedupe(h: &Harness) {
    h.replace("k", "j", json!([])).await;
    let before = h.state().await;
    let idem = job("j", json!([]), EnqueueOptions::new().idempotency_key("i"));
    expect_invalid(
        h.store
            .replace_scheduled(&key("k"), idem, duraq_core::RunningOwner::KeepRunning)
            .await,
        ErrorCode::UnsupportedOption,
    );
    let dedupe = job(
        "j",
        json!([]),
        EnqueueOptions::new().deduplicate_while_queued(),
    );
    expect_invalid(
        h.store
            .replace_scheduled(&key("k"), dedupe, duraq_core::RunningOwner::KeepRunning)
            .await,
        ErrorCode::UnsupportedOption,
    );
    h.assert_unchanged(&before, "unsupported-option").await;
    let next = h.replace("k", "j", json!([])).await;
    assert_eq!(
        h.get(&next.job_id).await.schedule_order,
        Some(2),
        "refused calls took no order"
    );
}
