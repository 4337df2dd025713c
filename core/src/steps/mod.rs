//! Operations core drives over a store's primitives, for store authors.
//!
//! [`crate::rules`] holds decisions a store asks for; this module holds the
//! operations whose *order* is a rule too, so that it is written once. A store
//! implements a small trait of primitives (one entity and one verb each, one
//! statement where it can: River's driver interface is the model), and core
//! calls them in the one order and applies the rules between them. SQL,
//! locking and how a race is settled stay the store's; which step comes first,
//! and which answer wins, never are.
//!
//! - [`EnqueueSteps`] and [`enqueue`]: one job's enqueue (replay, dedupe,
//!   checks, insert; see [`crate::rules`]'s enqueue decisions).
//! - [`AdmissionReads`] and [`Claim`]: one claim's decisions on the candidates
//!   a store walks, made into the [`ClaimPlan`] the store writes.
//! - [`TurnReads`] and [`take_turns`]: the order of a claim's candidates when
//!   jobs carry fairness keys (lanes taking turns).
//!
//! The primitives are `async fn`s, so a store on an async client
//! (PostgreSQL) awaits its statements in them. A store whose primitives never
//! wait (SQLite on its writer thread, the memory store under its lock) runs
//! the same driver with [`run_ready`]: one poll, no runtime, no boxing.

mod claim;
mod enqueue;
mod turns;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::error::{Error, Result};

pub use claim::{AdmissionReads, Claim, ClaimPlan, Taken};
pub use enqueue::{enqueue, EnqueueSteps, ScopeClaim, ScopeOwner};
pub use turns::{take_turns, Turn, TurnReads, Turns};

/// Runs `future` to its end with a single poll, on this thread: for a driver
/// over primitives that never wait (a synchronous connection, a lock already
/// held). A future that does wait is a store's bug; it is refused with a
/// backend error instead of hanging its thread, and dropped.
///
/// ```
/// use duraq_core::driver::steps::run_ready;
/// assert_eq!(run_ready(async { Ok(7) }).unwrap(), 7);
/// ```
pub fn run_ready<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => Err(Error::Backend {
            message: "a store step that must not wait waited (run_ready)".into(),
            source: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    /// Pending on its first poll, as an awaited I/O future would be.
    struct WaitsOnce;

    impl Future for WaitsOnce {
        type Output = ();
        fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Pending
        }
    }

    #[test]
    fn a_future_that_never_waits_runs_to_its_end() {
        let answer = run_ready(async {
            let half = async { Ok::<_, Error>(21) }.await?;
            Ok(half * 2)
        });
        assert_eq!(answer.unwrap(), 42);
        let failed = run_ready(async { Err::<(), _>(crate::rules::operation_key_taken()) });
        assert_eq!(failed.unwrap_err().code(), ErrorCode::IdempotencyConflict);
    }

    #[test]
    fn a_future_that_waits_is_an_error_not_a_hang() {
        let mut reached = false;
        let err = run_ready(async {
            WaitsOnce.await;
            reached = true;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Backend);
        assert!(!reached, "nothing after the wait ran");
    }
}
