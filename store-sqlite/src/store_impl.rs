//! The store traits for `SqliteStore`, one `impl` per trait: each call is
//! either one writer request (one logical mutation in a group commit) or one
//! pooled read; the domain modules do the work.

use async_trait::async_trait;
use duraq_core::driver::rules::PruneRun;
use duraq_core::driver::*;
use duraq_core::inspect::*;
use duraq_core::*;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::{
    admin, claim, counts, enqueue, operations, pause, report, schedule, schema, workers,
    SqliteStore,
};

#[async_trait]
impl Producer for SqliteStore {
    async fn enqueue(&self, job: NewJob) -> Result<EnqueueOutcome> {
        self.write(move |tx| enqueue::enqueue(tx, job)).await
    }

    async fn enqueue_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<EnqueueOutcome>> {
        let batch = enqueue::Batch::prepare(jobs)?;
        self.write(move |tx| enqueue::enqueue_many(tx, batch)).await
    }

    async fn replace_scheduled(
        &self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
    ) -> Result<ReplaceOutcome> {
        let key = key.clone();
        let outcome = self
            .write(move |tx| schedule::replace(tx, &key, job, running))
            .await?;
        if let Some(id) = outcome.stopped_job_id() {
            self.announce_cancelled(id);
        }
        Ok(outcome)
    }

    async fn cancel_scheduled(
        &self,
        key: &ScheduleKey,
        running: RunningOwner,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        let key = key.clone();
        let outcome = self
            .write(move |tx| schedule::cancel(tx, &key, running))
            .await?;
        if let Some(id) = outcome.stopped_job_id() {
            self.announce_cancelled(id);
        }
        Ok(outcome)
    }

    async fn wake_scheduled(&self, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
        let key = key.clone();
        self.write(move |tx| schedule::wake(tx, &key)).await
    }

    async fn signal(
        &self,
        job_id: &str,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<duraq_core::Signalled> {
        duraq_core::driver::rules::check_signal(name, &payload)?;
        let (job_id, name) = (job_id.to_owned(), name.to_owned());
        self.write(move |tx| crate::signals::signal(tx, &job_id, &name, &payload))
            .await
    }

    /// Stops the writer thread (and with it the cross-process poll) once the
    /// writes already sent are committed, and closes every connection. Later
    /// calls fail with `backend-error`.
    async fn close(&self) -> Result<()> {
        self.inner.writer.close().await?;
        self.inner.readers.close();
        Ok(())
    }
}

#[async_trait]
impl WorkerStore for SqliteStore {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        let req = req.clone();
        self.write(move |tx| claim::claim(tx, &req)).await
    }

    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        self.write(move |tx| report::report_batch(tx, &reports))
            .await
    }

    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        let req = req.clone();
        self.write(move |tx| {
            let reported = report::report_batch(tx, &reports)?;
            let claimed = claim::claim(tx, &req)?;
            Ok(ReportedAndClaimed { reported, claimed })
        })
        .await
    }

    async fn heartbeat(&self, worker_id: &str) -> Result<()> {
        let worker_id = worker_id.to_owned();
        self.write(move |tx| report::heartbeat(tx, &worker_id))
            .await
    }

    async fn register_worker(&self, info: &WorkerInfo) -> Result<()> {
        let info = info.clone();
        self.write(move |tx| workers::register(tx, &info)).await
    }

    async fn remove_worker(&self, worker_id: &str) -> Result<bool> {
        let worker_id = worker_id.to_owned();
        self.write(move |tx| workers::remove(tx, &worker_id)).await
    }

    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>> {
        self.write(move |tx| report::recover_stale(tx, stale_after_ms))
            .await
    }

    async fn expire_due(&self, limit: usize) -> Result<Vec<String>> {
        self.write(move |tx| crate::expiry::expire_due(tx, limit))
            .await
    }

    async fn age_priorities(&self, pass: &duraq_core::driver::AgingPass) -> Result<u64> {
        let pass = pass.clone();
        self.write(move |tx| crate::aging::age_priorities(tx, &pass))
            .await
    }

    async fn lease_states(&self, job_ids: &[String]) -> Result<Vec<LeaseState>> {
        let ids = job_ids.to_vec();
        self.read(move |conn| report::lease_states(conn, &ids))
            .await
    }

    fn subscribe_cancellations(&self) -> broadcast::Receiver<String> {
        self.cancels()
    }

    async fn next_scheduled_at(
        &self,
        job_names: &[String],
        queues: Option<&[String]>,
    ) -> Result<Option<i64>> {
        let names = job_names.to_vec();
        let queues = queues.map(<[String]>::to_vec);
        self.read(move |conn| claim::next_scheduled_at(conn, &names, queues.as_deref()))
            .await
    }

    async fn record_progress(&self, batch: ProgressBatch) -> Result<bool> {
        self.write(move |tx| crate::progress::record(tx, &batch))
            .await
    }

    async fn end_timed_out_waits(&self, limit: usize) -> Result<Vec<String>> {
        self.write(move |tx| crate::signals::end_timed_out_waits(tx, limit))
            .await
    }

    async fn record_step(
        &self,
        write: duraq_core::driver::StepWrite,
    ) -> Result<Option<duraq_core::inspect::StepRecord>> {
        self.write(move |tx| crate::steps::record(tx, &write)).await
    }

    fn work_signal(&self) -> watch::Receiver<u64> {
        self.inner.signals.work.subscribe()
    }

    async fn settle_release_backlog(&self, max_steps: usize) -> Result<BacklogProgress> {
        let mut progress = BacklogProgress::default();
        while progress.steps < max_steps {
            // One logical write per step: the writer may commit it with
            // others, but each is bounded by `RELEASE_BATCH` edges.
            let Some(edges) = self.write(crate::release::continue_step).await? else {
                return Ok(progress);
            };
            progress.steps += 1;
            progress.edges += edges;
        }
        progress.more = true;
        Ok(progress)
    }

    fn release_backlog_signal(&self) -> watch::Receiver<u64> {
        self.inner.signals.backlog.subscribe()
    }
}

#[async_trait]
impl Inspect for SqliteStore {
    async fn get_job(&self, id: &str) -> Result<Option<Job>> {
        let id = id.to_owned();
        self.read(move |conn| crate::rows::load_job(conn, &id))
            .await
    }

    async fn job_progress(&self, id: &str) -> Result<Option<JobProgress>> {
        let id = id.to_owned();
        self.read(move |conn| crate::progress::get(conn, &id)).await
    }

    async fn job_signals(&self, id: &str) -> Result<Vec<duraq_core::inspect::SignalRecord>> {
        let id = id.to_owned();
        self.read(move |conn| crate::signals::get(conn, &id)).await
    }

    async fn job_steps(&self, id: &str) -> Result<Vec<duraq_core::inspect::StepRecord>> {
        let id = id.to_owned();
        self.read(move |conn| crate::steps::get(conn, &id)).await
    }

    async fn search_jobs(&self, filter: &JobFilter) -> Result<JobPage> {
        let filter = filter.clone();
        self.read(move |conn| crate::search::search_jobs(conn, &filter))
            .await
    }

    async fn jobs_with_id_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<Job>> {
        let prefix = prefix.to_owned();
        self.read(move |conn| crate::search::jobs_with_id_prefix(conn, &prefix, limit))
            .await
    }

    async fn list_workflows(&self, req: &WorkflowListRequest) -> Result<Vec<WorkflowSummary>> {
        let req = req.clone();
        self.read(move |conn| crate::search::list_workflows(conn, &req))
            .await
    }

    async fn get_scheduled(
        &self,
        key: &ScheduleKey,
        include_latest_terminal: bool,
    ) -> Result<ScheduledJobs> {
        let key = key.clone();
        self.read(move |conn| schedule::get(conn, &key, include_latest_terminal))
            .await
    }

    async fn count_snapshot(&self) -> Result<CountSnapshot> {
        self.read(counts::snapshot).await
    }

    async fn queue_snapshot(&self) -> Result<QueueSnapshot> {
        let now = self.now();
        // Not a count: read after the counts, in the same read transaction.
        self.read(move |conn| {
            Ok(counts::queue_snapshot(conn, now)?.with_paused(pause::paused(conn)?))
        })
        .await
    }

    fn subscribe_counts(&self) -> broadcast::Receiver<CountDelta> {
        self.inner.signals.counts.subscribe()
    }

    async fn list_workers(&self, stale_after_ms: i64) -> Result<Vec<WorkerRecord>> {
        let now = self.now();
        self.read(move |conn| workers::list(conn, now, stale_after_ms))
            .await
    }

    async fn fairness_keys(&self, queue: &str) -> Result<Vec<duraq_core::inspect::KeyBacklog>> {
        let queue = queue.to_owned();
        self.read(move |conn| crate::key_backlog::fairness_keys(conn, &queue))
            .await
    }

    async fn due_job_names(&self, limit: usize) -> Result<Vec<DueJobGroup>> {
        let now = self.now();
        self.read(move |conn| workers::due_job_names(conn, now, limit))
            .await
    }

    async fn health(&self) -> Result<Health> {
        let pragmas = self.inner.pragmas.clone();
        let schema_version = self.read(schema::current_version).await?;
        Ok(Health {
            backend: "sqlite".into(),
            schema_version,
            detail: format!(
                "journal_mode={} synchronous={} file={}",
                pragmas.journal_mode,
                match pragmas.synchronous {
                    2 => "FULL",
                    1 => "NORMAL",
                    _ => "other",
                },
                self.inner.path.display()
            ),
        })
    }

    async fn outcome_totals(&self) -> Result<Vec<duraq_core::inspect::QueueTotals>> {
        self.read(crate::history::outcome_totals).await
    }

    async fn history(&self, since_ms: i64) -> Result<Vec<duraq_core::inspect::HistorySample>> {
        self.read(move |conn| crate::history::since(conn, since_ms))
            .await
    }
}

#[async_trait]
impl Operate for SqliteStore {
    async fn retry_job(&self, id: &str) -> Result<Job> {
        let id = id.to_owned();
        self.write(move |tx| admin::retry_job(tx, &id)).await
    }

    async fn cancel_job(&self, id: &str) -> Result<Job> {
        let id = id.to_owned();
        let (job, from) = self.write(move |tx| admin::cancel_job(tx, &id)).await?;
        if from == JobStatus::HandedOff {
            self.announce_cancelled(&job.id);
        }
        Ok(job)
    }

    async fn act_on_jobs(&self, action: BulkAction, ids: &[String]) -> Result<BulkBatch> {
        let ids = ids.to_vec();
        let (batch, stopped) = self
            .write(move |tx| admin::act_on_jobs(tx, action, &ids))
            .await?;
        for id in &stopped {
            self.announce_cancelled(id);
        }
        Ok(batch)
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<bool> {
        let queue = queue.clone();
        self.write(move |tx| pause::pause(tx, queue.as_str())).await
    }

    async fn resume_queue(&self, queue: &QueueName) -> Result<bool> {
        let queue = queue.clone();
        self.write(move |tx| pause::resume(tx, queue.as_str()))
            .await
    }

    async fn prune(&self, req: &PruneRequest) -> Result<PruneReport> {
        let now = self.now();
        let mut run = PruneRun::new(req);
        loop {
            let req = req.clone();
            let deleted = self
                .write(move |tx| admin::prune_batch(tx, &req, now))
                .await?;
            if !run.record(deleted) {
                return Ok(run.report());
            }
        }
    }

    async fn reconcile_reservations(&self) -> Result<u64> {
        self.write(admin::reconcile).await
    }

    async fn record_history(&self) -> Result<bool> {
        self.write(crate::history::record).await
    }
}

#[async_trait]
impl MailOperations for SqliteStore {
    async fn get_operation(&self, key: &str) -> Result<Option<Operation>> {
        let key = key.to_owned();
        self.read(move |conn| operations::get(conn, &key)).await
    }

    async fn start_operation_attempt(&self, key: &str) -> Result<Operation> {
        let key = key.to_owned();
        self.write(move |tx| operations::start_attempt(tx, &key))
            .await
    }

    async fn record_operation_result(&self, key: &str, result: Value) -> Result<()> {
        let key = key.to_owned();
        self.write(move |tx| operations::record_result(tx, &key, &result))
            .await
    }
}
