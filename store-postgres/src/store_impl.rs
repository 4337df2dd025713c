//! The store traits for `PostgresStore`, one `impl` per trait: each mutating
//! call is one [`write_tx!`] transaction around the matching module's function;
//! reads run on a pooled connection without an explicit transaction.

use async_trait::async_trait;
use duraq_core::driver::rules::PruneRun;
use duraq_core::driver::{
    BacklogProgress, ClaimRequest, Lease, LeaseState, ReportedAndClaimed, WorkerInfo,
};
use duraq_core::inspect::{
    BulkAction, BulkBatch, CountDelta, CountSnapshot, DueJobGroup, Health, JobFilter, JobPage,
    Operation, PruneReport, PruneRequest, QueueSnapshot, ScheduledJobs, WorkerRecord,
    WorkflowListRequest, WorkflowSummary,
};
use duraq_core::{
    CancelOutcome, EnqueueOutcome, Inspect, Job, JobStatus, KeyedOutcome, MailOperations, NewJob,
    Operate, Outcome, Producer, QueueName, ReplaceOutcome, Result, RunningOwner, ScheduleKey,
    WakeOutcome, WorkerStore,
};
use tokio::sync::{broadcast, watch};

use crate::backend::db::{pooled, Conn, Db};
use crate::backend::enqueue_group;
use crate::tx::{pipelined_tx, write_tx};
use crate::{
    admin, bulk, claim, complete, counts, enqueue, enqueue_plain, operations, pause, release,
    report, rows, schedule, schema, workers, PostgresStore,
};

/// Runs `$body` with `$db` bound to a pooled connection.
macro_rules! read {
    ($store:expr, |$db:ident| $body:expr) => {{
        let client = pooled(&$store.shared().pool).await?;
        let $db = Db {
            conn: Conn::Client(&client),
            names: &$store.shared().names,
        };
        $body
    }};
}

#[async_trait]
impl Producer for PostgresStore {
    async fn enqueue(&self, job: NewJob) -> Result<EnqueueOutcome> {
        self.forget_hints_before([&job]);
        if job.is_plain() {
            return enqueue_group::enqueue(self, job).await;
        }
        write_tx!(self, self.now(), |tx| {
            enqueue::enqueue_one(&mut tx, &job).await
        })
    }

    async fn enqueue_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<EnqueueOutcome>> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        self.forget_hints_before(&jobs);
        if jobs.iter().all(NewJob::is_plain) {
            return enqueue_plain::enqueue_plain(self, &jobs).await;
        }
        write_tx!(self, self.now(), |tx| {
            enqueue::enqueue_many(&mut tx, &jobs).await
        })
    }

    async fn replace_scheduled(
        &self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
    ) -> Result<ReplaceOutcome> {
        self.forget_hints_before([&job]);
        let outcome: ReplaceOutcome = write_tx!(self, self.now(), |tx| {
            schedule::replace(&mut tx, key, &job, running).await
        })?;
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
        let outcome: KeyedOutcome<CancelOutcome> = write_tx!(self, self.now(), |tx| {
            schedule::cancel(&mut tx, key, running).await
        })?;
        if let Some(id) = outcome.stopped_job_id() {
            self.announce_cancelled(id);
        }
        Ok(outcome)
    }

    async fn wake_scheduled(&self, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
        write_tx!(self, self.now(), |tx| {
            schedule::wake(&mut tx, key).await
        })
    }

    async fn signal(
        &self,
        job_id: &str,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<duraq_core::Signalled> {
        duraq_core::driver::rules::check_signal(name, &payload)?;
        write_tx!(self, self.now(), |tx| {
            let sent = crate::signals::signal(tx.writes(), job_id, name, &payload).await?;
            tx.work |= sent.woke;
            Ok(sent)
        })
    }

    /// Sends the NOTIFYs still pending, then stops the notifier and the LISTEN
    /// connection and closes the pool. Later calls fail.
    async fn close(&self) -> Result<()> {
        self.close_all().await;
        Ok(())
    }
}

#[async_trait]
impl WorkerStore for PostgresStore {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        let hints = &self.shared().lane_hints;
        write_tx!(self, self.now(), |tx| {
            claim::claim(&mut tx, req, hints).await
        })
    }

    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        if reports.is_empty() {
            return Ok(Vec::new());
        }
        write_tx!(self, self.now(), |tx| {
            report::report_many(&mut tx, &reports).await
        })
    }

    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        // A worker's hot path, so BEGIN goes with the first statements and
        // COMMIT with the claim's last (see `crate::tx`).
        let hints = &self.shared().lane_hints;
        pipelined_tx!(self, self.now(), |tx| {
            // No reports at all counts as all completions (none to send).
            if complete::all_completions(&reports) {
                // Completions and the claim's first reads in one round trip:
                // the candidates read are locked, and reservations the
                // completions give back are taken only after that.
                let ((), rows, first) = tokio::try_join!(
                    biased;
                    tx.begin_statement(),
                    complete::update_completed(&tx.db, &reports, tx.now),
                    claim::first_read(&tx.db, req, hints, tx.now)
                )?;
                let reported = complete::apply_completed(&mut tx, &reports, rows).await?;
                // The claim records the counts: the dependents of what the
                // reports finished are settled first.
                tx.release_dependents().await?;
                let claimed = claim::claim_after(&mut tx, req, first, hints).await?;
                return Ok(ReportedAndClaimed { reported, claimed });
            }
            tx.begin_statement().await?;
            let reported = report::report_many(&mut tx, &reports).await?;
            tx.release_dependents().await?;
            if tx.change.requeued() {
                // A job these reports put back may stand before a hint.
                hints.clear();
            }
            let claimed = claim::claim(&mut tx, req, hints).await?;
            Ok(ReportedAndClaimed { reported, claimed })
        })
    }

    async fn heartbeat(&self, worker_id: &str) -> Result<()> {
        let now = self.now();
        read!(self, |db| report::heartbeat(&db, worker_id, now).await)
    }

    async fn register_worker(&self, info: &WorkerInfo) -> Result<()> {
        let now = self.now();
        read!(self, |db| workers::register(&db, info, now).await)
    }

    async fn remove_worker(&self, worker_id: &str) -> Result<bool> {
        read!(self, |db| workers::remove(&db, worker_id).await)
    }

    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>> {
        write_tx!(self, self.now(), |tx| {
            report::recover_stale(&mut tx, stale_after_ms).await
        })
    }

    async fn expire_due(&self, limit: usize) -> Result<Vec<String>> {
        write_tx!(self, self.now(), |tx| {
            crate::expiry::expire_due(&mut tx, limit).await
        })
    }

    async fn age_priorities(&self, pass: &duraq_core::driver::AgingPass) -> Result<u64> {
        write_tx!(self, self.now(), |tx| {
            crate::aging::age_priorities(&mut tx, pass).await
        })
    }

    async fn lease_states(&self, job_ids: &[String]) -> Result<Vec<LeaseState>> {
        if job_ids.is_empty() {
            return Ok(Vec::new());
        }
        read!(self, |db| report::lease_states(&db, job_ids).await)
    }

    fn subscribe_cancellations(&self) -> broadcast::Receiver<String> {
        self.shared().cancels.subscribe()
    }

    async fn next_scheduled_at(
        &self,
        job_names: &[String],
        queues: Option<&[String]>,
    ) -> Result<Option<i64>> {
        claim::next_due(self.shared(), job_names, queues).await
    }

    async fn record_progress(&self, batch: duraq_core::driver::ProgressBatch) -> Result<bool> {
        write_tx!(self, self.now(), |tx| {
            crate::progress::record(&mut tx, &batch).await
        })
    }

    async fn end_timed_out_waits(&self, limit: usize) -> Result<Vec<String>> {
        write_tx!(self, self.now(), |tx| {
            let ended = crate::signals::end_timed_out_waits(tx.writes(), limit).await?;
            tx.work |= !ended.is_empty();
            Ok(ended)
        })
    }

    async fn record_step(
        &self,
        write: duraq_core::driver::StepWrite,
    ) -> Result<Option<duraq_core::inspect::StepRecord>> {
        // One statement, which locks the job row itself: no BEGIN or COMMIT
        // round trips around it.
        let now = self.now();
        read!(self, |db| crate::steps::record(&db, &write, now).await)
    }

    async fn upkeep(&self) -> Result<duraq_core::driver::Upkeep> {
        crate::reclaim::upkeep(self.shared()).await
    }

    fn work_signal(&self) -> watch::Receiver<u64> {
        self.shared().work.subscribe()
    }

    async fn settle_release_backlog(&self, max_steps: usize) -> Result<BacklogProgress> {
        let mut progress = BacklogProgress::default();
        while progress.steps < max_steps {
            // One transaction per step, holding one entry (see `crate::release`).
            let step = write_tx!(self, self.now(), |tx| {
                let settled = release::continue_step(&tx.db, tx.now, &mut tx.change).await?;
                if let Some(s) = &settled {
                    tx.work |= s.released;
                    tx.backlog |= s.backlog;
                }
                Ok(settled.map(|s| s.walked))
            })?;
            let Some(edges) = step else {
                return Ok(progress);
            };
            progress.steps += 1;
            progress.edges += edges;
        }
        progress.more = true;
        Ok(progress)
    }

    fn release_backlog_signal(&self) -> watch::Receiver<u64> {
        self.shared().backlog.subscribe()
    }
}

#[async_trait]
impl Inspect for PostgresStore {
    async fn get_job(&self, id: &str) -> Result<Option<Job>> {
        read!(self, |db| rows::load_job(&db, id).await)
    }

    async fn job_progress(&self, id: &str) -> Result<Option<duraq_core::inspect::JobProgress>> {
        read!(self, |db| crate::progress::get(&db, id).await)
    }

    async fn job_signals(&self, id: &str) -> Result<Vec<duraq_core::inspect::SignalRecord>> {
        read!(self, |db| crate::signals::get(&db, id).await)
    }

    async fn job_steps(&self, id: &str) -> Result<Vec<duraq_core::inspect::StepRecord>> {
        read!(self, |db| crate::steps::get(&db, id).await)
    }

    async fn search_jobs(&self, filter: &JobFilter) -> Result<JobPage> {
        read!(self, |db| crate::search::search_jobs(&db, filter).await)
    }

    async fn jobs_with_id_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<Job>> {
        read!(self, |db| crate::search::jobs_with_id_prefix(
            &db, prefix, limit
        )
        .await)
    }

    async fn list_workflows(&self, req: &WorkflowListRequest) -> Result<Vec<WorkflowSummary>> {
        read!(self, |db| crate::search::list_workflows(&db, req).await)
    }

    async fn get_scheduled(
        &self,
        key: &ScheduleKey,
        include_latest_terminal: bool,
    ) -> Result<ScheduledJobs> {
        read!(self, |db| schedule::get(&db, key, include_latest_terminal)
            .await)
    }

    async fn count_snapshot(&self) -> Result<CountSnapshot> {
        read!(self, |db| counts::snapshot(&db).await)
    }

    async fn queue_snapshot(&self) -> Result<QueueSnapshot> {
        let now = self.now();
        read!(self, |db| {
            let snapshot = counts::queue_snapshot(&db, now).await?;
            // Not a count: read after the counts (the paused state has no revision).
            Ok(snapshot.with_paused(pause::paused(&db).await?))
        })
    }

    fn subscribe_counts(&self) -> broadcast::Receiver<CountDelta> {
        self.shared().deltas.subscribe()
    }

    async fn list_workers(&self, stale_after_ms: i64) -> Result<Vec<WorkerRecord>> {
        let now = self.now();
        read!(self, |db| workers::list(&db, now, stale_after_ms).await)
    }

    async fn fairness_keys(&self, queue: &str) -> Result<Vec<duraq_core::inspect::KeyBacklog>> {
        read!(self, |db| crate::key_backlog::fairness_keys(&db, queue)
            .await)
    }

    async fn due_job_names(&self, limit: usize) -> Result<Vec<DueJobGroup>> {
        let now = self.now();
        read!(self, |db| workers::due_job_names(&db, now, limit).await)
    }

    async fn health(&self) -> Result<Health> {
        let version = read!(self, |db| schema::current_version(&db).await)?;
        let listening = self
            .shared()
            .listening
            .load(std::sync::atomic::Ordering::Relaxed);
        Ok(Health {
            backend: "postgres".into(),
            schema_version: version,
            detail: format!(
                "schema {}, pool of {}, {} counter shards, LISTEN {} ({} reconnects)",
                self.schema(),
                self.pool_size(),
                counts::SHARDS,
                if !self.is_listening_enabled() {
                    "off"
                } else if listening {
                    "connected"
                } else {
                    "down, polling"
                },
                self.shared()
                    .reconnects
                    .load(std::sync::atomic::Ordering::Relaxed)
            ),
        })
    }

    async fn outcome_totals(&self) -> Result<Vec<duraq_core::inspect::QueueTotals>> {
        read!(self, |db| crate::history::outcome_totals(&db).await)
    }

    async fn history(&self, since_ms: i64) -> Result<Vec<duraq_core::inspect::HistorySample>> {
        read!(self, |db| crate::history::since(&db, since_ms).await)
    }
}

#[async_trait]
impl Operate for PostgresStore {
    async fn retry_job(&self, id: &str) -> Result<Job> {
        write_tx!(self, self.now(), |tx| {
            admin::retry_job(&mut tx, id).await
        })
    }

    async fn cancel_job(&self, id: &str) -> Result<Job> {
        let (job, from): (Job, JobStatus) = write_tx!(self, self.now(), |tx| {
            admin::cancel_job(&mut tx, id).await
        })?;
        if from == JobStatus::HandedOff {
            self.announce_cancelled(&job.id);
        }
        Ok(job)
    }

    async fn act_on_jobs(&self, action: BulkAction, ids: &[String]) -> Result<BulkBatch> {
        let (batch, stopped): (BulkBatch, Vec<String>) = write_tx!(self, self.now(), |tx| {
            bulk::act_on_jobs(&mut tx, action, ids).await
        })?;
        for id in &stopped {
            self.announce_cancelled(id);
        }
        Ok(batch)
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<bool> {
        write_tx!(self, self.now(), |tx| {
            pause::pause(&mut tx, queue.as_str()).await
        })
    }

    async fn resume_queue(&self, queue: &QueueName) -> Result<bool> {
        write_tx!(self, self.now(), |tx| {
            pause::resume(&mut tx, queue.as_str()).await
        })
    }

    async fn prune(&self, req: &PruneRequest) -> Result<PruneReport> {
        let now = self.now();
        let mut run = PruneRun::new(req);
        loop {
            let deleted = write_tx!(self, now, |tx| {
                admin::prune_batch(&mut tx, req, now).await
            })?;
            if !run.record(deleted) {
                return Ok(run.report());
            }
        }
    }

    async fn reconcile_reservations(&self) -> Result<u64> {
        write_tx!(self, self.now(), |tx| { admin::reconcile(&mut tx).await })
    }

    async fn record_history(&self) -> Result<bool> {
        write_tx!(self, self.now(), |tx| {
            crate::history::record(&mut tx).await
        })
    }
}

#[async_trait]
impl MailOperations for PostgresStore {
    async fn get_operation(&self, key: &str) -> Result<Option<Operation>> {
        read!(self, |db| operations::get(&db, key).await)
    }

    async fn start_operation_attempt(&self, key: &str) -> Result<Operation> {
        let now = self.now();
        read!(self, |db| operations::start_attempt(&db, key, now).await)
    }

    async fn record_operation_result(&self, key: &str, result: serde_json::Value) -> Result<()> {
        read!(self, |db| operations::record_result(&db, key, &result)
            .await)
    }
}
