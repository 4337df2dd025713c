//! The model-based property suite: proptest generates sequences of 10
//! to 40 operations — enqueue (plain, scheduled, delayed by `runInMs`, capped,
//! idempotent with or without an operation record, dedupe-while-queued, batches,
//! now and then with a queue name or concurrency key that breaks the name rule), replace/cancel/wake/get on
//! two schedule keys, claims with limits, name/queue filters and queue caps and
//! priorities, reports (completed, failed with default/overridden backoff or
//! discard, reschedule, return-to-queue) under a current lease or any lease handed
//! out so far (stale and bogus ones included), worker cycles (claim +
//! `report_batch`), heartbeats, clock advances and `recover_stale`
//! (heartbeat loss), prune, operator retry/cancel, get/list, timer queries,
//! operation stamps and results, reconcile and snapshots, pause and resume of
//! either queue (so claims, worker cycles and timer queries meet paused queues,
//! and every snapshot compares the paused flags), fair turns (about half the
//! jobs carry one of two fairness keys, chosen by their args; a claim's place
//! in the round and a key's weight follow its worker and config), spawned
//! children (a child's end delivers its outcome to its parent, which may wait
//! for it) — and applies
//! each to the store under test and to `MemoryStore`, the reference.
//!
//! After every step it compares the two answers, the published count deltas
//! (revisions relative to each store's start), the snapshot and every job row
//! (every field, the error history `errors` included: each failure's message
//! names its step, so entries are compared in order); at
//! the end also both schedule keys and every operation record. Both stores get the
//! same job ids (`NewJob::with_id`) and identically driven `ManualClock`s; the
//! lease ids each store makes differ, so `handoffId`s are masked by the order in
//! which the two stores handed them out.
//!
//! Cases: 64 per store by default (`PROPTEST_CASES` overrides; `DURAQ_MODEL_OPS`
//! sets the maximum sequence length): under a second for `MemoryStore`, about ten
//! seconds for SQLite (debug build, two cores). Each run draws a fresh seed;
//! `tests/model_detects_bugs.rs` runs a fixed seed against planted bugs so the
//! generator cannot silently lose its reach. 600 SQLite cases passed when written.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};

use crate::model_gen::{ops, Op};
use crate::model_ops::apply;
use crate::model_side::{new_ids, register_claim, resolve_live_lease, Side};
use crate::{MemoryFactory, StoreFactory};

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs the property suite: stores from `factory` against `MemoryStore`, with a
/// fresh random seed each run. Panics with the (shrunk) failing sequence when the
/// two disagree.
pub fn check_against_reference<F: StoreFactory>(factory: F) {
    check_with(factory, env_or("PROPTEST_CASES", 64), false);
}

/// Like [`check_against_reference`] with `cases` cases; `deterministic` fixes the
/// seed (for tests of the suite itself, which must not depend on luck).
pub fn check_with<F: StoreFactory>(factory: F, cases: u32, deterministic: bool) {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let max_ops = env_or("DURAQ_MODEL_OPS", 40) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = if deterministic {
        TestRunner::new_with_rng(
            config.clone(),
            TestRng::deterministic_rng(config.rng_algorithm),
        )
    } else {
        TestRunner::new(config)
    };
    let strategy = ops((max_ops / 4).max(1)..=max_ops);
    if let Err(err) = runner.run(&strategy, |ops| rt.block_on(run_case(&factory, &ops))) {
        panic!("store disagrees with the reference model: {err}");
    }
}

async fn run_case(factory: &dyn StoreFactory, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut reference = Side::new(&MemoryFactory).await;
    let mut sut = Side::new(factory).await;
    let mut ids: Vec<String> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        if let Op::Advance(ms) = op {
            reference.clock.advance(*ms);
            sut.clock.advance(*ms);
        }
        let resolved = resolve_live_lease(&reference, op).await;
        let op = resolved.as_ref().unwrap_or(op);
        let r = apply(&reference.ctx(step, &ids), op).await;
        let s = apply(&sut.ctx(step, &ids), op).await;
        match op {
            Op::Claim { .. } => register_claim(&mut reference, &mut sut, &r, &s),
            Op::Work { .. } => {
                register_claim(&mut reference, &mut sut, &r["claimed"], &s["claimed"])
            }
            _ => {}
        }
        let history = || format!("step {step} of {ops:#?}");
        prop_assert_eq!(
            reference.mask(r),
            sut.mask(s),
            "answer to {:?} at {}",
            op,
            history()
        );
        prop_assert_eq!(
            reference.drain_deltas().await,
            sut.drain_deltas().await,
            "deltas after {:?} at {}",
            op,
            history()
        );
        prop_assert_eq!(
            reference.state().await,
            sut.state().await,
            "state after {:?} at {}",
            op,
            history()
        );
        ids.extend((0..new_ids(op)).map(|i| format!("job-{step:03}-{i}")));
    }
    prop_assert_eq!(
        reference.keys_and_operations().await,
        sut.keys_and_operations().await,
        "keys and operations at the end"
    );
    Ok(())
}
