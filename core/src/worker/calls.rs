//! The store calls the dispatcher makes. Each owns its inputs and returns them
//! with its result, so it can be awaited in the dispatcher's loop
//! ([`super::ledger::CallMode::Inline`], without prefetch) or run on a task of
//! its own ([`super::ledger::CallMode::Overlapped`], with prefetch: a report
//! batch commits while the next one runs its statements, and the dispatcher
//! keeps handling reports, signals and shutdown meanwhile). The dispatcher
//! alone decides what a result means for the jobs it holds.

use std::sync::Arc;
use std::time::Duration;

use super::execute::Report;
use crate::clock::Clock;
use crate::job::{Job, Lease};
use crate::requests::{ClaimRequest, Outcome};
use crate::store::Store;

/// A finished store call.
pub(crate) enum Done {
    /// A report batch, and the refill claim made with it (if one was asked).
    Reported {
        batch: Vec<Report>,
        /// Jobs the refill asked for (0: none was asked).
        asked: usize,
        /// One entry per report; `Err` if the batch could not be reported.
        results: crate::Result<Vec<bool>>,
        /// The refill's jobs, when the report and the claim committed together.
        claimed: Option<Vec<Job>>,
    },
    /// A plain claim.
    Claimed {
        asked: usize,
        result: crate::Result<Vec<Job>>,
    },
    /// After a claim that found fewer jobs than it asked for: how long until
    /// the earliest future job is due (`None`: no future job, or unknown).
    NextDue(Option<Duration>),
}

/// Reports `batch`; with `refill`, claims in the same transaction
/// ([`Store::report_and_claim`]), falling back to reporting alone if that fails.
pub(crate) async fn report(
    store: Arc<dyn Store>,
    batch: Vec<Report>,
    refill: Option<ClaimRequest>,
) -> Done {
    let items: Vec<(Lease, Outcome)> = batch
        .iter()
        .map(|r| (r.lease.clone(), r.outcome.clone()))
        .collect();
    let asked = refill.as_ref().map_or(0, |req| req.limit);
    if let Some(req) = refill {
        match store.report_and_claim(items.clone(), &req).await {
            Ok(done) => {
                return Done::Reported {
                    batch,
                    asked,
                    results: Ok(done.reported),
                    claimed: Some(done.claimed),
                }
            }
            Err(e) => tracing::warn!(
                count = items.len(),
                "reporting with a refill failed; reporting alone: {e}"
            ),
        }
    }
    let results = store.report_batch(items).await;
    Done::Reported {
        batch,
        asked,
        results,
        claimed: None,
    }
}

/// Claims for free slots.
pub(crate) async fn claim(store: Arc<dyn Store>, req: ClaimRequest) -> Done {
    let asked = req.limit;
    let result = store.claim(&req).await;
    Done::Claimed { asked, result }
}

/// Reads when the next future job of `req` is due, so the dispatcher can sleep
/// until then. Made after the claim's jobs have started, never before.
pub(crate) async fn next_due(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    req: ClaimRequest,
) -> Done {
    let now_ms = clock.now_ms();
    match store
        .next_scheduled_at(&req.job_names, req.queues.as_deref())
        .await
    {
        Ok(Some(at)) if at > now_ms => {
            Done::NextDue(Some(Duration::from_millis((at - now_ms) as u64)))
        }
        Ok(_) => Done::NextDue(None),
        Err(e) => {
            tracing::warn!("next_scheduled_at failed: {e}");
            Done::NextDue(None)
        }
    }
}
