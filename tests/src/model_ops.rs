//! How one generated operation ([`crate::model_gen::Op`]) is applied to one store.
//! Every result is turned into JSON (errors into `{"error": code}`), so the runner
//! can compare two stores' answers field by field.

use duraq_core::driver::steps::{Turn, Turns};
use duraq_core::driver::{ClaimRequest, Lease, WorkerInfo};
use duraq_core::inspect::{JobFilter, PruneRequest};
use duraq_core::{
    EnqueueOptions, JobStatus, NewJob, NewOperation, Outcome, QueueConfig, QueueName, Result,
    ScheduleKey, Store,
};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::model_gen::{Op, Report, SignalTarget, Spec};
const NAMES: [&str; 2] = ["a", "b"];
const QUEUES: [&str; 2] = ["q0", "q1"];

/// What one store sees of the run so far.
pub struct Ctx<'a> {
    pub store: &'a dyn Store,
    pub now: i64,
    /// The id the next created job gets (`step` based, identical for both stores).
    pub step: usize,
    /// Every job id handed out so far (some were replays and never inserted).
    pub ids: &'a [String],
    /// This store's leases, in the order both stores handed them out.
    pub leases: &'a [Lease],
    /// This store's revision before the first operation (only differences count).
    pub base_revision: i64,
}

fn to_json<T: Serialize>(r: Result<T>) -> Value {
    match r {
        Ok(v) => serde_json::to_value(v).expect("serializable result"),
        Err(e) => json!({"error": e.code().as_str()}),
    }
}

fn new_job(s: &Spec, id: String, now: i64, ids: &[String]) -> Result<NewJob> {
    let mut opts = EnqueueOptions::new()
        .queue(QUEUES[s.queue as usize])
        .max_retries(u32::from(s.max_retries));
    if let Some(at) = s.at {
        opts.scheduled_at_ms = Some((now + at).max(0));
    }
    if let Some(ms) = s.run_in {
        opts.run_in_ms = Some(ms);
    }
    if let Some((k, cap)) = s.cap {
        opts = opts.concurrency(format!("c{k}"), u32::from(cap));
    }
    if let Some(i) = s.idem {
        opts = opts.idempotency_key(format!("i{i}"));
    }
    if s.dedupe {
        opts = opts.deduplicate_while_queued();
    }
    if s.timeout {
        opts = opts.timeout(std::time::Duration::from_secs(1));
    }
    opts.priority = s.priority.map(i64::from);
    opts.cost = s.cost.map(i64::from);
    if s.ephemeral {
        opts = opts.keep_completed(false);
    }
    // Fairness keys follow the args (no draw of their own, so the fixed-seed
    // planted-bug budget keeps its reach): about half the jobs carry one of
    // two keys, and a replay of the same args carries the same key.
    match (s.args, s.name) {
        (1, _) => opts = opts.fairness_key("f0"),
        (2, 1) => opts = opts.fairness_key("f1"),
        _ => {}
    }
    if let Some((k, max, period_ms)) = s.rate {
        opts = opts.rate_limit(
            format!("r{k}"),
            u32::from(max),
            std::time::Duration::from_millis(period_ms as u64),
        );
    }
    for dep in &s.after {
        opts = opts.after(pick(ids, usize::from(*dep)));
    }
    if s.run_on_failure {
        opts = opts.on_dependency_failure(duraq_core::DependencyFailure::Run);
    }
    match s.bad_name {
        Some(0) => opts = opts.queue("q".repeat(256)),
        Some(1) => opts = opts.queue("q\u{1b}[2J"),
        Some(2) => opts = opts.concurrency("c".repeat(256), 1),
        Some(_) => opts = opts.concurrency("c\n1", 1),
        None => {}
    }
    let mut job = NewJob::new(NAMES[s.name as usize], json!([s.args]), opts)?.with_id(id);
    if let Some(parent) = s.parent {
        job = job.child_of(&pick(ids, usize::from(parent)), "s")?;
    }
    match (s.op, s.idem) {
        (Some(op), Some(_)) => job.with_operation(NewOperation {
            key: format!("op{op}"),
            data: json!({"op": op}),
        }),
        _ => Ok(job),
    }
}

/// Queue `q` of the pool, or (2) a name that breaks the rule.
fn queue_name(q: u8) -> Result<QueueName> {
    match QUEUES.get(q as usize) {
        Some(name) => QueueName::new(name),
        None => QueueName::new("q\u{1b}[2J"),
    }
}

fn key(k: u8) -> ScheduleKey {
    ScheduleKey::new(format!("k{}", k % 2)).expect("valid key")
}

/// Keys 2 and 3 of `Replace` / `CancelKey` stop a running owner.
fn running(k: u8) -> duraq_core::RunningOwner {
    if k >= 2 {
        duraq_core::RunningOwner::Stop
    } else {
        duraq_core::RunningOwner::KeepRunning
    }
}

fn claim_request(worker: u8, limit: u8, names: u8, only_q0: bool, config: u8) -> ClaimRequest {
    let job_names = (0..2)
        .filter(|i| names & (1 << i) != 0)
        .map(|i| NAMES[i].to_owned())
        .collect();
    let queue_config = match config {
        0 => BTreeMap::new(),
        1 => BTreeMap::from([(
            "q0".to_owned(),
            QueueConfig {
                max_concurrent: Some(1),
                priority: 0,
            },
        )]),
        _ => BTreeMap::from([
            (
                "q0".to_owned(),
                QueueConfig {
                    max_concurrent: Some(2),
                    priority: 0,
                },
            ),
            (
                "q1".to_owned(),
                QueueConfig {
                    max_concurrent: None,
                    priority: 1,
                },
            ),
        ]),
    };
    // Where the worker's turns stand follows the worker; the widest config
    // weighs key f1 double.
    let after = match worker % 3 {
        0 => None,
        1 => Some(Turn::Unkeyed),
        _ => Some(Turn::Key {
            queue: "q0".into(),
            key: "f0".into(),
        }),
    };
    let weights = if config >= 2 {
        BTreeMap::from([("f1".to_owned(), 2)])
    } else {
        BTreeMap::new()
    };
    ClaimRequest {
        worker_id: format!("w{worker}"),
        job_names,
        queues: only_q0.then(|| vec!["q0".to_owned()]),
        queue_config,
        limit: limit as usize,
        turns: Turns { after, weights },
    }
}

/// The outcome `r` names; a failure's error names the step, so that the error
/// histories the stores keep are compared entry by entry, in order.
fn outcome(r: &Report, step: usize) -> Outcome {
    match r {
        Report::Completed => Outcome::Completed,
        Report::Output => Outcome::CompletedWith {
            output: json!({"step": step}),
        },
        Report::Failed {
            retry_in_ms,
            discard,
        } => Outcome::Failed {
            error: format!("model failure at step {step}"),
            retry_in_ms: *retry_in_ms,
            discard: *discard,
        },
        Report::Reschedule(ms) => Outcome::Reschedule { delay_ms: *ms },
        Report::ReturnToQueue => Outcome::ReturnToQueue,
        // A timeout both sides agree on, past or future as the clocks move.
        Report::AwaitSignal(n) => Outcome::AwaitSignal {
            name: format!("s{n}"),
            until_ms: crate::T0 + 60_000,
        },
        Report::AwaitChild(child) => Outcome::AwaitSignal {
            name: format!("duraq.child.{child}"),
            until_ms: crate::T0 + 60_000,
        },
    }
}

/// Lease `i` (modulo those handed out), its handoff made up when `bogus`;
/// `None` before any claim.
fn chosen_lease(ctx: &Ctx<'_>, i: usize, bogus: bool) -> Option<duraq_core::driver::Lease> {
    let mut lease = ctx.leases.get(i % ctx.leases.len().max(1))?.clone();
    if bogus {
        lease.handoff_id = "bogus".into();
    }
    Some(lease)
}

fn pick(ids: &[String], i: usize) -> String {
    if ids.is_empty() || i % (ids.len() + 1) == ids.len() {
        "missing".into()
    } else {
        ids[i % (ids.len() + 1)].clone()
    }
}

/// Applies `op` to one store and returns its answer as JSON. `Advance` is the
/// runner's business (both clocks move together) and answers `null` here.
pub async fn apply(ctx: &Ctx<'_>, op: &Op) -> Value {
    let s = ctx.store;
    let id = |i: usize| format!("job-{:03}-{i}", ctx.step);
    match op {
        Op::Enqueue(spec) => match new_job(spec, id(0), ctx.now, ctx.ids) {
            Ok(job) => to_json(s.enqueue(job).await),
            Err(e) => to_json::<()>(Err(e)),
        },
        Op::Batch(specs) => {
            let jobs: Result<Vec<_>> = specs
                .iter()
                .enumerate()
                .map(|(i, sp)| new_job(sp, id(i), ctx.now, ctx.ids))
                .collect();
            match jobs {
                Ok(jobs) => to_json(s.enqueue_batch(jobs).await),
                Err(e) => to_json::<()>(Err(e)),
            }
        }
        Op::Replace(k, spec) => match new_job(spec, id(0), ctx.now, ctx.ids) {
            Ok(job) => to_json(s.replace_scheduled(&key(*k), job, running(*k)).await),
            Err(e) => to_json::<()>(Err(e)),
        },
        Op::CancelKey(k) => to_json(s.cancel_scheduled(&key(*k), running(*k)).await),
        Op::WakeKey(k) => to_json(s.wake_scheduled(&key(*k)).await),
        Op::GetKey(k, terminal) => to_json(s.get_scheduled(&key(*k), *terminal).await),
        Op::Claim {
            worker,
            limit,
            names,
            only_q0,
            config,
        } => to_json(
            s.claim(&claim_request(*worker, *limit, *names, *only_q0, *config))
                .await,
        ),
        Op::Report {
            lease,
            report,
            bogus,
            ..
        } => {
            let Some(lease) = chosen_lease(ctx, *lease, *bogus) else {
                return Value::Null;
            };
            // One report, as a worker sends it: a batch of one.
            let reports = vec![(lease, outcome(report, ctx.step))];
            to_json(s.report_batch(reports).await.map(|applied| applied[0]))
        }
        Op::Work {
            worker,
            limit,
            names,
            report,
            stale,
        } => {
            let claimed = match s
                .claim(&claim_request(*worker, *limit, *names, false, 0))
                .await
            {
                Ok(jobs) => jobs,
                Err(e) => return to_json::<()>(Err(e)),
            };
            let mut reports: Vec<_> = claimed
                .iter()
                .map(|j| {
                    (
                        j.lease().expect("claimed jobs are leased"),
                        outcome(report, ctx.step),
                    )
                })
                .collect();
            if *stale {
                let job_id = claimed
                    .first()
                    .map_or_else(|| "missing".to_owned(), |j| j.id.clone());
                reports.push((
                    Lease {
                        job_id,
                        handoff_id: "never".into(),
                    },
                    Outcome::Completed,
                ));
            }
            let reported = to_json(s.report_batch(reports).await);
            json!({"claimed": to_json::<_>(Ok(claimed)), "reported": reported})
        }
        Op::Heartbeat(w) => to_json(s.heartbeat(&format!("w{w}")).await),
        Op::Advance(_) => Value::Null,
        Op::RecoverStale(ms) => to_json(s.recover_stale(*ms).await),
        Op::Prune {
            completed,
            failed,
            cancelled,
            batch,
        } => {
            let req = PruneRequest {
                completed_older_than: completed.map(Duration::from_millis),
                failed_older_than: failed.map(Duration::from_millis),
                cancelled_older_than: cancelled.map(Duration::from_millis),
                batch_size: *batch,
            };
            to_json(s.prune(&req).await)
        }
        Op::RetryJob(i) => to_json(s.retry_job(&pick(ctx.ids, *i)).await),
        Op::RetryNewestUnfinished => {
            let filter = JobFilter {
                statuses: vec![JobStatus::Failed, JobStatus::Cancelled, JobStatus::Orphaned],
                limit: Some(1),
                ..JobFilter::default()
            };
            match s.search_jobs(&filter).await {
                Ok(page) => match page.jobs.first() {
                    Some(job) => to_json(s.retry_job(&job.id).await),
                    None => Value::Null,
                },
                Err(e) => to_json::<()>(Err(e)),
            }
        }
        Op::CancelJob(i) => to_json(s.cancel_job(&pick(ctx.ids, *i)).await),
        Op::GetJob(i) => to_json(s.get_job(&pick(ctx.ids, *i)).await),
        Op::Signal {
            target,
            name,
            payload,
        } => {
            let id = match target {
                SignalTarget::Job(job) => pick(ctx.ids, *job),
                SignalTarget::Lease(i) => ctx.leases[*i].job_id.clone(),
                // No live lease to resolve to: nothing to send.
                SignalTarget::LiveLease(_) => return Value::Null,
            };
            to_json(s.signal(&id, &format!("s{name}"), json!(payload)).await)
        }
        Op::EndWaits => to_json(s.end_timed_out_waits(5).await),
        Op::RecordStep {
            lease,
            name,
            output,
            bogus,
        } => {
            let Some(lease) = chosen_lease(ctx, *lease, *bogus) else {
                return Value::Null;
            };
            // What the worker would carry: whether the leased job keeps its row.
            let keep_completed = match s.get_job(&lease.job_id).await {
                Ok(Some(job)) => job.keep_completed,
                _ => true,
            };
            let write = duraq_core::driver::StepWrite {
                lease,
                attempt: 1,
                name: format!("t{name}"),
                output: json!(output),
                keep_completed,
            };
            to_json(s.record_step(write).await)
        }
        Op::Durable(i) => {
            let id = pick(ctx.ids, *i);
            let steps = to_json(s.job_steps(&id).await);
            let signals = to_json(s.job_signals(&id).await);
            json!({ "steps": steps, "signals": signals })
        }
        Op::List(v) => {
            let filter = match v {
                0 => JobFilter {
                    statuses: vec![JobStatus::Queued],
                    ..JobFilter::default()
                },
                1 => JobFilter {
                    job_name: Some("a".into()),
                    limit: Some(3),
                    ..JobFilter::default()
                },
                2 => JobFilter {
                    queue: Some("q1".into()),
                    ..JobFilter::default()
                },
                _ => JobFilter {
                    statuses: vec![JobStatus::HandedOff],
                    ..JobFilter::default()
                },
            };
            to_json(s.search_jobs(&filter).await.map(|p| p.jobs))
        }
        Op::NextScheduled(v) => {
            let names: Vec<String> = match v {
                0 => vec!["a".into()],
                _ => vec!["a".into(), "b".into()],
            };
            let queues = (*v == 2).then(|| vec!["q1".to_owned()]);
            to_json(s.next_scheduled_at(&names, queues.as_deref()).await)
        }
        Op::StartOperation(k) => to_json(s.start_operation_attempt(&format!("op{k}")).await),
        Op::RecordOperation(k) => to_json(
            s.record_operation_result(&format!("op{k}"), json!({"n": k}))
                .await,
        ),
        Op::Reconcile => to_json(s.reconcile_reservations().await),
        Op::Age {
            queue,
            every_ms,
            max_steps,
        } => {
            let every = std::time::Duration::from_millis(*every_ms);
            let pass = duraq_core::driver::AgingPass {
                queue: QUEUES[*queue as usize].to_owned(),
                aging: duraq_core::PriorityAging::new(every, *max_steps).expect("valid aging"),
                oldest_due_ms: None,
                limit: 1_000,
            };
            to_json(s.age_priorities(&pass).await)
        }
        Op::LostLeases => match s.lost_leases(ctx.leases).await {
            Ok(lost) => json!(lost
                .iter()
                .map(|l| json!([l.lease.job_id, format!("{:?}", l.loss)]))
                .collect::<Vec<_>>()),
            Err(e) => json!({"error": e.code().as_str()}),
        },
        Op::Snapshot => {
            let global = to_json(s.count_snapshot().await.map(|mut snap| {
                snap.revision -= ctx.base_revision;
                snap
            }));
            let queues = to_json(s.queue_snapshot().await.map(|mut snap| {
                snap.revision -= ctx.base_revision;
                snap
            }));
            json!({"global": global, "queues": queues})
        }
        Op::Pause(q) => match queue_name(*q) {
            Ok(queue) => to_json(s.pause_queue(&queue).await),
            Err(e) => to_json::<()>(Err(e)),
        },
        Op::Resume(q) => match queue_name(*q) {
            Ok(queue) => to_json(s.resume_queue(&queue).await),
            Err(e) => to_json::<()>(Err(e)),
        },
        Op::RegisterWorker {
            worker,
            names,
            only_q0,
        } => {
            let info = WorkerInfo {
                worker_id: format!("w{worker}"),
                host: "model".into(),
                pid: u32::from(*worker),
                queues: only_q0.then(|| vec![QUEUES[0].to_owned()]),
                job_names: (0..2)
                    .filter(|i| names & (1 << i) != 0)
                    .map(|i| NAMES[i].to_owned())
                    .collect(),
                slots: u64::from(*names),
            };
            to_json(s.register_worker(&info).await)
        }
        Op::RemoveWorker(w) => to_json(s.remove_worker(&format!("w{w}")).await),
        Op::Workers => json!({
            "workers": to_json(s.list_workers(60_000).await),
            "unhandled": to_json(s.unhandled_jobs(60_000).await),
        }),
    }
}
