//! The worker example's jobs (`examples/worker.rs`), in a file of their own so
//! that the example's tests (`tests/worker_jobs.rs`) run the same types and
//! handlers with `duraq-testkit`. Not an example by itself: Cargo builds only
//! `examples/*.rs` and `examples/*/main.rs`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use duraq_core::{EnqueueOptions, JobArgs, JobContext, JobError, JobHandler, JobResult};
use serde::{Deserialize, Serialize};

/// Runs on the `images` queue, which this worker caps at two running jobs.
#[derive(Serialize, Deserialize)]
pub struct ResizeImage {
    pub image_id: u32,
}
impl JobArgs for ResizeImage {
    const NAME: &'static str = "resize_image";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().queue("images")
    }
}
pub struct Resizer {
    pub running: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
}
#[duraq_core::async_trait]
impl JobHandler for Resizer {
    type Args = ResizeImage;
    async fn perform(&self, _ctx: &JobContext, args: ResizeImage) -> Result<JobResult, JobError> {
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await; // the "work"
        self.running.fetch_sub(1, SeqCst);
        println!(
            "resized image {} ({now} of queue images running)",
            args.image_id
        );
        Ok(JobResult::Completed)
    }
}

/// Fails twice, then succeeds; its retries are spaced by the type's backoff.
#[derive(Serialize, Deserialize)]
pub struct ChargeCard {
    pub order_id: u32,
}
impl JobArgs for ChargeCard {
    const NAME: &'static str = "charge_card";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().max_retries(5)
    }
    /// 100 ms after the first failed attempt, 200 ms after the second, …
    fn backoff(attempt: u32) -> Option<Duration> {
        Some(Duration::from_millis(100 * u64::from(attempt)))
    }
}
pub struct Charger;
#[duraq_core::async_trait]
impl JobHandler for Charger {
    type Args = ChargeCard;
    async fn perform(&self, ctx: &JobContext, args: ChargeCard) -> Result<JobResult, JobError> {
        let attempt = ctx.attempt();
        if attempt < 3 {
            let delay = ChargeCard::backoff(attempt).unwrap_or_default();
            println!(
                "charge order {}: attempt {attempt} failed, retry in {delay:?}",
                args.order_id
            );
            return Err(JobError::new("card processor timed out")); // becomes lastError
        }
        println!("charged order {} on attempt {attempt}", args.order_id);
        Ok(JobResult::Completed)
    }
}

/// Waits for an export another system produces: snoozes until it is ready.
#[derive(Serialize, Deserialize)]
pub struct WaitForExport {
    pub export_id: u32,
}
impl JobArgs for WaitForExport {
    const NAME: &'static str = "wait_for_export";
}
pub struct ExportWatcher {
    pub checks: AtomicUsize, // stands in for asking the other system
}
#[duraq_core::async_trait]
impl JobHandler for ExportWatcher {
    type Args = WaitForExport;
    async fn perform(&self, ctx: &JobContext, args: WaitForExport) -> Result<JobResult, JobError> {
        let check = self.checks.fetch_add(1, SeqCst) + 1;
        if check < 3 {
            println!(
                "export {} not ready (check {check}): snooze 150ms, attempt stays {}",
                args.export_id,
                ctx.attempt()
            );
            return Ok(ctx.reschedule_in(Duration::from_millis(150))); // no attempt used
        }
        println!(
            "export {} ready after {check} checks, on attempt {}",
            args.export_id,
            ctx.attempt()
        );
        Ok(JobResult::Completed)
    }
}

/// A periodic job: every worker that declares it enqueues each tick, once.
#[derive(Serialize, Deserialize)]
pub struct Cleanup {
    pub older_than_days: u32,
}
impl JobArgs for Cleanup {
    const NAME: &'static str = "cleanup";
    fn options() -> EnqueueOptions {
        EnqueueOptions::new().queue("maintenance")
    }
}
pub struct Cleaner;
#[duraq_core::async_trait]
impl JobHandler for Cleaner {
    type Args = Cleanup;
    async fn perform(&self, _ctx: &JobContext, args: Cleanup) -> Result<JobResult, JobError> {
        println!(
            "cleanup: removed drafts older than {} days",
            args.older_than_days
        );
        Ok(JobResult::Completed)
    }
}
