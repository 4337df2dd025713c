//! Durable execution inside an ordinary job: a handler that runs again from
//! its start on every attempt, and reads back what it already did instead of
//! doing it again.
//!
//! Why replay and not a saved stack: a Rust future cannot be stored, but its
//! inputs can. Each [`JobContext::step`](crate::JobContext::step) stores its
//! output with the job (`duraq_job_steps`, a row per job and step name) before
//! it returns; a later attempt that reaches the same step gets that output
//! back without running the closure. A durable sleep is a step that stores
//! when it ends, and ends the attempt until then: the slot is free, no retry
//! is used, and the next attempt replays the steps before it in no time.
//!
//! What this asks of a handler: between its steps it is deterministic (the
//! same args and step outputs lead to the same next step), and a side effect
//! lives inside a step. A step is at least once: a crash after its side effect
//! and before its record runs it again. It is exactly once when the side
//! effect is a write to the same database made in the transaction that
//! records the step.
//!
//! A wait for a signal is the same idea: the handler asks for the signal;
//! when it is not there yet the attempt ends and the job waits as `pending`
//! (no slot, no retry) until the signal arrives or the wait times out, and
//! the next attempt replays up to the wait and reads it. What the wait
//! returned is recorded as a step too, so a replay never changes its mind.
//!
//! Store authors: [`crate::WorkerStore::record_step`] writes one record fenced
//! by the attempt's lease, [`crate::Inspect::job_steps`] reads a job's
//! records, and the records go when their job is deleted. A delivery
//! ([`crate::Producer::signal`]) is decided by [`plan_signal`]; a report of
//! [`crate::Outcome::AwaitSignal`] checks for the signal after locking the
//! job ([`crate::Outcome::given_signals`]); and every worker's recovery pass
//! ends the waits whose time is up ([`crate::WorkerStore::end_timed_out_waits`]).
//! A child job names its parent ([`crate::Job::parent_id`]); the transition
//! that finishes it delivers its outcome to the parent ([`ChildNotice`],
//! [`crate::driver::rules::GiveBack::parent`]).

mod children;
mod journal;
mod signal;
mod sleep;
mod step;
mod wait_signal;

pub use children::{ChildNotice, ChildOutcome, CHILD_WAIT};
pub(crate) use journal::{Journal, RESERVED_PREFIX};
pub use journal::{StepRecord, StepWrite};
pub use signal::{check_signal, plan_signal, SignalPlan, SignalRecord, Signalled};
pub use step::step_write;
