//! The reporter: one task per worker that sends finished attempts' reports in
//! batches, each fenced by its job's lease, and frees their slots once the
//! reports are made.
//!
//! While the queue has a backlog (the last claim filled every slot it asked
//! for), a batch also refills the slots it frees: [`Store::report_and_claim`]
//! reports and claims in one transaction, and each claimed job starts on a slot
//! of a reported one. A drain then costs one transaction per batch instead of a
//! report and a claim, and the worker still never holds more jobs than slots:
//! the store applies the reports before the claim, atomically. Without a backlog
//! the slots go back to the claim loop, which waits for work as usual.
//!
//! [`Store::report_and_claim`]: crate::Store::report_and_claim

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit};

use super::events::{JobFinished, Telemetry, WorkerEvent};
use super::execute::{spawn_attempt, InFlight, Report, Shared};
use crate::job::{Job, Lease};
use crate::requests::{ClaimRequest, Outcome};

/// The most reports sent in one batch.
const MAX_REPORT_BATCH: usize = 256;
/// How long the reporter waits for attempts still running to join a batch.
const REPORT_GATHER: Duration = Duration::from_millis(1);

/// Sends reports until aborted (the worker's drain ends it). A store error is
/// retried with backoff (the reports keep their slots meanwhile); a report that
/// returns false lost its lease to recovery and changed nothing.
pub(crate) async fn reporter(
    shared: Weak<Shared>,
    mut rx: mpsc::UnboundedReceiver<Report>,
    freed: Arc<Notify>,
) {
    while let Some(first) = rx.recv().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let batch = gather(&mut rx, first, &shared.in_flight).await;
        let items: Vec<(Lease, Outcome)> = batch
            .iter()
            .map(|r| (r.lease.clone(), r.outcome.clone()))
            .collect();
        let refill = refill_request(&shared, batch.len());
        let asked = refill.as_ref().map(|r| r.limit);
        let (results, claimed) = make_reports(&shared, items, refill).await;
        let lost = results.iter().filter(|ok| !**ok).count();
        tracing::debug!(count = batch.len(), lost, "reported");
        let reported = batch.len();
        let mut slots = Vec::with_capacity(reported);
        for (i, report) in batch.into_iter().enumerate() {
            let accepted = results.get(i).copied().unwrap_or(false);
            finished(&shared.telemetry, &report, accepted);
            slots.push(report.permit);
        }
        if let Some(asked) = asked {
            shared
                .backlog
                .store(claimed.len() == asked, Ordering::SeqCst);
            start_claimed(&shared, claimed, &mut slots);
        }
        // The rest are merged and freed in one step, so the claim loop wakes to
        // all of them at once and claims them in one round trip.
        drop(slots);
        shared
            .in_flight
            .awaiting_report
            .fetch_sub(reported, Ordering::SeqCst);
        freed.notify_one();
    }
}

/// Takes `first` and the reports already waiting; attempts still running
/// (short jobs of the same claim, typically) join if they end within
/// [`REPORT_GATHER`]: one transaction for all.
async fn gather(
    rx: &mut mpsc::UnboundedReceiver<Report>,
    first: Report,
    in_flight: &InFlight,
) -> Vec<Report> {
    let mut batch = vec![first];
    let deadline = tokio::time::Instant::now() + REPORT_GATHER;
    while batch.len() < MAX_REPORT_BATCH {
        match rx.try_recv() {
            Ok(r) => batch.push(r),
            Err(_) if in_flight.running.load(Ordering::SeqCst) > 0 => {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(r)) => batch.push(r),
                    _ => break,
                }
            }
            Err(_) => break,
        }
    }
    batch
}

/// The claim that refills `slots` freed slots, while there is a backlog and the
/// worker is not stopping.
fn refill_request(shared: &Shared, slots: usize) -> Option<ClaimRequest> {
    let wanted = shared.backlog.load(Ordering::SeqCst) && !*shared.stopping.borrow();
    let template = shared.refill.as_ref().filter(|_| wanted)?;
    Some(ClaimRequest {
        limit: slots,
        ..template.clone()
    })
}

/// Reports `items` (and claims with `refill`); returns the reports' answers and
/// the claimed jobs. A failed combined call is retried as reports alone.
async fn make_reports(
    shared: &Shared,
    items: Vec<(Lease, Outcome)>,
    refill: Option<ClaimRequest>,
) -> (Vec<bool>, Vec<Job>) {
    if let Some(req) = refill {
        match shared.store.report_and_claim(items.clone(), &req).await {
            Ok(done) => return (done.reported, done.claimed),
            Err(e) => tracing::warn!(
                count = items.len(),
                "reporting with a refill failed; reporting alone: {e}"
            ),
        }
    }
    let mut retry = Duration::from_millis(100);
    loop {
        match shared.store.report_batch(items.clone()).await {
            Ok(results) => return (results, Vec::new()),
            Err(e) => {
                tracing::warn!(
                    count = items.len(),
                    "reporting failed, retrying in {retry:?}: {e}"
                );
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Counts and announces one reported attempt.
fn finished(telemetry: &Telemetry, report: &Report, accepted: bool) {
    if !accepted {
        tracing::warn!(
            job_id = %report.lease.job_id,
            handoff_id = %report.lease.handoff_id,
            "report lost its lease (recovered or replaced); nothing changed"
        );
    }
    telemetry.count_outcome(&report.outcome, report.retries_left, accepted);
    telemetry.emit(WorkerEvent::Finished(JobFinished {
        job_id: report.lease.job_id.clone(),
        job_name: report.job_name.clone(),
        queue: report.queue.clone(),
        attempt: report.attempt,
        outcome: report.outcome.clone(),
        accepted,
        duration: report.duration,
    }));
}

/// Starts `jobs`, each on one of `permits` (there are at least as many permits
/// as jobs: a claim asks for no more than the slots it holds).
pub(crate) fn start_claimed(
    shared: &Arc<Shared>,
    jobs: Vec<Job>,
    permits: &mut Vec<OwnedSemaphorePermit>,
) {
    let got = jobs.len();
    if got == 0 {
        return;
    }
    Telemetry::add(&shared.telemetry.claimed, got as u64);
    tracing::debug!(count = got, "claimed jobs");
    shared.telemetry.emit(WorkerEvent::Claimed { count: got });
    for job in jobs {
        let Some(permit) = permits.pop() else {
            tracing::error!("the store returned more jobs than asked for; ignoring the rest");
            return;
        };
        spawn_attempt(shared.clone(), job, permit);
    }
}
