//! The rules that decide what happens to several rows at once, written once.
//!
//! [`crate::transitions`] holds what happens to one row; this module holds the
//! decisions that read more than one: the enqueue sequence (replay, dedupe,
//! checks, insert), what a schedule key's replace, cancel and wake do to its
//! owner, claim admission (cap, rate limit, reservation, postponement, in that
//! order), what a moved row gives back, prune batching, the walk of a search within its scan budget,
//! dependencies: how a dependent starts and the bounded release of a finished
//! job's dependents.
//! They are plain functions and plain data over what
//! a store has read: no I/O, no async. A store fetches the rows a rule needs
//! inside its transaction, asks, and persists the answer in the same
//! transaction; SQL and locking are the store's, the decision is never.
//! Where the order of the steps is itself the rule (the enqueue), core drives
//! the store's primitives instead: [`crate::steps`].

mod claim;
mod dependencies;
mod dependent;
mod enqueue;
mod give_back;
mod levels;
mod prune;
mod release;
mod schedule;
mod search;

pub use crate::durable::{check_signal, plan_signal, SignalPlan};
pub use claim::{Admission, AdmissionRead, ClaimAdmission, LeaveReason, SequenceHead};
pub use dependencies::{
    apply_start, dependency_not_found, reopen, reopened_open_count, start_of,
    was_cancelled_by_dependency, DependencyStart, CANCELLED_BY_DEPENDENCY,
};
pub use dependent::{apply_dependent_change, DependentChange, DependentEdge, DependentRow};
pub use enqueue::{check_cap, is_duplicate_of, operation_key_taken, replay_owned_scope};
pub use give_back::{give_back, GiveBack};
pub use levels::{claim_levels, QueueSet};
pub use prune::{is_prunable, prune_order, PruneRun};
pub use release::{
    BacklogEntry, BacklogWrite, DependencyRelease, Finished, ReleaseStep, RELEASE_BATCH,
};
pub use schedule::{
    check_replacement, owner_on_cancel, owner_on_replace, owner_on_wake, OwnerFate,
};
pub use search::{SearchScan, SEARCH_CHUNK};
