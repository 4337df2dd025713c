//! What the model-based suite generates: enqueue requests, reports and the
//! operations themselves, drawn from small pools (two names, two queues, two
//! schedule keys, two idempotency keys, three operation keys) so that keys,
//! scopes, duplicates and caps collide often, and weighted towards the
//! operations that move jobs through their life. Now and then a request asks
//! for a relative delay (`runInMs`, resolved with each store's clock, and part
//! of an idempotent request's digest) or carries a queue name or concurrency
//! key that breaks the name rule, which every store must refuse alike and
//! without writing. Requests carry priorities (an out-of-range one now and then)
//! and rate limits over two keys whose limits differ between requests, so claims
//! meet priorities, saturated keys and `rate-limit-conflict`.

use proptest::prelude::*;

/// One generated enqueue request (indexes pick from small pools so that keys,
/// scopes and duplicates collide often).
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: u8,
    pub args: u8,
    pub queue: u8,
    /// Offset from now in ms; `None` is an immediate enqueue.
    pub at: Option<i64>,
    /// A relative delay (`runInMs`), used only when `at` is `None`.
    pub run_in: Option<i64>,
    /// Breaks the name rule: 0/1 an over-long / escape-carrying queue name,
    /// 2/3 an over-long / newline-carrying concurrency key.
    pub bad_name: Option<u8>,
    pub max_retries: u8,
    /// (key index, cap).
    pub cap: Option<(u8, u8)>,
    pub idem: Option<u8>,
    pub dedupe: bool,
    pub timeout: bool,
    /// Operation key index, used only with an idempotency key.
    pub op: Option<u8>,
    /// Job priority; now and then 101, which every store refuses alike.
    pub priority: Option<i8>,
    /// (rate key index, max starts, period in ms): keys collide with other
    /// limits often, so `rate-limit-conflict` and saturated keys both come up.
    pub rate: Option<(u8, u8, i64)>,
    /// Dependencies: indexes into every job id handed out so far (one past the
    /// end names no job: `dependency-not-found`). Woven in by [`ops`].
    pub after: Vec<u16>,
    /// The job's dependency failure policy is `run` (else `cancel`).
    pub run_on_failure: bool,
    /// Units of its cap and rate it takes; now and then 0, which every store
    /// refuses alike (`invalid-cost`), or more than its own cap.
    pub cost: Option<u8>,
    /// `keepCompleted = false`: the row goes when the job completes.
    pub ephemeral: bool,
    /// A spawned child of the job with this index into every job id handed
    /// out so far (one past the end names no job). Woven in by [`ops`].
    pub parent: Option<u16>,
}

/// How a generated report ends the attempt.
#[derive(Clone, Debug)]
pub enum Report {
    Completed,
    /// Completed with an output naming the step. Woven in by [`ops`].
    Output,
    Failed {
        retry_in_ms: Option<i64>,
        discard: bool,
    },
    Reschedule(i64),
    ReturnToQueue,
    /// A wait for signal `s<n>` (a durable job's `wait_for_signal`).
    AwaitSignal(u8),
    /// A wait for the outcome of the child with this id (a parent's
    /// `spawn_and_wait`). Woven in by [`ops`].
    AwaitChild(String),
}

/// Which job a generated signal goes to.
#[derive(Clone, Debug)]
pub enum SignalTarget {
    /// A job id handed out (or a missing one), as `GetJob` picks it.
    Job(usize),
    /// The job of the live lease a `Report { live: true, lease }` with the
    /// same index would pick: woven in before such a report of a wait, it
    /// is the race of a signal and its wait's report. Resolved before it is
    /// applied into [`SignalTarget::Lease`].
    LiveLease(usize),
    /// The job of lease `i` handed out.
    Lease(usize),
}

#[derive(Clone, Debug)]
pub enum Op {
    Enqueue(Spec),
    Batch(Vec<Spec>),
    /// Key 0 or 1; 2 and 3 are the same keys with `RunningOwner::Stop`.
    Replace(u8, Spec),
    /// Key 0 or 1; 2 and 3 are the same keys with `RunningOwner::Stop`.
    CancelKey(u8),
    WakeKey(u8),
    GetKey(u8, bool),
    /// worker, limit, names mask (1..=3), only queue q0, config variant.
    Claim {
        worker: u8,
        limit: u8,
        names: u8,
        only_q0: bool,
        config: u8,
    },
    /// Index into every lease handed out so far (stale ones included), or, with
    /// `live`, into the leases still current in the reference (the runner resolves
    /// it); `bogus` replaces the handoff id with one that never existed.
    Report {
        lease: usize,
        live: bool,
        report: Report,
        bogus: bool,
    },
    /// A worker cycle: claim (no queue config), then one `report_batch` for every
    /// claimed job plus, with `stale`, a report under a lease that never existed.
    Work {
        worker: u8,
        limit: u8,
        names: u8,
        report: Report,
        stale: bool,
    },
    Heartbeat(u8),
    Advance(i64),
    RecoverStale(i64),
    Prune {
        completed: Option<u64>,
        failed: Option<u64>,
        cancelled: Option<u64>,
        batch: usize,
    },
    RetryJob(usize),
    /// Retries the newest failed, cancelled or orphaned job, if any (so that
    /// retries meet cancelled dependents). Woven in by [`ops`].
    RetryNewestUnfinished,
    CancelJob(usize),
    GetJob(usize),
    /// Delivers signal `s<name>` with payload `payload` to a job.
    Signal {
        target: SignalTarget,
        name: u8,
        payload: u8,
    },
    /// Ends the signal waits whose time is up (the recovery pass's duty).
    EndWaits,
    /// Records step `t<name>` with output `output` under a lease (or a
    /// bogus one).
    RecordStep {
        lease: usize,
        name: u8,
        output: u8,
        bogus: bool,
    },
    /// Reads a job's steps and signals.
    Durable(usize),
    List(u8),
    NextScheduled(u8),
    StartOperation(u8),
    RecordOperation(u8),
    Reconcile,
    /// An aging pass over queue q0 or q1: one step per 1 s or per minute
    /// waited, at most 1 or 5 steps.
    Age {
        queue: u8,
        every_ms: u64,
        max_steps: u8,
    },
    Snapshot,
    /// The lease check over every lease handed out so far (`lost_leases`).
    LostLeases,
    /// Pauses queue q0 or q1 (2: a name that breaks the rule, refused alike).
    /// Woven into a sequence by [`ops`], not drawn by [`op`].
    Pause(u8),
    /// Resumes queue q0 or q1 (2: a name that breaks the rule).
    Resume(u8),
    /// Registers worker `w{worker}` for the names in the `names` mask, in q0
    /// only or every queue. Woven in by [`ops`], like the two below.
    RegisterWorker {
        worker: u8,
        names: u8,
        only_q0: bool,
    },
    /// Removes worker `w{worker}`'s row.
    RemoveWorker(u8),
    /// `list_workers` and `unhandled_jobs` (stale timeout 60 s).
    Workers,
}

fn spec() -> impl Strategy<Value = Spec> {
    let at = prop_oneof![3 => Just(None), 1 => prop::sample::select(vec![-1_000i64, 0, 5_000, 60_000]).prop_map(Some)];
    (
        0u8..2,
        0u8..3,
        0u8..2,
        at,
        0u8..3,
        prop::option::weighted(0.25, (0u8..2, 1u8..3)),
    )
        .prop_flat_map(|(name, args, queue, at, max_retries, cap)| {
            let idem = prop::option::weighted(0.35, 0u8..2);
            let run_in =
                prop::option::weighted(0.1, prop::sample::select(vec![0i64, 0, 5_000, 60_000]));
            (
                idem,
                any::<bool>(),
                prop::bool::weighted(0.15),
                prop::option::weighted(0.5, 0u8..3),
                run_in,
                prop::option::weighted(0.02, 0u8..4),
                prop::option::weighted(
                    0.25,
                    prop::sample::select(vec![-5i8, 0, 7, -5, 0, 7, -5, 0, 7, 101]),
                ),
                prop::option::weighted(
                    0.12,
                    (0u8..2, 1u8..3, prop::sample::select(vec![1_000i64, 30_000])),
                ),
                prop::option::weighted(0.2, prop::sample::select(vec![0u8, 1, 2, 2, 3])),
                prop::bool::weighted(0.2),
            )
                .prop_map(
                    move |(
                        idem,
                        dedupe,
                        timeout,
                        op,
                        run_in,
                        bad_name,
                        priority,
                        rate,
                        cost,
                        ephemeral,
                    )| Spec {
                        name,
                        args,
                        queue,
                        at,
                        run_in: if at.is_none() { run_in } else { None },
                        bad_name,
                        max_retries,
                        cap,
                        idem,
                        dedupe: dedupe && idem.is_none(),
                        timeout,
                        op,
                        priority,
                        rate,
                        after: Vec::new(),
                        run_on_failure: false,
                        cost,
                        ephemeral,
                        parent: None,
                    },
                )
        })
}

fn report() -> impl Strategy<Value = Report> {
    prop_oneof![
        3 => Just(Report::Completed),
        3 => (prop::option::of(prop::sample::select(vec![0i64, 5_000])), prop::bool::weighted(0.2))
            .prop_map(|(retry_in_ms, discard)| Report::Failed { retry_in_ms, discard }),
        1 => prop::sample::select(vec![0i64, 1_000, 60_000]).prop_map(Report::Reschedule),
        1 => Just(Report::ReturnToQueue),
        1 => (0u8..2).prop_map(Report::AwaitSignal),
    ]
}

/// One random operation, weighted towards the ones that move jobs along.
pub fn op() -> impl Strategy<Value = Op> {
    let age = || prop::option::weighted(0.7, prop::sample::select(vec![0u64, 0, 10_000]));
    prop_oneof![
        8 => spec().prop_map(Op::Enqueue),
        1 => prop::collection::vec(spec(), 1..4).prop_map(Op::Batch),
        3 => (0u8..2, spec(), prop::bool::weighted(0.1)).prop_map(|(k, mut s, refused)| {
            if !refused {
                (s.idem, s.dedupe, s.op) = (None, false, None);
            }
            Op::Replace(k, s)
        }),
        1 => (0u8..2).prop_map(Op::CancelKey),
        1 => (0u8..2).prop_map(Op::WakeKey),
        1 => (0u8..2, any::<bool>()).prop_map(|(k, t)| Op::GetKey(k, t)),
        7 => (0u8..3, prop_oneof![1 => Just(0u8), 6 => 1u8..4], 1u8..4, prop::bool::weighted(0.2), 0u8..3)
            .prop_map(|(worker, limit, names, only_q0, config)| Op::Claim { worker, limit, names, only_q0, config }),
        7 => (any::<prop::sample::Index>(), prop::bool::weighted(0.8), report(), prop::bool::weighted(0.1))
            .prop_map(|(i, live, report, bogus)| Op::Report { lease: i.index(1 << 16), live, report, bogus }),
        4 => (0u8..3, 1u8..4, 1u8..4, report(), prop::bool::weighted(0.2))
            .prop_map(|(worker, limit, names, report, stale)| Op::Work { worker, limit, names, report, stale }),
        1 => (0u8..3).prop_map(Op::Heartbeat),
        3 => prop::sample::select(vec![1i64, 1_000, 10_000, 31_000, 61_000, 61_000, 3_600_000]).prop_map(Op::Advance),
        2 => prop::sample::select(vec![30_000i64, 60_000]).prop_map(Op::RecoverStale),
        2 => (age(), age(), age(), 1usize..4)
            .prop_map(|(completed, failed, cancelled, batch)| Op::Prune { completed, failed, cancelled, batch }),
        1 => any::<usize>().prop_map(Op::RetryJob),
        1 => any::<usize>().prop_map(Op::CancelJob),
        1 => any::<usize>().prop_map(Op::GetJob),
        2 => (any::<usize>(), 0u8..2, 0u8..2)
            .prop_map(|(job, name, payload)| Op::Signal { target: SignalTarget::Job(job), name, payload }),
        1 => Just(Op::EndWaits),
        2 => (any::<prop::sample::Index>(), 0u8..2, 0u8..2, prop::bool::weighted(0.1))
            .prop_map(|(i, name, output, bogus)| Op::RecordStep { lease: i.index(1 << 16), name, output, bogus }),
        1 => any::<usize>().prop_map(Op::Durable),
        1 => (0u8..4).prop_map(Op::List),
        1 => (0u8..3).prop_map(Op::NextScheduled),
        1 => (0u8..3).prop_map(Op::StartOperation),
        1 => (0u8..3).prop_map(Op::RecordOperation),
        1 => Just(Op::Reconcile),
        1 => (0u8..2, prop::sample::select(vec![1_000u64, 60_000]), prop::sample::select(vec![1u8, 5]))
            .prop_map(|(queue, every_ms, max_steps)| Op::Age { queue, every_ms, max_steps }),
        1 => Just(Op::Snapshot),
    ]
}

/// A sequence of operations (`len` of them from [`op`]) with up to three pauses
/// (and up to two worker registrations with their listings) woven in, most followed a few steps later by the resume of the same queue,
/// so that claims, worker cycles and timer queries meet paused and resumed
/// queues. Where the pauses go is a function of the drawn operations (a hash of
/// them), not of further random draws: every case draws exactly the operations
/// it would draw without pauses, so the fixed-seed budget of
/// `tests/model_detects_bugs.rs` keeps its reach, and shrinking the operations
/// re-weaves the pauses.
pub fn ops(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), len)
        .prop_map(weave_signals)
        .prop_map(weave_pauses)
        .prop_map(weave_cancels)
        .prop_map(weave_dependencies)
}

/// Gives about a quarter of the enqueues (batches included) one to three
/// dependencies on jobs handed out before, a quarter of those the `run`
/// policy, and turns about a third of the completions into completions with an
/// output: random DAGs with random outcomes, checked against the reference.
/// About one in six single enqueues without dependencies becomes a spawned
/// child of a job handed out before, and half the waits after it wait for
/// the newest such child's outcome.
/// Woven like [`weave_pauses`], without extra draws.
fn weave_dependencies(mut ops: Vec<Op>) -> Vec<Op> {
    let mut next = hashed(&ops);
    let with_deps = |spec: &mut Spec, next: &mut dyn FnMut(u64) -> u64| {
        if next(4) == 0 {
            spec.after = (0..=next(3)).map(|_| next(1 << 16) as u16).collect();
            spec.run_on_failure = next(4) == 0;
        }
    };
    let mut newest_child: Option<String> = None;
    for (at, op) in ops.iter_mut().enumerate() {
        match op {
            Op::Enqueue(spec) => {
                with_deps(spec, &mut next);
                if spec.after.is_empty() && next(6) == 0 {
                    spec.parent = Some(next(1 << 16) as u16);
                    // The id `model::run_case` hands this op's job.
                    newest_child = Some(format!("job-{at:03}-0"));
                }
            }
            Op::Batch(specs) => specs.iter_mut().for_each(|s| with_deps(s, &mut next)),
            Op::Report { report, .. } | Op::Work { report, .. }
                if matches!(report, Report::Completed) && next(3) == 0 =>
            {
                *report = Report::Output;
            }
            Op::Report { report, .. } if matches!(report, Report::AwaitSignal(_)) => {
                if let (Some(child), 0) = (&newest_child, next(2)) {
                    *report = Report::AwaitChild(child.clone());
                }
            }
            _ => {}
        }
    }
    // At the end, so the sequence before them runs as drawn.
    for _ in 0..next(3) {
        ops.push(Op::RetryNewestUnfinished);
    }
    ops
}

/// A deterministic generator seeded by a hash of `ops` (xorshift64): no draw
/// from the runner's RNG.
fn hashed(ops: &[Op]) -> impl FnMut(u64) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{ops:?}").hash(&mut hasher);
    let mut state = hasher.finish() | 1;
    move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

/// Turns about a third of the keyed cancels and replacements into ones that
/// stop a running owner (`RunningOwner::Stop`, keys 2 and 3) and weaves in up to
/// three lease checks (`lost_leases` over every lease handed out), the same way
/// as [`weave_pauses`]: no extra draws.
fn weave_cancels(mut ops: Vec<Op>) -> Vec<Op> {
    let mut next = hashed(&ops);
    for op in ops.iter_mut() {
        match op {
            Op::CancelKey(k) | Op::Replace(k, _) if next(3) == 0 => *k += 2,
            _ => {}
        }
    }
    for _ in 0..next(4) {
        let at = next(ops.len() as u64 + 1) as usize;
        ops.insert(at, Op::LostLeases);
    }
    ops
}

/// Sends half the waits' signals just before the wait is reported, to the
/// job whose lease reports it (the race a store settles with the job row
/// locked).
fn weave_signals(ops: Vec<Op>) -> Vec<Op> {
    let mut next = hashed(&ops);
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        if let Op::Report {
            lease,
            live: true,
            report: Report::AwaitSignal(name),
            ..
        } = &op
        {
            if next(2) == 0 {
                let target = SignalTarget::LiveLease(*lease);
                out.push(Op::Signal {
                    target,
                    name: *name,
                    payload: 0,
                });
            }
        }
        out.push(op);
    }
    out
}

fn weave_pauses(mut ops: Vec<Op>) -> Vec<Op> {
    let mut next = hashed(&ops);
    for _ in 0..next(4) {
        let at = next(ops.len() as u64 + 1) as usize;
        let queue = if next(10) == 0 { 2 } else { next(2) as u8 };
        ops.insert(at, Op::Pause(queue));
        if next(5) != 0 {
            let end = (at + 2 + next(7) as usize).min(ops.len());
            ops.insert(end, Op::Resume(queue));
        }
    }
    // Worker registrations, each followed a few steps later by a listing (and
    // sometimes the worker's removal), woven the same way.
    for _ in 0..next(3) {
        let at = next(ops.len() as u64 + 1) as usize;
        let worker = next(3) as u8;
        let (names, only_q0) = (next(4) as u8, next(2) == 0);
        ops.insert(
            at,
            Op::RegisterWorker {
                worker,
                names,
                only_q0,
            },
        );
        let list = (at + 1 + next(6) as usize).min(ops.len());
        ops.insert(list, Op::Workers);
        if next(3) == 0 {
            let end = (list + 1 + next(4) as usize).min(ops.len());
            ops.insert(end, Op::RemoveWorker(worker));
        }
    }
    ops
}
