//! The store traits for `MemoryStore`, one `impl` per trait: lock, apply,
//! commit the count change, signal.

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::MemoryStore;
use crate::counts::{CountChange, CountDelta, CountSnapshot, QueueCounts, QueueSnapshot};
use crate::error::{Error, ErrorCode, Result};
use crate::history::{HistorySample, QueueTotals};
use crate::job::{Job, JobStatus, Lease};
use crate::keys::{QueueName, ScheduleKey};
use crate::new_job::NewJob;
use crate::progress::{JobProgress, ProgressBatch};
use crate::requests::*;
use crate::rules::{PruneRun, SearchScan};
use crate::search::JobPage;
use crate::store::{Inspect, MailOperations, Operate, Producer, WorkerStore};
use crate::workers::{DueJobGroup, WorkerInfo, WorkerRecord};
use crate::workflow_list::{WorkflowListRequest, WorkflowSummary};

fn operation_not_found(key: &str) -> Error {
    Error::NotFound {
        code: ErrorCode::OperationNotFound,
        message: format!("no operation {key:?}"),
    }
}

impl MemoryStore {
    /// Fenced reports, then (with `req`) a claim, as one mutation.
    fn report_then_claim(
        &self,
        reports: &[(Lease, Outcome)],
        req: Option<&ClaimRequest>,
    ) -> ReportedAndClaimed {
        let mut st = self.lock();
        let now = self.now();
        let mut change = CountChange::default();
        let reported = reports
            .iter()
            .map(|(lease, outcome)| st.report(lease, outcome, now, &mut change))
            .collect();
        let claimed = req.map_or_else(Vec::new, |req| st.claim(req, now, &mut change));
        self.commit(&mut st, change);
        drop(st);
        self.signal_work();
        ReportedAndClaimed { reported, claimed }
    }
}

#[async_trait]
impl Producer for MemoryStore {
    async fn enqueue(&self, job: NewJob) -> Result<EnqueueOutcome> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let outcome = st.enqueue(job, self.now(), &mut change)?;
        self.commit(&mut st, change);
        drop(st);
        self.signal_work();
        Ok(outcome)
    }

    async fn enqueue_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<EnqueueOutcome>> {
        let mut st = self.lock();
        let now = self.now();
        let mut draft = st.clone();
        let mut change = CountChange::default();
        let outcomes = jobs
            .into_iter()
            .map(|job| draft.enqueue(job, now, &mut change))
            .collect::<Result<Vec<_>>>()?;
        *st = draft;
        self.commit(&mut st, change);
        drop(st);
        self.signal_work();
        Ok(outcomes)
    }

    async fn replace_scheduled(
        &self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
    ) -> Result<ReplaceOutcome> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let outcome = st.replace_scheduled(key, job, running, self.now(), &mut change)?;
        self.commit(&mut st, change);
        drop(st);
        self.signal_work();
        if outcome.previous_stopped {
            if let Some(id) = &outcome.previous_job_id {
                let _ = self.cancels.send(id.to_owned());
            }
        }
        Ok(outcome)
    }

    async fn cancel_scheduled(
        &self,
        key: &ScheduleKey,
        running: RunningOwner,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let outcome = st.cancel_scheduled(key, running, self.now(), &mut change);
        self.commit(&mut st, change);
        drop(st);
        if let Some(id) = outcome.stopped_job_id() {
            let _ = self.cancels.send(id.to_owned());
        }
        Ok(outcome)
    }

    async fn wake_scheduled(&self, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
        let outcome = self.lock().wake_scheduled(key, self.now());
        if outcome.outcome == WakeOutcome::Woken {
            self.signal_work();
        }
        Ok(outcome)
    }

    async fn signal(
        &self,
        job_id: &str,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<crate::Signalled> {
        crate::durable::check_signal(name, &payload)?;
        let mut st = self.lock();
        let mut change = CountChange::default();
        let done = st.signal(job_id, name, payload, self.now(), &mut change)?;
        self.commit(&mut st, change);
        drop(st);
        if done.woke {
            self.signal_work();
        }
        Ok(done)
    }
}

#[async_trait]
impl WorkerStore for MemoryStore {
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let claimed = st.claim(req, self.now(), &mut change);
        self.commit(&mut st, change);
        Ok(claimed)
    }

    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>> {
        let done = self.report_then_claim(&reports, None);
        Ok(done.reported)
    }

    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        Ok(self.report_then_claim(&reports, Some(req)))
    }

    async fn heartbeat(&self, worker_id: &str) -> Result<()> {
        let now = self.now();
        self.lock().heartbeats.insert(worker_id.to_owned(), now);
        Ok(())
    }

    async fn register_worker(&self, info: &WorkerInfo) -> Result<()> {
        let now = self.now();
        self.lock().register_worker(info, now);
        Ok(())
    }

    async fn remove_worker(&self, worker_id: &str) -> Result<bool> {
        Ok(self.lock().remove_worker(worker_id))
    }

    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let recovered = st.recover_stale(stale_after_ms, self.now(), &mut change);
        self.commit(&mut st, change);
        drop(st);
        if !recovered.is_empty() {
            self.signal_work();
        }
        Ok(recovered)
    }

    async fn expire_due(&self, limit: usize) -> Result<Vec<String>> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let expired = st.expire_due(limit, self.now(), &mut change);
        self.commit(&mut st, change);
        Ok(expired)
    }

    async fn end_timed_out_waits(&self, limit: usize) -> Result<Vec<String>> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let ended = st.end_timed_out_waits(limit, self.now(), &mut change);
        self.commit(&mut st, change);
        drop(st);
        if !ended.is_empty() {
            self.signal_work();
        }
        Ok(ended)
    }

    async fn age_priorities(&self, pass: &crate::driver::AgingPass) -> Result<u64> {
        let now = self.now();
        let mut st = self.lock();
        let raised = (st.jobs.values_mut())
            .filter(|j| j.status == JobStatus::Queued && j.queue == pass.queue)
            .filter(|j| j.scheduled_at_ms <= now)
            .filter(|j| pass.oldest_due_ms.is_none_or(|at| j.scheduled_at_ms >= at))
            .filter_map(|j| pass.aging.raise(j, now).then_some(()))
            .take(pass.limit)
            .count();
        Ok(raised as u64)
    }

    async fn lease_states(&self, job_ids: &[String]) -> Result<Vec<LeaseState>> {
        let st = self.lock();
        Ok(job_ids
            .iter()
            .filter_map(|id| st.jobs.get(id))
            .map(|j| LeaseState {
                job_id: j.id.clone(),
                status: j.status,
                handoff_id: j.handoff_id.clone(),
            })
            .collect())
    }

    fn subscribe_cancellations(&self) -> broadcast::Receiver<String> {
        self.cancels.subscribe()
    }

    async fn next_scheduled_at(
        &self,
        job_names: &[String],
        queues: Option<&[String]>,
    ) -> Result<Option<i64>> {
        let st = self.lock();
        Ok(st
            .jobs
            .values()
            .filter(|j| j.status == JobStatus::Queued && job_names.contains(&j.job_name))
            .filter(|j| queues.is_none_or(|qs| qs.contains(&j.queue)))
            .filter(|j| !st.paused.contains_key(&j.queue))
            .map(|j| j.scheduled_at_ms)
            .min())
    }

    async fn record_progress(&self, batch: ProgressBatch) -> Result<bool> {
        let now = self.now();
        Ok(self.lock().record_progress(&batch, now))
    }

    async fn record_step(
        &self,
        write: crate::driver::StepWrite,
    ) -> Result<Option<crate::inspect::StepRecord>> {
        let now = self.now();
        Ok(self.lock().record_step(write, now))
    }

    fn work_signal(&self) -> watch::Receiver<u64> {
        self.work.subscribe()
    }

    async fn settle_release_backlog(&self, max_steps: usize) -> Result<BacklogProgress> {
        let mut progress = BacklogProgress::default();
        while progress.steps < max_steps {
            let mut st = self.lock();
            let mut change = CountChange::default();
            let Some(edges) = st.continue_backlog(self.now(), &mut change) else {
                return Ok(progress);
            };
            self.commit(&mut st, change);
            drop(st);
            self.signal_work();
            progress.steps += 1;
            progress.edges += edges;
        }
        progress.more = true;
        Ok(progress)
    }

    fn release_backlog_signal(&self) -> watch::Receiver<u64> {
        self.backlog.subscribe()
    }
}

#[async_trait]
impl Inspect for MemoryStore {
    async fn get_job(&self, id: &str) -> Result<Option<Job>> {
        Ok(self.lock().jobs.get(id).cloned())
    }

    async fn job_progress(&self, id: &str) -> Result<Option<JobProgress>> {
        Ok(self.lock().job_progress(id))
    }

    async fn job_signals(&self, id: &str) -> Result<Vec<crate::inspect::SignalRecord>> {
        Ok(self.lock().job_signals(id))
    }

    async fn job_steps(&self, id: &str) -> Result<Vec<crate::inspect::StepRecord>> {
        Ok(self.lock().job_steps(id))
    }

    async fn search_jobs(&self, filter: &JobFilter) -> Result<JobPage> {
        let st = self.lock();
        // Candidates: what a database's indexes would narrow by, in list order.
        let indexed = JobFilter {
            error_contains: None,
            args_contains: None,
            finished_after_ms: None,
            finished_before_ms: None,
            ..filter.clone()
        };
        let mut candidates: Vec<&Job> = st.jobs.values().filter(|j| indexed.matches(j)).collect();
        candidates.sort_by(|a, b| {
            (b.created_at_ms, b.id.as_bytes()).cmp(&(a.created_at_ms, a.id.as_bytes()))
        });
        SearchScan::run(filter, |after, n| {
            let start = after.map_or(0, |c| candidates.partition_point(|j| !c.precedes(j)));
            Ok(candidates
                .iter()
                .skip(start)
                .take(n)
                .map(|j| (*j).clone())
                .collect())
        })
    }

    async fn jobs_with_id_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<Job>> {
        let st = self.lock();
        let mut jobs: Vec<&Job> = st
            .jobs
            .values()
            .filter(|j| j.id.starts_with(prefix))
            .collect();
        jobs.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
        Ok(jobs.into_iter().take(limit).cloned().collect())
    }

    async fn list_workflows(&self, req: &WorkflowListRequest) -> Result<Vec<WorkflowSummary>> {
        let st = self.lock();
        let mut ids: Vec<&str> = (st.jobs.values())
            .filter(|j| req.name.is_none() || j.workflow_name == req.name)
            .filter_map(|j| j.workflow_id.as_deref())
            .filter(|w| {
                req.before
                    .as_deref()
                    .is_none_or(|b| w.as_bytes() < b.as_bytes())
            })
            .collect();
        ids.sort_unstable_by(|a, b| b.as_bytes().cmp(a.as_bytes()));
        ids.dedup();
        ids.truncate(req.limit);
        let page: std::collections::HashSet<&str> = ids.into_iter().collect();
        Ok(WorkflowSummary::from_groups(st.jobs.values().filter_map(
            |j| {
                let w = j.workflow_id.as_deref().filter(|w| page.contains(w))?;
                Some((
                    w.to_owned(),
                    j.workflow_name.clone(),
                    j.status,
                    1,
                    j.created_at_ms,
                ))
            },
        )))
    }

    async fn get_scheduled(
        &self,
        key: &ScheduleKey,
        include_latest_terminal: bool,
    ) -> Result<ScheduledJobs> {
        Ok(self.lock().get_scheduled(key, include_latest_terminal))
    }

    async fn count_snapshot(&self) -> Result<CountSnapshot> {
        let st = self.lock();
        Ok(CountSnapshot::new(st.counts, st.revision))
    }

    async fn queue_snapshot(&self) -> Result<QueueSnapshot> {
        let now = self.now();
        let st = self.lock();
        let queues = st
            .queue_counts
            .iter()
            .filter_map(|(queue, counts)| {
                let oldest = st
                    .jobs
                    .values()
                    .filter(|j| j.status == JobStatus::Queued && j.queue == *queue)
                    .map(|j| j.scheduled_at_ms)
                    .min();
                QueueCounts::new(queue.clone(), *counts, oldest, now)
            })
            .collect();
        Ok(QueueSnapshot::new(st.counts, st.revision, now, queues)
            .with_paused(st.paused.keys().cloned()))
    }

    fn subscribe_counts(&self) -> broadcast::Receiver<CountDelta> {
        self.deltas.subscribe()
    }

    async fn list_workers(&self, stale_after_ms: i64) -> Result<Vec<WorkerRecord>> {
        let now = self.now();
        Ok(self.lock().list_workers(now, stale_after_ms))
    }

    async fn fairness_keys(&self, queue: &str) -> Result<Vec<crate::inspect::KeyBacklog>> {
        Ok(crate::inspect::key_backlogs(
            self.lock().jobs.values(),
            queue,
        ))
    }

    async fn due_job_names(&self, limit: usize) -> Result<Vec<DueJobGroup>> {
        let now = self.now();
        Ok(self.lock().due_job_names(now, limit))
    }

    async fn health(&self) -> Result<Health> {
        Ok(Health {
            backend: "memory".into(),
            schema_version: 1,
            detail: "in-process reference model".into(),
        })
    }

    async fn outcome_totals(&self) -> Result<Vec<QueueTotals>> {
        Ok(self.lock().outcome_totals())
    }

    async fn history(&self, since_ms: i64) -> Result<Vec<HistorySample>> {
        Ok(self.lock().history_since(since_ms))
    }
}

#[async_trait]
impl Operate for MemoryStore {
    async fn retry_job(&self, id: &str) -> Result<Job> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let job = st.retry_job(id, self.now(), &mut change)?;
        self.commit(&mut st, change);
        drop(st);
        self.signal_work();
        Ok(job)
    }

    async fn cancel_job(&self, id: &str) -> Result<Job> {
        let mut st = self.lock();
        let mut change = CountChange::default();
        let was_running = st.jobs.get(id).map(|j| j.status) == Some(JobStatus::HandedOff);
        let job = st.cancel_job(id, self.now(), &mut change)?;
        self.commit(&mut st, change);
        drop(st);
        if was_running {
            let _ = self.cancels.send(job.id.clone());
        }
        Ok(job)
    }

    async fn act_on_jobs(&self, action: BulkAction, ids: &[String]) -> Result<BulkBatch> {
        let now = self.now();
        let mut st = self.lock();
        let mut change = CountChange::default();
        let mut batch = BulkBatch::default();
        let mut stopped = Vec::new();
        for id in ids {
            let Some(job) = st.jobs.get_mut(id) else {
                batch.missing += 1;
                continue;
            };
            if !action.changes(job, now) {
                batch.skipped += 1;
                continue;
            }
            let status = job.status;
            match action {
                BulkAction::Retry => {
                    st.retry_job(id, now, &mut change)?;
                }
                BulkAction::Cancel => {
                    st.cancel_job(id, now, &mut change)?;
                    if status == JobStatus::HandedOff {
                        stopped.push(id.clone());
                    }
                }
                BulkAction::Delete => st.delete(std::slice::from_ref(id), &mut change),
                BulkAction::RunNow => job.scheduled_at_ms = now,
            }
            batch.changed += 1;
        }
        self.commit(&mut st, change);
        drop(st);
        for id in stopped {
            let _ = self.cancels.send(id);
        }
        if matches!(action, BulkAction::Retry | BulkAction::RunNow) && batch.changed > 0 {
            self.signal_work();
        }
        Ok(batch)
    }

    async fn pause_queue(&self, queue: &QueueName) -> Result<bool> {
        let now = self.now();
        let mut st = self.lock();
        if st.paused.contains_key(queue.as_str()) {
            return Ok(false);
        }
        st.paused.insert(queue.as_str().to_owned(), now);
        Ok(true)
    }

    async fn resume_queue(&self, queue: &QueueName) -> Result<bool> {
        let resumed = self.lock().paused.remove(queue.as_str()).is_some();
        if resumed {
            self.signal_work();
        }
        Ok(resumed)
    }

    async fn prune(&self, req: &PruneRequest) -> Result<PruneReport> {
        let mut st = self.lock();
        let ids = st.prunable(req, self.now());
        let mut run = PruneRun::new(req);
        let mut batches = ids.chunks(run.batch_size());
        loop {
            let batch = batches.next().unwrap_or_default();
            if !batch.is_empty() {
                let mut change = CountChange::default();
                st.delete(batch, &mut change);
                self.commit(&mut st, change);
            }
            if !run.record(batch.len() as u64) {
                return Ok(run.report());
            }
        }
    }

    async fn reconcile_reservations(&self) -> Result<u64> {
        Ok(self.lock().reconcile_reservations())
    }

    async fn record_history(&self) -> Result<bool> {
        let now = self.now();
        Ok(self.lock().record_history(now))
    }
}

#[async_trait]
impl MailOperations for MemoryStore {
    async fn get_operation(&self, key: &str) -> Result<Option<Operation>> {
        Ok(self.lock().operations.get(key).cloned())
    }

    async fn start_operation_attempt(&self, key: &str) -> Result<Operation> {
        let now = self.now();
        let mut st = self.lock();
        let op = st
            .operations
            .get_mut(key)
            .ok_or_else(|| operation_not_found(key))?;
        op.first_attempt_started_at_ms.get_or_insert(now);
        Ok(op.clone())
    }

    async fn record_operation_result(&self, key: &str, result: Value) -> Result<()> {
        let mut st = self.lock();
        let op = st
            .operations
            .get_mut(key)
            .ok_or_else(|| operation_not_found(key))?;
        op.result = Some(result);
        Ok(())
    }
}
