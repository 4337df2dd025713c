//! Visible workers: a registered worker is listed (by id) with what it
//! registered, its start time, its last heartbeat, its state (alive or stale at
//! the recovery boundary) and the jobs handed off to it; registering again
//! replaces the registration; removing forgets it (and frees its leases for
//! recovery); ids that only claimed are not listed; none of it is a count
//! mutation. The due-job groups read the oldest due queued jobs, and the
//! unhandled ones are those no alive worker claims (a typo'd name, a queue
//! nobody serves). Recovery forgets workers last heard from a day ago.

use duraq_core::driver::WorkerInfo;
use duraq_core::inspect::{DueJobGroup, WorkerRecord, WorkerState};
use duraq_core::EnqueueOptions;
use serde_json::json;

use crate::harness::{Harness, WireOptions};

const STALE: i64 = 60_000;

fn info(id: &str, queues: Option<&[&str]>, names: &[&str]) -> WorkerInfo {
    WorkerInfo {
        worker_id: id.into(),
        host: format!("host-of-{id}"),
        pid: 4_000_000_000,
        queues: queues.map(|qs| qs.iter().map(|q| q.to_string()).collect()),
        job_names: names.iter().map(|n| n.to_string()).collect(),
        slots: 7,
    }
}

async fn register(h: &Harness, info: &WorkerInfo) {
    h.store
        .register_worker(info)
        .await
        .expect("register_worker");
}

async fn workers(h: &Harness) -> Vec<WorkerRecord> {
    h.store.list_workers(STALE).await.expect("list_workers")
}

fn group(queue: &str, name: &str, due: u64, oldest: i64) -> DueJobGroup {
    DueJobGroup {
        queue: queue.into(),
        job_name: name.into(),
        due,
        oldest_scheduled_at_ms: oldest,
    }
}

/// `(queue, job name)` of every group.
fn pairs(groups: &[DueJobGroup]) -> Vec<(&str, &str)> {
    groups
        .iter()
        .map(|g| (g.queue.as_str(), g.job_name.as_str()))
        .collect()
}

pub async fn registered_workers_are_listed_with_state_and_running_jobs(h: &Harness) {
    let before = h.state().await;
    let b = info("w-b", Some(&["mail", "b\u{e9}"]), &["send"]);
    register(h, &b).await;
    h.advance(10);
    let a = info("w-a", None, &["resize", "send"]);
    register(h, &a).await;
    h.assert_unchanged(&before, "registering").await;

    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(h.enqueue("resize", json!([n])).await);
    }
    ids.sort();
    let claimed = h.claim("w-a", &["resize"], 2).await;
    assert_eq!(claimed.len(), 2);
    // An id that claims without registering heartbeats but is not listed.
    assert_eq!(h.claim("w-unregistered", &["resize"], 1).await.len(), 1);

    let listed = workers(h).await;
    assert_eq!(
        listed.iter().map(|w| w.info.clone()).collect::<Vec<_>>(),
        vec![a.clone(), b.clone()],
        "registered workers by id, exactly as registered"
    );
    let (wa, wb) = (&listed[0], &listed[1]);
    assert_eq!(
        (wa.started_at_ms, wb.started_at_ms),
        (h.now(), h.now() - 10)
    );
    assert_eq!(wa.last_heartbeat_ms, h.now(), "claims heartbeat");
    assert_eq!(wb.last_heartbeat_ms, h.now() - 10);
    assert_eq!(
        (wa.state, wb.state),
        (WorkerState::Alive, WorkerState::Alive)
    );
    let mut running: Vec<_> = claimed.iter().map(|j| j.id.clone()).collect();
    running.sort();
    assert_eq!(
        wa.running.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        running,
        "the jobs handed off to it, by id"
    );
    assert!(wa.running.iter().all(|r| r.job_name == "resize"));
    assert!(wb.running.is_empty());

    // Stale exactly past the recovery boundary; a heartbeat makes it alive again.
    h.advance(STALE);
    let listed = workers(h).await;
    assert_eq!(
        (listed[0].state, listed[1].state),
        (WorkerState::Alive, WorkerState::Stale)
    );
    h.advance(1);
    assert_eq!(workers(h).await[0].state, WorkerState::Stale);
    h.store.heartbeat("w-a").await.expect("heartbeat");
    let listed = workers(h).await;
    assert_eq!(
        (
            listed[0].state,
            listed[0].last_heartbeat_ms,
            listed[0].started_at_ms
        ),
        (WorkerState::Alive, h.now(), h.now() - STALE - 1),
        "a heartbeat moves only the heartbeat"
    );
}

pub async fn registering_again_replaces_and_removing_forgets(h: &Harness) {
    register(h, &info("w", Some(&["a"]), &["x"])).await;
    let id = h.enqueue("x", json!([])).await;
    h.claim_id("w", "x", &id).await;
    h.advance(5);
    let again = info("w", None, &["x", "y"]);
    register(h, &again).await;
    let listed = workers(h).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].info, again);
    assert_eq!(listed[0].started_at_ms, h.now(), "a new start");
    assert_eq!(
        listed[0].running.len(),
        1,
        "its lease survives re-registering"
    );

    let before = h.state().await;
    assert!(h.store.remove_worker("w").await.expect("remove_worker"));
    assert!(workers(h).await.is_empty());
    assert!(!h.store.remove_worker("w").await.expect("remove_worker"));
    h.assert_unchanged(&before, "removing").await;
    // With no heartbeat row, its lease is recoverable at once.
    assert_eq!(
        h.store.recover_stale(STALE).await.expect("recover_stale"),
        vec![id]
    );
}

pub async fn due_job_names_groups_the_oldest_due_jobs(h: &Harness) {
    let t = h.now();
    h.enqueue("b", json!([1])).await;
    h.advance(1);
    let mail = EnqueueOptions::new().queue("mail");
    h.enqueue_with("a", json!([2]), mail.clone()).await;
    h.enqueue("b", json!([3])).await;
    h.enqueue("a", json!([4])).await;
    let later = EnqueueOptions::new().scheduled_at_ms(h.now() + 1_000);
    h.enqueue_with("c", json!([5]), later).await;
    let running = h.enqueue("d", json!([6])).await;
    h.claim_id("w", "d", &running).await;

    let groups = h.store.due_job_names(100).await.expect("due_job_names");
    assert_eq!(
        groups,
        vec![
            group("default", "a", 1, t + 1),
            group("default", "b", 2, t),
            group("mail", "a", 1, t + 1),
        ],
        "due queued jobs only, by queue then name"
    );
    let oldest = h.store.due_job_names(1).await.expect("due_job_names");
    assert_eq!(
        oldest,
        vec![group("default", "b", 1, t)],
        "the oldest first"
    );
    h.advance(1_000);
    let groups = h.store.due_job_names(100).await.expect("due_job_names");
    assert!(pairs(&groups).contains(&("default", "c")), "due now");
}

async fn unhandled(h: &Harness) -> Vec<(String, String)> {
    let groups = h.store.unhandled_jobs(STALE).await.expect("unhandled_jobs");
    pairs(&groups)
        .into_iter()
        .map(|(q, n)| (q.to_owned(), n.to_owned()))
        .collect()
}

pub async fn unhandled_jobs_are_those_no_alive_worker_claims(h: &Harness) {
    let mail = EnqueueOptions::new().queue("mail");
    h.enqueue("send", json!([])).await;
    h.enqueue("snd", json!([])).await; // the typo
    h.enqueue_with("send", json!([]), mail).await;
    let all = vec![
        ("default".to_owned(), "send".to_owned()),
        ("default".to_owned(), "snd".to_owned()),
        ("mail".to_owned(), "send".to_owned()),
    ];
    assert_eq!(unhandled(h).await, all, "no worker at all");

    register(h, &info("w1", Some(&["default"]), &["send"])).await;
    assert_eq!(
        unhandled(h).await,
        all[1..].to_vec(),
        "the typo, and the queue nobody serves"
    );
    h.advance(STALE + 1);
    assert_eq!(unhandled(h).await, all, "a stale worker handles nothing");
    register(h, &info("w2", None, &["send", "snd"])).await;
    assert!(unhandled(h).await.is_empty());
}

pub async fn recovery_forgets_workers_gone_for_a_day(h: &Harness) {
    use duraq_core::limits::FORGET_WORKERS_AFTER_MS;
    register(h, &info("old", None, &["x"])).await;
    h.advance(1);
    register(h, &info("young", None, &["x"])).await;
    h.advance(FORGET_WORKERS_AFTER_MS);
    let before = h.state().await;
    assert!(h
        .store
        .recover_stale(STALE)
        .await
        .expect("recover_stale")
        .is_empty());
    h.assert_unchanged(&before, "forgetting workers").await;
    let left: Vec<_> = workers(h)
        .await
        .into_iter()
        .map(|w| w.info.worker_id)
        .collect();
    assert_eq!(
        left,
        ["young"],
        "exactly a day old is kept, older is forgotten"
    );
    // A stale timeout longer than a day keeps a row as long as its worker may be alive.
    h.advance(1);
    h.store
        .recover_stale(FORGET_WORKERS_AFTER_MS + 10)
        .await
        .expect("recover_stale");
    assert_eq!(workers(h).await.len(), 1);
    h.store.recover_stale(STALE).await.expect("recover_stale");
    assert!(workers(h).await.is_empty());
}
