//! Cancelling running work, the store side: the lease check a worker
//! makes about once a second ([`duraq_core::WorkerStore::lost_leases`] over
//! `lease_states`: which held leases are no longer current, and why), the
//! in-process announcement of a running job's cancellation, and the
//! `RunningOwner` choice of `cancel_scheduled` / `replace_scheduled` (without
//! `Stop` a running owner runs on and only the key moves; with it the owner is
//! cancelled exactly like `cancel_job`: lease voided, reservation released,
//! counts moved, report refused).

use std::time::Duration;

use duraq_core::driver::{Lease, LeaseLoss};
use duraq_core::{CancelOutcome, EnqueueOptions, JobStatus, Outcome, RunningOwner};
use serde_json::json;
use tokio::sync::broadcast;

use crate::harness::{job, key, lease, Harness};

/// The next announced cancellation (PostgreSQL's own are published in-process
/// right after commit; waits up to five seconds so a missing one fails).
async fn next_cancel(rx: &mut broadcast::Receiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a cancellation was announced")
        .expect("cancellation channel open")
}

pub async fn lost_leases_tell_cancelled_from_lost(h: &Harness) {
    let a = h.enqueue("j", json!(["a"])).await;
    let b = h.enqueue("j", json!(["b"])).await;
    let c = h.enqueue("j", json!(["c"])).await;
    let ja = h.claim_id("w1", "j", &a).await;
    let jb = h.claim_id("w2", "j", &b).await;
    let jc = h.claim_id("w1", "j", &c).await;
    let gone = Lease {
        job_id: "no-such-job".into(),
        handoff_id: "h".into(),
    };
    let held = vec![lease(&ja), lease(&jb), lease(&jc), gone.clone()];

    // Nothing happened yet: only the unknown job's lease is not current.
    let lost = h.store.lost_leases(&held).await.unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!((&lost[0].lease, lost[0].loss), (&gone, LeaseLoss::Lost));
    assert!(h.store.lost_leases(&[]).await.unwrap().is_empty());

    // a is cancelled while running; b's worker dies and its lease is recovered,
    // then b is claimed again under another handoff.
    h.store.cancel_job(&a).await.unwrap();
    h.advance(60_001);
    h.store.heartbeat("w1").await.unwrap();
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        vec![b.clone()]
    );
    h.advance(3_600_000);
    h.store.heartbeat("w1").await.unwrap();
    let again = h.claim_id("w3", "j", &b).await;
    assert_ne!(again.handoff_id, jb.handoff_id);

    let lost = h.store.lost_leases(&held).await.unwrap();
    let got: Vec<(&str, LeaseLoss)> = lost
        .iter()
        .map(|l| (l.lease.job_id.as_str(), l.loss))
        .collect();
    assert_eq!(
        got,
        vec![
            (a.as_str(), LeaseLoss::Cancelled),
            (b.as_str(), LeaseLoss::Lost),
            ("no-such-job", LeaseLoss::Lost),
        ],
        "in the order held; c's lease is still current"
    );
    assert_eq!(lost[1].lease, lease(&jb), "the old lease is reported");

    // The states the rule was applied to.
    let mut states = h
        .store
        .lease_states(&[a.clone(), b.clone(), "no-such-job".into()])
        .await
        .unwrap();
    states.sort_by(|x, y| x.job_id.cmp(&y.job_id));
    let mut want = vec![
        (a.clone(), JobStatus::Cancelled),
        (b.clone(), JobStatus::HandedOff),
    ];
    want.sort();
    assert_eq!(
        states
            .iter()
            .map(|s| (s.job_id.clone(), s.status))
            .collect::<Vec<_>>(),
        want
    );
    let sb = states.iter().find(|s| s.job_id == b).unwrap();
    assert_eq!(sb.handoff_id, again.handoff_id);

    // The cancelled attempt's late report is refused and changes nothing.
    let before = h.state().await;
    assert!(!h.report(&ja, Outcome::Completed).await);
    h.assert_unchanged(&before, "a late report of a cancelled job")
        .await;
}

pub async fn cancelling_a_running_job_is_announced(h: &Harness) {
    let mut cancels = h.store.subscribe_cancellations();
    let queued = h.enqueue("j", json!(["queued"])).await;
    let running = h.enqueue("other", json!(["running"])).await;
    h.claim_id("w", "other", &running).await;
    // A queued job's cancel has no worker to tell; the running one's has.
    h.store.cancel_job(&queued).await.unwrap();
    h.store.cancel_job(&running).await.unwrap();
    assert_eq!(next_cancel(&mut cancels).await, running);
}

pub async fn keyed_cancel_keeps_or_stops_the_running_owner(h: &Harness) {
    let capped = EnqueueOptions::new().concurrency("c", 1);
    let mut cancels = h.store.subscribe_cancellations();
    // KeepRunning: the key is released, the run goes on and may report.
    let kept = h
        .store
        .replace_scheduled(
            &key("keep"),
            job("j", json!([1]), EnqueueOptions::new()),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let kept_run = h.claim_id("w", "j", &kept.job_id).await;
    let out = h
        .store
        .cancel_scheduled(&key("keep"), RunningOwner::KeepRunning)
        .await
        .unwrap();
    assert_eq!(
        (out.job_id.as_deref(), out.outcome),
        (Some(kept.job_id.as_str()), CancelOutcome::HandedOff)
    );
    assert_eq!(h.get(&kept.job_id).await.status, JobStatus::HandedOff);
    assert!(h
        .store
        .lost_leases(&[lease(&kept_run)])
        .await
        .unwrap()
        .is_empty());
    assert!(h.report(&kept_run, Outcome::Completed).await);

    // Stop: cancelled like cancel_job.
    let stopped = h
        .store
        .replace_scheduled(
            &key("stop"),
            job("j", json!([2]), capped.clone()),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let run = h.claim_id("w", "j", &stopped.job_id).await;
    let waiting = h.insert(job("j", json!([3]), capped)).await;
    assert!(
        h.claim("w2", &["j"], 10).await.is_empty(),
        "the cap is held"
    );
    let before = h.snapshot().await;
    let out = h
        .store
        .cancel_scheduled(&key("stop"), RunningOwner::Stop)
        .await
        .unwrap();
    assert_eq!(
        (out.job_id.as_deref(), out.outcome),
        (Some(stopped.job_id.as_str()), CancelOutcome::Stopped)
    );
    let row = h.get(&stopped.job_id).await;
    assert_eq!(row.status, JobStatus::Cancelled);
    assert!(row.cancelled_at_ms.is_some());
    let after = h.snapshot().await;
    assert_eq!(after.revision, before.revision + 1, "one mutation");
    assert_eq!(after.counts.handed_off, before.counts.handed_off - 1);
    assert_eq!(after.counts.cancelled, before.counts.cancelled + 1);
    assert_eq!(next_cancel(&mut cancels).await, stopped.job_id);
    let lost = h.store.lost_leases(&[lease(&run)]).await.unwrap();
    assert_eq!(lost[0].loss, LeaseLoss::Cancelled);
    assert!(!h.report(&run, Outcome::Completed).await, "report refused");
    assert!(h
        .store
        .get_scheduled(&key("stop"), false)
        .await
        .unwrap()
        .current_job
        .is_none());
    // Its reservation was released: the waiting job of the same key runs.
    h.claim_id("w2", "j", &waiting).await;
    // No owner left: Stop has nothing to stop.
    let none = h
        .store
        .cancel_scheduled(&key("stop"), RunningOwner::Stop)
        .await
        .unwrap();
    assert_eq!(none.outcome, CancelOutcome::NotFound);
}

pub async fn keyed_cancel_stop_of_a_queued_owner_just_cancels(h: &Harness) {
    let out = h
        .store
        .replace_scheduled(
            &key("k"),
            job("j", json!([1]), EnqueueOptions::new()),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    let c = h
        .store
        .cancel_scheduled(&key("k"), RunningOwner::Stop)
        .await
        .unwrap();
    assert_eq!(c.outcome, CancelOutcome::Cancelled);
    assert_eq!(h.get(&out.job_id).await.status, JobStatus::Cancelled);
}

pub async fn replace_keeps_or_stops_the_running_owner(h: &Harness) {
    let mut cancels = h.store.subscribe_cancellations();
    let first = h.replace("k", "j", json!([1])).await;
    let run1 = h.claim_id("w", "j", &first.job_id).await;
    // KeepRunning: ownership moves, the previous owner runs on.
    let second = h
        .store
        .replace_scheduled(
            &key("k"),
            job("j", json!([2]), EnqueueOptions::new()),
            RunningOwner::KeepRunning,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            second.previous_job_id.as_deref(),
            second.previous_status,
            second.previous_stopped
        ),
        (
            Some(first.job_id.as_str()),
            Some(JobStatus::HandedOff),
            false
        )
    );
    assert_eq!(h.get(&first.job_id).await.status, JobStatus::HandedOff);
    assert!(h.report(&run1, Outcome::Completed).await);

    // Stop: the running owner is cancelled and its worker told.
    let run2 = h.claim_id("w", "j", &second.job_id).await;
    let before = h.snapshot().await;
    let third = h
        .store
        .replace_scheduled(
            &key("k"),
            job("j", json!([3]), EnqueueOptions::new()),
            RunningOwner::Stop,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            third.previous_job_id.as_deref(),
            third.previous_status,
            third.previous_stopped
        ),
        (
            Some(second.job_id.as_str()),
            Some(JobStatus::HandedOff),
            true
        )
    );
    let after = h.snapshot().await;
    assert_eq!(after.revision, before.revision + 1, "one mutation");
    assert_eq!(after.counts.handed_off, before.counts.handed_off - 1);
    assert_eq!(after.counts.cancelled, before.counts.cancelled + 1);
    assert_eq!(after.counts.queued, before.counts.queued + 1);
    assert_eq!(h.get(&second.job_id).await.status, JobStatus::Cancelled);
    assert_eq!(next_cancel(&mut cancels).await, second.job_id);
    assert!(!h.report(&run2, Outcome::Completed).await);
    let owner = h.store.get_scheduled(&key("k"), false).await.unwrap();
    assert_eq!(
        owner.current_job.map(|j| j.id),
        Some(third.job_id.clone()),
        "the new job owns the key"
    );
    // Stop with a queued previous owner: cancelled as always, not "stopped".
    let fourth = h
        .store
        .replace_scheduled(
            &key("k"),
            job("j", json!([4]), EnqueueOptions::new()),
            RunningOwner::Stop,
        )
        .await
        .unwrap();
    assert_eq!(
        (fourth.previous_status, fourth.previous_stopped),
        (Some(JobStatus::Queued), false)
    );
}

pub async fn a_cancel_through_another_handle_is_seen_by_the_lease_check(h: &Harness) {
    // Another process (a second handle on the same database) cancels; the
    // first handle's lease check sees it whatever the store. In-process
    // stores have no second handle.
    let Some(other) = h.reopen().await else {
        return;
    };
    let id = h.enqueue("j", json!([])).await;
    let run = h.claim_id("w", "j", &id).await;
    other.cancel_job(&id).await.unwrap();
    let lost = h.store.lost_leases(&[lease(&run)]).await.unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].loss, LeaseLoss::Cancelled);
    other.close().await.unwrap();
}
