//! Spawned children (`docs/durable.md`, "Children"). Store level: every way
//! a child finishes (a plain completion, one with an output, a failure, an
//! operator's cancel, a bulk cancel) delivers its outcome to its parent as
//! signal `duraq.child.<id>` in the same transaction, waking a parent that
//! waits for it and keeping it for one that does not wait yet; a parent that
//! is gone or finished changes nothing and fails nothing. Through the
//! worker's attempt path: the child is enqueued once across the parent's
//! replays, its output comes back typed, and a failed child is the parent's
//! to judge.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duraq_core::inspect::BulkAction;
use duraq_core::{
    ChildOutcome, EnqueueOptions, ErrorCode, Job, JobContext, JobError, JobResult, JobStatus,
    NewJob, Outcome, Registry, Worker,
};
use serde_json::{json, Value};

use crate::harness::{expect_invalid, job, Harness};

/// A running parent named `name`.
async fn running_parent(h: &Harness, name: &str) -> Job {
    let id = h.enqueue(name, json!([])).await;
    h.claim_id("w-parent", name, &id).await
}

/// Child `step` of `parent`, enqueued (not claimed).
async fn child(h: &Harness, parent: &str, step: &str) -> String {
    let new = job("c-child", json!({ "step": step }), EnqueueOptions::new());
    h.insert(new.child_of(parent, step).unwrap()).await
}

/// Reports `parent`'s wait for `child`'s outcome.
async fn wait_for_child(h: &Harness, parent: &Job, child: &str) -> bool {
    let wait = Outcome::AwaitSignal {
        name: format!("duraq.child.{child}"),
        until_ms: h.now() + 3_600_000,
    };
    h.report(parent, wait).await
}

/// What `parent` received from `child`, if anything.
async fn notice(h: &Harness, parent: &str, child: &str) -> Option<Value> {
    let name = format!("duraq.child.{child}");
    let all = h.store.job_signals(parent).await.expect("job_signals");
    all.into_iter().find(|s| s.name == name).map(|s| s.payload)
}

fn outcome(child: &str, status: &str, output: Value, error: Value) -> Value {
    json!({ "jobId": child, "status": status, "output": output, "lastError": error })
}

pub async fn every_end_of_a_child_reaches_its_parent(h: &Harness) {
    // A plain completion wakes the parent that waits for it.
    let p1 = running_parent(h, "c-p1").await;
    let c1 = child(h, &p1.id, "plain").await;
    assert_eq!(h.get(&c1).await.parent_id.as_deref(), Some(p1.id.as_str()));
    assert!(wait_for_child(h, &p1, &c1).await);
    assert_eq!(h.get(&p1.id).await.status, JobStatus::Pending);
    let running = h.claim_id("w", "c-child", &c1).await;
    h.advance(10);
    assert!(h.report(&running, Outcome::Completed).await);
    let woken = h.get(&p1.id).await;
    assert_eq!(
        (woken.status, woken.scheduled_at_ms, woken.awaiting_signal),
        (JobStatus::Queued, h.now(), None)
    );
    let done = outcome(&c1, "completed", Value::Null, Value::Null);
    assert_eq!(notice(h, &p1.id, &c1).await, Some(done));

    // An output comes along; a parent still running keeps it for its wait.
    let p2 = running_parent(h, "c-p2").await;
    let c2 = child(h, &p2.id, "output").await;
    let running = h.claim_id("w", "c-child", &c2).await;
    let with_output = Outcome::CompletedWith {
        output: json!({"url": "s3://x"}),
    };
    assert!(h.report(&running, with_output).await);
    assert_eq!(h.get(&p2.id).await.status, JobStatus::HandedOff);
    let done = outcome(&c2, "completed", json!({"url": "s3://x"}), Value::Null);
    assert_eq!(notice(h, &p2.id, &c2).await, Some(done));
    assert!(wait_for_child(h, &p2, &c2).await);
    assert_eq!(h.get(&p2.id).await.status, JobStatus::Queued, "runs again");

    // A failure, an operator's cancel and a bulk cancel reach it too.
    let p3 = running_parent(h, "c-p3").await;
    let failed = child(h, &p3.id, "failed").await;
    let cancelled = child(h, &p3.id, "cancelled").await;
    let bulk = child(h, &p3.id, "bulk").await;
    let running = h.claim_id("w", "c-child", &failed).await;
    let discard = Outcome::Failed {
        error: "no paper".into(),
        retry_in_ms: None,
        discard: true,
    };
    assert!(h.report(&running, discard).await);
    h.store.cancel_job(&cancelled).await.unwrap();
    let batch = h
        .store
        .act_on_jobs(BulkAction::Cancel, std::slice::from_ref(&bulk));
    assert_eq!(batch.await.unwrap().changed, 1);
    let expected = [
        (
            &failed,
            outcome(&failed, "failed", Value::Null, json!("no paper")),
        ),
        (
            &cancelled,
            outcome(&cancelled, "cancelled", Value::Null, Value::Null),
        ),
        (&bulk, outcome(&bulk, "cancelled", Value::Null, Value::Null)),
    ];
    for (id, want) in expected {
        let mut got = notice(h, &p3.id, id).await.expect("delivered");
        if got["lastError"] != json!("no paper") {
            got["lastError"] = Value::Null; // a cancel's reason is its own
        }
        assert_eq!(got, want);
    }
    assert_eq!(h.get(&p3.id).await.status, JobStatus::HandedOff);
}

pub async fn a_gone_or_finished_parent_does_not_hold_up_its_child(h: &Harness) {
    let parent = h.enqueue("c-parent", json!([])).await;
    let c = child(h, &parent, "late").await;
    h.store.cancel_job(&parent).await.unwrap();
    let running = h.claim_id("w", "c-child", &c).await;
    assert!(h.report(&running, Outcome::Completed).await);
    assert_eq!(h.get(&c).await.status, JobStatus::Completed);
    assert_eq!(h.get(&parent).await.status, JobStatus::Cancelled);
    assert_eq!(
        notice(h, &parent, &c).await,
        None,
        "a finished job takes none"
    );

    let gone = h.enqueue("c-parent", json!([])).await;
    let orphan = child(h, &gone, "orphan").await;
    h.store.cancel_job(&gone).await.unwrap();
    let batch = h
        .store
        .act_on_jobs(BulkAction::Delete, std::slice::from_ref(&gone));
    assert_eq!(batch.await.unwrap().changed, 1);
    let running = h.claim_id("w", "c-child", &orphan).await;
    assert!(h.report(&running, Outcome::Completed).await);
    assert_eq!(h.get(&orphan).await.status, JobStatus::Completed);
    let counts = h.snapshot().await.counts;
    assert_eq!((counts.completed, counts.cancelled), (2, 1));
}

pub async fn a_signal_name_of_duraqs_own_is_refused(h: &Harness) {
    let id = h.enqueue("c-parent", json!([])).await;
    let before = h.state().await;
    let spoof = h.store.signal(&id, "duraq.child.x", json!({}));
    expect_invalid(spoof.await, ErrorCode::InvalidSignal);
    h.assert_unchanged(&before, "a refused signal").await;
    let bad = NewJob::new(
        "c-child",
        json!([]),
        EnqueueOptions::new().after(id.as_str()),
    );
    let refused = bad.unwrap().child_of(&id, "s").map(|_| ());
    expect_invalid(refused, ErrorCode::UnsupportedOption);
}

/// A worker whose `c-parent` spawns a `c-child` (which returns its args'
/// `n` plus one, counting its runs) and fails once after the child's
/// outcome came back; `c-judge` spawns a child that fails and completes
/// with what it made of it.
fn family(h: &Harness, child_runs: Arc<AtomicUsize>) -> Worker {
    let failed_once = Arc::new(AtomicUsize::new(0));
    let registry = Registry::new()
        .register_fn("c-child", move |_ctx: JobContext, args: Value| {
            let runs = child_runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                match args["n"].as_i64() {
                    Some(n) => JobResult::output(&(n + 1)),
                    None => Err(JobError::new("no n").discard()),
                }
            }
        })
        .unwrap()
        .register_fn("c-parent", move |ctx: JobContext, _args| {
            let failed_once = failed_once.clone();
            async move {
                let new = NewJob::new("c-child", json!({"n": 41}), EnqueueOptions::new())
                    .map_err(JobError::new)?;
                let n: i64 = ctx.spawn_and_wait("add", new).await?.into_output()?;
                if failed_once.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(JobError::new("flaky").retry_in(Duration::ZERO));
                }
                JobResult::output(&n)
            }
        })
        .unwrap()
        .register_fn("c-judge", |ctx: JobContext, _args| async move {
            let new =
                NewJob::new("c-child", json!({}), EnqueueOptions::new()).map_err(JobError::new)?;
            let child: ChildOutcome<i64> = ctx.spawn_and_wait("bad", new).await?;
            JobResult::output(&json!([child.status, child.last_error]))
        })
        .unwrap();
    h.worker(registry)
}

/// Runs rounds of `w` until job `id` is finished (each round's jobs all
/// end or wait, so a few rounds suffice).
async fn run_until_finished(h: &Harness, w: &Worker, id: &str) -> Job {
    for _ in 0..10 {
        w.run_due(10).await.unwrap();
        let job = h.get(id).await;
        if job.status.is_terminal() {
            return job;
        }
    }
    panic!(
        "job {id} did not finish in ten rounds: {:?}",
        h.get(id).await
    );
}

pub async fn a_child_is_spawned_once_across_its_parents_replays(h: &Harness) {
    let child_runs = Arc::new(AtomicUsize::new(0));
    let w = family(h, child_runs.clone());
    let parent = h.enqueue("c-parent", json!([])).await;
    let round = w.run_due(10).await.unwrap();
    assert_eq!(round.totals.rescheduled, 1, "the parent waits");
    let waiting = h.get(&parent).await;
    assert_eq!((waiting.status, waiting.attempts), (JobStatus::Pending, 0));
    let done = run_until_finished(h, &w, &parent).await;
    assert_eq!(
        (done.status, done.output, done.attempts),
        (JobStatus::Completed, Some(json!(42)), 2),
        "one failure after the child, replayed"
    );
    let children: Vec<Job> = (h.jobs().await.into_iter())
        .filter(|j| j.job_name == "c-child")
        .collect();
    assert_eq!(children.len(), 1, "enqueued once");
    assert_eq!(child_runs.load(Ordering::SeqCst), 1);
    let c = &children[0];
    assert_eq!(c.parent_id.as_deref(), Some(parent.as_str()));
    let key = format!("duraq.child.{parent}.add");
    assert_eq!(c.idempotency_key.as_deref(), Some(key.as_str()));
    let mut steps: Vec<String> = (h.store.job_steps(&parent).await.unwrap())
        .into_iter()
        .map(|s| s.name)
        .collect();
    steps.sort_unstable();
    let signal = format!("duraq.child.{}", c.id);
    assert_eq!(
        steps,
        [
            format!("duraq.signal.{signal}"),
            "duraq.spawn.add".to_owned(),
            format!("duraq.wait.{signal}"),
        ]
    );
}

pub async fn a_failed_child_is_its_parents_to_judge(h: &Harness) {
    let w = family(h, Arc::new(AtomicUsize::new(0)));
    let parent = h.enqueue("c-judge", json!([])).await;
    let done = run_until_finished(h, &w, &parent).await;
    assert_eq!(
        (done.status, done.output),
        (JobStatus::Completed, Some(json!(["failed", "no n"])))
    );
}
