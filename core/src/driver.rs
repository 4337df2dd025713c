//! The store author's surface: what a store (or a wrapper around one) needs
//! beyond the application's API at the crate root.
//!
//! A store implements the traits of [`crate::Store`] and keeps no rule of its
//! own: it reads the rows a rule asks for inside its transaction, applies the
//! pure functions of [`transitions`] (one job row) and [`rules`] (several),
//! and persists the answer; where an operation has several steps, core drives
//! them over the store's primitives ([`steps`]). The types here are what the worker runtime and
//! the store speak to each other ([`ClaimRequest`], [`Lease`],
//! [`ReportedAndClaimed`], [`Upkeep`]), the digests and ids a store writes, and
//! [`delegate_store!`](crate::driver::delegate_store) for wrappers. Nothing here is
//! needed to enqueue or run jobs; applications never import this module.

#[path = "rules/mod.rs"]
pub mod rules;
#[path = "steps/mod.rs"]
pub mod steps;
#[path = "transitions.rs"]
pub mod transitions;

pub use crate::aging::AgingPass;
pub use crate::clock::system_clock;
pub use crate::counts::CountChange;
#[doc(inline)]
pub use crate::delegate_store;
pub use crate::digest::{canonical_json, digest_hex, digest_of_canonical, DIGEST_FORMAT};
pub use crate::durable::{step_write, ChildNotice, StepWrite};
pub use crate::error::BoxError;
pub use crate::history::{history_baseline, history_cutoff};
pub use crate::job::{Lease, STATUS_COUNT};
pub use crate::keys::{queue_concurrency_key, QUEUE_CONCURRENCY_PREFIX};
pub use crate::new_job::new_job_id;
pub use crate::progress::{
    clean_line, progress_write, PendingLine, ProgressBatch, ProgressBuffer, ProgressRow,
    ProgressWrite,
};
pub use crate::rate::{rate_log_horizon, RateWindow};
pub use crate::requests::{
    BacklogProgress, ClaimRequest, LeaseLoss, LeaseState, LostLease, ReportedAndClaimed,
};
pub use crate::resolve::id_prefix_bound;
pub use crate::search::{contains_ignoring_case, json_contains};
pub use crate::store::Upkeep;
pub use crate::workers::{unhandled_groups, worker_forget_cutoff_ms, WorkerInfo};
pub use crate::workflow::{workflow_steps, WorkflowPlan, BATCH_CALLBACK};

/// Tells the worker running `ctx`'s attempt that a store reported it as
/// `outcome` on the handler's own transaction (a store's `report_in`), which
/// the application may still commit or roll back. The worker then sends its
/// own report as usual: refused because that transaction committed (the
/// lease is gone), it counts as `outcome` rather than as a lost lease;
/// applied because it rolled back, it stands.
pub fn note_reported_in_transaction(ctx: &crate::JobContext, outcome: crate::Outcome) {
    let mut noted = ctx
        .reported
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *noted = Some(outcome);
}
