//! The store traits: every promise that needs the database, split by
//! who calls it, so that each caller depends on what it uses:
//!
//! | trait | what | its callers |
//! |---|---|---|
//! | [`Producer`] | enqueue, schedule keys; `close` | applications, the mailer, periodic jobs; the store's owner closes it |
//! | [`WorkerStore`] | claims, reports, leases, liveness | the worker runtime ([`crate::Worker`]) |
//! | [`Inspect`] | jobs, keys, counts, workers, health | the dashboard, `duraq` commands, metrics |
//! | [`Operate`] | retry, cancel, pause, prune, reconcile | the dashboard, `duraq` commands, the worker's retention |
//! | [`MailOperations`] | operation records (`docs/mail.md`) | the mailer's delivery job |
//! | [`Store`] | all five | an application's one handle (`Arc<dyn Store>`) |
//!
//! A store implements the five; [`Store`] follows (a blanket impl), and an
//! `Arc<dyn Store>` converts to any of them (`Arc<dyn Inspect>`, ...) where a
//! caller takes only one. The MemoryStore is their reference model; SQLite and
//! PostgreSQL implement them for real, and `duraq-tests` checks them all against
//! the same suite. A wrapper around a store (a decorator, a fault injector)
//! forwards the traits it does not change with [`crate::driver::delegate_store!`].
//!
//! # Rules every implementation follows
//! - Time: each call reads the store's [`crate::Clock`] once (`now`) and uses it
//!   for every timestamp it writes and every "due" comparison it makes.
//! - Atomicity: each call is one transaction; an error leaves the database as it was.
//! - Counts: a call whose committed effect changes any status count (of any
//!   queue: see [`crate::driver::CountChange::is_zero`]) increases the
//!   revision by exactly one and publishes one [`CountDelta`]; a call that changes
//!   no count (a replay, a wake, a heartbeat, a report that lost its lease) leaves
//!   it. `prune` is one mutation per non-empty batch; `enqueue_batch` is one.
//! - Ordering ties are broken by `id` (byte order) after every documented key.
//! - Schedule ownership: a job that reaches a terminal status releases its key only
//!   if the key still points at it; a return to `queued` keeps ownership.
//! - Reservations: a claimed job holding a concurrency key (its own, else
//!   `queue:<name>` when its queue is capped in the claim's config) takes one
//!   reservation of that key, released when it leaves `handed_off` for any reason.
//! - Dependencies: a job that becomes terminal settles its dependents in the
//!   same transaction, at most [`crate::rules::RELEASE_BATCH`] edges of them;
//!   the rest is a release backlog entry written in that transaction and
//!   continued by [`WorkerStore::settle_release_backlog`].

use async_trait::async_trait;
use tokio::sync::{broadcast, watch};

use crate::counts::{CountDelta, CountSnapshot, QueueSnapshot};
use crate::error::Result;
use crate::history::{HistorySample, QueueTotals};
use crate::job::{Job, Lease};
use crate::keys::{QueueName, ScheduleKey};
use crate::new_job::NewJob;
use crate::progress::{JobProgress, ProgressBatch};
use crate::requests::*;
use crate::search::JobPage;
use crate::workers::{
    unhandled_groups, DueJobGroup, WorkerInfo, WorkerRecord, UNHANDLED_SCAN_LIMIT,
};
use crate::workflow_list::{WorkflowListRequest, WorkflowSummary};

/// A whole durable job store: what an application holds (`Arc<dyn Store>`) and
/// hands to the [`crate::Worker`] (which claims, reports, enqueues periodic
/// jobs and prunes, and passes the whole store to handlers) and to the
/// dashboard and the mailer (which take the parts they use; the conversion is
/// implicit). Implemented for every type that implements the five
/// parts: implement those, never this. Object-safe.
///
/// ```
/// use std::sync::Arc;
/// use duraq_core::{Inspect, MemoryStore, Store};
///
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let reads: Arc<dyn Inspect> = store.clone(); // what a read-only caller takes
/// # let _ = reads;
/// ```
pub trait Store: Producer + WorkerStore + Inspect + Operate + MailOperations {}

impl<T: Producer + WorkerStore + Inspect + Operate + MailOperations + ?Sized> Store for T {}

/// Adding work: enqueue and the schedule-key writes, for
/// applications (and the worker's periodic jobs), plus [`Producer::close`].
///
/// `close` lives here because the process that must close a store before it
/// exits is the one whose last writes other processes are waiting to hear of,
/// above all a producer that enqueues and exits (a script, `duraq enqueue`);
/// the worker runtime, the dashboard and the mailer never own the store's life.
/// Being a method of a part of [`Store`], it stays callable on `Arc<dyn Store>`.
#[async_trait]
pub trait Producer: Send + Sync + 'static {
    /// Enqueues one job.
    ///
    /// In order: with an idempotency key, an existing scope whose request digest
    /// matches returns `Replayed(original id)` (whatever the job's status, even
    /// pruned) and one that differs fails with `idempotency-conflict`; with
    /// `deduplicate_while_queued`, the earliest (`scheduledAtMs`, `createdAtMs`,
    /// `id`) `queued` job with the same name, queue and args whose `scheduledAtMs`
    /// is no later than this job's due time is returned as `Deduplicated`. An
    /// explicit concurrency key registers its cap on first use; a later job naming
    /// another cap fails with `concurrency-cap-conflict`. Otherwise the job is
    /// inserted `queued` with `scheduledAtMs` = requested time or now, attempts 0,
    /// plus (when keyed) its ownership row and (when attached) its operation row in
    /// the same transaction. An operation key already in use fails with
    /// `idempotency-conflict`.
    async fn enqueue(&self, job: NewJob) -> Result<EnqueueOutcome>;

    /// Enqueues many jobs in one transaction: all or nothing, one mutation. Each job
    /// follows the rules of [`Producer::enqueue`], seeing the effects of earlier ones.
    async fn enqueue_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<EnqueueOutcome>>;

    /// Inserts `job` as the new owner of `key` with `scheduleOrder` =
    /// high-water + 1. A `queued` previous owner becomes `cancelled`; a `handed_off`
    /// one keeps running with [`RunningOwner::KeepRunning`], or is cancelled as by
    /// [`Operate::cancel_job`] with [`RunningOwner::Stop`]
    /// (`previous_stopped`). Idempotency keys and dedupe are refused with
    /// `unsupported-option`.
    async fn replace_scheduled(
        &self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
    ) -> Result<ReplaceOutcome>;

    /// Cancels the key's queued owner. A handed-off owner keeps running and only
    /// releases the key ([`CancelOutcome::HandedOff`]) with
    /// [`RunningOwner::KeepRunning`]; with [`RunningOwner::Stop`] it is cancelled
    /// as by [`Operate::cancel_job`] ([`CancelOutcome::Stopped`]).
    async fn cancel_scheduled(
        &self,
        key: &ScheduleKey,
        running: RunningOwner,
    ) -> Result<KeyedOutcome<CancelOutcome>>;

    /// Makes a future queued owner due now (`scheduledAtMs` = now); changes nothing else.
    async fn wake_scheduled(&self, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>>;

    /// Delivers signal `name` with `payload` to job `job_id`, in one
    /// transaction: stored once per job and name (the same payload again is
    /// a replay that changes nothing; another is `signal-conflict`), and a
    /// job waiting for it ([`crate::JobContext::wait_for_signal`]) becomes
    /// `queued`, due now. A signal that comes before the wait is kept for it.
    /// `job-not-found`, `job-finished` for a new signal to a terminal job (a
    /// replay is still a replay), `invalid-signal`
    /// for a bad name or a payload over 256 KiB; nothing is written then.
    /// The rule is [`crate::driver::rules::plan_signal`]. (No default: a
    /// wrapper that forgot to forward it would refuse every signal.)
    ///
    /// ```no_run
    /// # async fn demo(store: &dyn duraq_core::Store) -> duraq_core::Result<()> {
    /// let done = store.signal("01a2…", "shipped", serde_json::json!({"tracking": "1Z…"})).await?;
    /// assert!(!done.replayed);
    /// # Ok(()) }
    /// ```
    async fn signal(
        &self,
        job_id: &str,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<crate::Signalled>;

    /// Ends the store's life in this process: announcements still in flight are
    /// sent (the PostgreSQL store's NOTIFYs leave from a background task after
    /// each commit; without this a one-shot command's NOTIFY dies with its
    /// process and workers notice the change only at their next poll), then
    /// background tasks stop and connections are closed. Call it once, when the
    /// process is done with the store; clones share it, so later calls on any
    /// clone fail or see a closed store. Idempotent. The default (memory) does
    /// nothing.
    ///
    /// ```
    /// # async fn demo(store: &dyn duraq_core::Store) -> duraq_core::Result<()> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// store.enqueue(NewJob::new("send_receipt", serde_json::json!([42]), EnqueueOptions::new())?).await?;
    /// store.close().await?; // now the process may exit
    /// # Ok(()) }
    /// ```
    async fn close(&self) -> Result<()> {
        Ok(())
    }
}

/// The worker runtime's part ([`crate::Worker`]): claiming, fenced reports,
/// liveness (heartbeats, registration, recovery of dead workers' leases), lease
/// checks and the signals an idle worker waits on.
#[async_trait]
pub trait WorkerStore: Send + Sync + 'static {
    /// Claims up to `limit` due queued jobs: names in `job_names`, queues
    /// in `queues`; order queue priority desc, `scheduledAtMs`, `createdAtMs`, `id`;
    /// a job whose concurrency key is at its cap is skipped, and so is every job of
    /// a paused queue (read in the claim's own transaction, never blocking other
    /// queues). Each claimed job gets
    /// `handed_off`, attempts + 1, a fresh `handoffId`, the `workerId` and
    /// `handedOffAtMs` = now. Also records a heartbeat for the worker.
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<Job>>;

    /// Reports attempts' outcomes, each under its lease, in one transaction (a
    /// worker reports one attempt as a batch of one). Each is fenced on its own:
    /// its answer is `false`, changing nothing, when the job is gone, not
    /// `handed_off`, or leased to another handoff. `Failed` goes back to `queued`
    /// at now + backoff(attempts) (or `retry_in_ms`) with `lastError` while
    /// `attempts <= maxRetries` and not `discard`, else `failed`. See [`Outcome`]
    /// for the others. One mutation: the revision moves once if any report applied.
    async fn report_batch(&self, reports: Vec<(Lease, Outcome)>) -> Result<Vec<bool>>;

    /// `report_batch(reports)`, then `claim(req)` for the slots those reports
    /// free, so that a worker with a backlog refills its slots in the same round
    /// trip (and, in the stores, the same transaction) that reports them. The
    /// stores run both in one transaction, reports first: the worker never holds
    /// more jobs than slots, and the claim sees what the reports changed. One
    /// mutation when both happen in one transaction.
    ///
    /// The default runs the two calls one after the other. A failed claim after
    /// committed reports is not an error (the reports' answers must not be
    /// lost): it claims nothing, and the worker's claim loop tries again.
    async fn report_and_claim(
        &self,
        reports: Vec<(Lease, Outcome)>,
        req: &ClaimRequest,
    ) -> Result<ReportedAndClaimed> {
        let reported = self.report_batch(reports).await?;
        let claimed = match self.claim(req).await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::warn!("claim after reports failed: {e}");
                Vec::new()
            }
        };
        Ok(ReportedAndClaimed { reported, claimed })
    }

    /// Records that `worker_id` is alive now.
    async fn heartbeat(&self, worker_id: &str) -> Result<()>;

    /// Records a worker process ([`WorkerInfo`]) with `startedAtMs`
    /// and a heartbeat = now. Registering an id again replaces what it
    /// registered. Not a count mutation.
    async fn register_worker(&self, info: &WorkerInfo) -> Result<()>;

    /// Forgets a worker (its graceful stop): returns whether it was recorded.
    /// With no heartbeat row left, leases it still holds are recoverable at
    /// once. Not a count mutation.
    async fn remove_worker(&self, worker_id: &str) -> Result<bool>;

    /// Recovers the leases of workers whose last heartbeat is older than
    /// `now - stale_after_ms` (or who never sent one): each is a failed attempt
    /// (`lastError` says the worker was lost), `orphaned` when no retries are left.
    /// Returns the recovered job ids (sorted). One mutation. Also deletes
    /// the rows of workers (registered or not) last heard from before
    /// [`crate::driver::worker_forget_cutoff_ms`] (a day ago at least): gone for good,
    /// they leave `duraq workers`. Forgetting is not a count mutation.
    async fn recover_stale(&self, stale_after_ms: i64) -> Result<Vec<String>>;

    /// Cancels up to `limit` queued jobs whose expiry has passed, as a claim
    /// that reached them would ([`crate::driver::transitions::expire`], then
    /// what [`crate::driver::rules::give_back`] says), oldest expiry first,
    /// in one mutation; the ids, sorted. Every worker calls it with its
    /// recovery, so a job that no claim reaches (its queue paused, no worker
    /// for its name) still ends by its expiry. Idempotent, like recovery.
    async fn expire_due(&self, limit: usize) -> Result<Vec<String>>;

    /// Raises the priority of up to `pass.limit` queued, due jobs of
    /// `pass.queue` (due at or after `pass.oldest_due_ms`) to what their wait
    /// has earned under `pass.aging` ([`crate::PriorityAging::raise`]);
    /// how many changed. Not a count mutation; idempotent.
    async fn age_priorities(&self, pass: &crate::driver::AgingPass) -> Result<u64>;

    /// The current status and lease of each of `job_ids` that exists, in one
    /// read (any order). The worker's lease check; see [`WorkerStore::lost_leases`].
    async fn lease_states(&self, job_ids: &[String]) -> Result<Vec<LeaseState>>;

    /// Which of `held` are no longer current: one [`WorkerStore::lease_states`] read,
    /// judged by [`crate::transitions::lost_leases`]. A worker asks about the
    /// leases it holds about once a second, so it learns that a running job was
    /// cancelled (or its lease recovered by another process) whatever the store.
    async fn lost_leases(&self, held: &[Lease]) -> Result<Vec<LostLease>> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = held.iter().map(|l| l.job_id.clone()).collect();
        let states = self.lease_states(&ids).await?;
        Ok(crate::transitions::lost_leases(held, &states))
    }

    /// Ids of running jobs cancelled since subscribing, as soon as they are
    /// committed: at once for cancels made through this store value, and (on
    /// PostgreSQL, through NOTIFY) for cancels made by other processes. A hint
    /// for speed only; [`WorkerStore::lost_leases`] is the rule. The default (a store
    /// without such announcements) is a receiver that never yields an id.
    fn subscribe_cancellations(&self) -> broadcast::Receiver<String> {
        broadcast::channel(1).1
    }

    /// The earliest `scheduledAtMs` among queued jobs with one of `job_names` in
    /// `queues` (`None`: all), for a worker's timer. Jobs of paused queues are
    /// left out, so that an idle worker does not wake for work it may not claim.
    async fn next_scheduled_at(
        &self,
        job_names: &[String],
        queues: Option<&[String]>,
    ) -> Result<Option<i64>>;

    /// Persists what a running attempt said (`docs/jobs.md`): the
    /// batch's progress (replacing the stored one) and its new log lines, of
    /// which the job keeps the newest [`crate::limits::MAX_LOG_LINES`], as
    /// [`crate::driver::progress_write`] decides, in one transaction. Fenced by the
    /// batch's lease like a report: `false`, changing nothing, when the job is
    /// gone, not `handed_off`, or leased to another handoff. Changes no job row
    /// and no count. The worker sends at most one batch per attempt per
    /// [`crate::limits::PROGRESS_FLUSH_INTERVAL_MS`], and a last one before it reports.
    ///
    /// The default (a store that keeps no progress) fails with
    /// `unsupported-option`.
    async fn record_progress(&self, batch: ProgressBatch) -> Result<bool> {
        let _ = batch;
        Err(crate::error::Error::invalid(
            crate::error::ErrorCode::UnsupportedOption,
            "this store keeps no job progress",
        ))
    }

    /// Records a durable step's output ([`crate::JobContext::step`]) under
    /// the write's lease, in one transaction: `None`, changing nothing, when
    /// the lease does not hold ([`crate::driver::Lease::is_current`]).
    /// Otherwise the record now stored under the job and name: this one, or
    /// the one already there (a name is recorded once; the first write
    /// wins). Changes no job row and no count; the records go when their job
    /// is deleted.
    ///
    /// The default (a store that keeps no steps) fails with
    /// `unsupported-option`.
    async fn record_step(
        &self,
        write: crate::driver::StepWrite,
    ) -> Result<Option<crate::inspect::StepRecord>> {
        let _ = write;
        Err(crate::error::Error::invalid(
            crate::error::ErrorCode::UnsupportedOption,
            "this store does not keep durable steps",
        ))
    }

    /// Ends up to `limit` waits for a signal whose time is up (`pending`
    /// jobs with [`Job::awaiting_signal`] and `scheduledAtMs <= now`, oldest
    /// first): each becomes `queued`, due now
    /// ([`crate::driver::transitions::end_wait`]); the ids, sorted. Every
    /// worker's recovery pass calls it; it is idempotent. The default (a
    /// store that keeps no signals) ends none.
    async fn end_timed_out_waits(&self, limit: usize) -> Result<Vec<String>> {
        let _ = limit;
        Ok(Vec::new())
    }

    /// The store's own upkeep, which every worker runs for it: once before its
    /// first claim, then every two seconds while it runs. A store decides
    /// there what its backend needs and how often (PostgreSQL reclaims the
    /// dead row versions among its live jobs with a `VACUUM` when enough wait);
    /// errors are the store's to log. [`Upkeep::Unneeded`] (the default) tells
    /// the worker to stop asking.
    async fn upkeep(&self) -> Result<Upkeep> {
        Ok(Upkeep::Unneeded)
    }

    /// A counter that moves whenever work may have become available (enqueue,
    /// wake, retry, a job returned to the queue), in this process at once and from
    /// other processes within a short poll.
    fn work_signal(&self) -> watch::Receiver<u64>;

    /// Continues the release backlog (`docs/workflows.md`, "Cost"): a job that
    /// became terminal settles at most [`crate::rules::RELEASE_BATCH`] of its
    /// dependency edges in the transaction that finished it and records the
    /// rest as a backlog entry; each step here takes one entry, settles its
    /// next edges (and the cascade they cause) under the same bound through
    /// [`crate::rules::DependencyRelease::resume`], and moves the entry's
    /// cursor on or deletes it, in one transaction. At most `max_steps`
    /// steps; stops early when no entry is left. Several callers share the
    /// work without settling an edge twice (PostgreSQL: an entry is taken
    /// `FOR UPDATE SKIP LOCKED`). Each step is one mutation for the counts,
    /// and signals work when it released a dependent.
    async fn settle_release_backlog(&self, max_steps: usize) -> Result<BacklogProgress>;

    /// A counter that moves whenever a commit through this store value left a
    /// release backlog entry, so the worker runtime continues it at once
    /// (entries left by other processes are found by its periodic pass).
    fn release_backlog_signal(&self) -> watch::Receiver<u64>;
}

/// What a store's [`WorkerStore::upkeep`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Upkeep {
    /// This store needs no upkeep from workers: they stop asking.
    Unneeded,
    /// Ask again at the next interval.
    Again,
}

/// Reads: jobs, schedule keys, counts, workers and health, for the dashboard
/// (`duraq-web`), `duraq` commands, metrics and applications. Never
/// changes anything.
#[async_trait]
pub trait Inspect: Send + Sync + 'static {
    /// One job by id.
    async fn get_job(&self, id: &str) -> Result<Option<Job>>;

    /// Jobs matching `filter`, newest first, reading at most the filter's scan
    /// budget of candidate rows ([`JobFilter::scan_budget`]): the indexed
    /// conditions narrow in the database, [`JobFilter::matches`] judges the
    /// rest ([`crate::rules::SearchScan`]). When the budget runs out before
    /// `limit` matches, [`JobPage::resume`] says where to go on.
    async fn search_jobs(&self, filter: &JobFilter) -> Result<JobPage>;

    /// At most `limit` jobs whose id starts with `prefix`, in id order (byte
    /// order), read through the primary key. See [`crate::inspect::resolve_job`].
    async fn jobs_with_id_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<Job>>;

    /// A page of workflows, largest id first ([`WorkflowListRequest`]): one
    /// summary per workflow id on the page, its steps counted per status. Read
    /// through the jobs' workflow index, so a page costs its workflows' steps.
    async fn list_workflows(&self, req: &WorkflowListRequest) -> Result<Vec<WorkflowSummary>>;

    /// The current owner and, when asked, the newest terminal job that carries the
    /// key (by `scheduleOrder`, then `createdAtMs`, then `id`).
    async fn get_scheduled(
        &self,
        key: &ScheduleKey,
        include_latest_terminal: bool,
    ) -> Result<ScheduledJobs>;

    /// Exact counts per status with their revision; constant cost in table size.
    async fn count_snapshot(&self) -> Result<CountSnapshot>;

    /// Exact counts per status and per queue, read together with their
    /// revision (the one [`Inspect::count_snapshot`] reports for the same state), plus
    /// each queue's latency as of the clock reading `at_ms` (see
    /// [`crate::inspect::QueueCounts`]). Costs one read of the counter rows plus one index
    /// lookup per queue that has queued jobs, whatever the number of jobs. Queues
    /// whose counts are all zero are left out unless paused; each entry says
    /// whether its queue is paused (see [`QueueSnapshot::with_paused`]).
    async fn queue_snapshot(&self) -> Result<QueueSnapshot>;

    /// Committed count deltas of this process's view (SQLite: in-process; PostgreSQL:
    /// every process, via NOTIFY).
    fn subscribe_counts(&self) -> broadcast::Receiver<CountDelta>;

    /// Waits until job `id` is finished, then answers with it (its status,
    /// output and last error), or with the job as it is when `timeout` runs
    /// out; `job-not-found` when there is no such job. Woken by the count
    /// changes this store hears of, and reads the job at least every 100 ms
    /// for the ones it cannot hear (another process's commit on SQLite).
    ///
    /// ```no_run
    /// # async fn demo(store: &dyn duraq_core::Store, id: &str) -> duraq_core::Result<()> {
    /// use std::time::Duration;
    /// use duraq_core::inspect::Waited;
    /// match store.wait_for(id, Duration::from_secs(30)).await? {
    ///     Waited::Finished(job) => println!("{}: {:?}", job.status.as_str(), job.output),
    ///     Waited::Deleted => println!("completed and deleted (an ephemeral job)"),
    ///     Waited::TimedOut(job) => println!("still {}", job.status.as_str()),
    /// }
    /// # Ok(()) }
    /// ```
    async fn wait_for(
        &self,
        id: &str,
        timeout: std::time::Duration,
    ) -> Result<crate::wait::Waited> {
        crate::wait::wait_for(self.subscribe_counts(), || self.get_job(id), id, timeout).await
    }

    /// Every registered worker, by id (byte order), with its state as of now
    /// (stale when its last heartbeat is older than `now - stale_after_ms`, see
    /// [`crate::inspect::WorkerState::at`]) and the jobs handed off to it. Worker ids that only
    /// claimed (without [`WorkerStore::register_worker`]) are not listed. At most two reads
    /// (the worker rows, and the handed-off jobs through their own index),
    /// whatever the number of workers.
    async fn list_workers(&self, stale_after_ms: i64) -> Result<Vec<WorkerRecord>>;

    /// The first `limit` due queued jobs (`scheduledAtMs <= now`) in claim order
    /// within a queue (job priority, higher first, then `scheduledAtMs`,
    /// `createdAtMs`, `id`), grouped by queue and job name, ordered by queue then
    /// name (byte order). Paused queues included.
    async fn due_job_names(&self, limit: usize) -> Result<Vec<DueJobGroup>>;

    /// The fairness keys of `queue` with queued jobs, in byte order, each
    /// with how many it has queued (see [`crate::inspect::KeyBacklog`]: at
    /// most 100 keys, counted up to 10,000 each): one index range per key.
    async fn fairness_keys(&self, queue: &str) -> Result<Vec<crate::inspect::KeyBacklog>>;

    /// The groups of [`Inspect::due_job_names`] (over the oldest
    /// [`UNHANDLED_SCAN_LIMIT`] due jobs) that no alive registered worker
    /// handles ([`unhandled_groups`]): a job name nobody registered (a typo) or
    /// a queue nobody serves.
    async fn unhandled_jobs(&self, stale_after_ms: i64) -> Result<Vec<DueJobGroup>> {
        let workers = self.list_workers(stale_after_ms).await?;
        let groups = self.due_job_names(UNHANDLED_SCAN_LIMIT).await?;
        Ok(unhandled_groups(groups, &workers))
    }

    /// A job's progress and its newest log lines ([`WorkerStore::record_progress`]),
    /// oldest line first; `None` when the job never said anything (or does not
    /// exist). Two reads by the job's id, whatever the number of jobs. The
    /// default (a store that keeps no progress) is `None`.
    async fn job_progress(&self, id: &str) -> Result<Option<JobProgress>> {
        let _ = id;
        Ok(None)
    }

    /// The signals delivered to job `id` ([`Producer::signal`]), by time
    /// then name; empty for none or no job. One read by the job's id. The
    /// default (a store that keeps no signals) is empty.
    async fn job_signals(&self, id: &str) -> Result<Vec<crate::inspect::SignalRecord>> {
        let _ = id;
        Ok(Vec::new())
    }

    /// The recorded durable steps of job `id` ([`crate::JobContext::step`]),
    /// in the order they were recorded (by time, then name); empty for a job
    /// without steps or no job. One read by the job's id. The default (a
    /// store that keeps no steps) is empty.
    async fn job_steps(&self, id: &str) -> Result<Vec<crate::inspect::StepRecord>> {
        let _ = id;
        Ok(Vec::new())
    }

    /// Backend, schema version and detail.
    async fn health(&self) -> Result<Health>;

    /// Every queue's monotonic [`OutcomeTotals`](crate::inspect::OutcomeTotals) (`docs/history.md`), by name
    /// (byte order), including queues whose jobs were all pruned. Read from the
    /// per-queue counter rows: constant cost in the number of jobs.
    async fn outcome_totals(&self) -> Result<Vec<QueueTotals>>;

    /// The stored samples of minutes from `since_ms` on, ordered by minute then
    /// queue (byte order). Read by the primary key: cost grows with the
    /// minutes asked for (times the queues), not with the jobs.
    async fn history(&self, since_ms: i64) -> Result<Vec<HistorySample>>;
}

/// Operator actions: retry and cancel a job, pause and resume a queue, prune,
/// reconcile and sample the history, taken from the dashboard, `duraq` commands and the
/// worker's maintenance. It extends [`Inspect`] because every operator tool shows
/// what it acts on: the dashboard takes one `Arc<dyn Operate>` for both.
#[async_trait]
pub trait Operate: Inspect {
    /// Operator retry of a terminal job: `queued`, due now, attempts 0, terminal
    /// timestamps and lease cleared, `lastError` kept; it takes its schedule key
    /// back if the key has no owner. `job-not-found`, or `invalid-job-state` for a
    /// job that is not terminal.
    async fn retry_job(&self, id: &str) -> Result<Job>;

    /// Operator cancel of a `queued` or `handed_off` job (the lease is voided and
    /// its reservation released). `job-not-found`, or `invalid-job-state` if terminal.
    /// A running job's worker learns of it (see [`WorkerStore::subscribe_cancellations`]
    /// and [`WorkerStore::lost_leases`]) and stops the attempt.
    async fn cancel_job(&self, id: &str) -> Result<Job>;

    /// Applies `action` to each of `ids` that it changes
    /// ([`BulkAction::changes`] at the store's clock), in one transaction: a
    /// retry or cancel as [`Operate::retry_job`] / [`Operate::cancel_job`]
    /// would (running jobs' workers are told of a cancel), a delete as a prune
    /// of exactly those jobs, a run-now by moving the jobs' scheduled time to
    /// now (idle workers are woken as for an enqueue; no count moves, so the
    /// revision stays). Ids with no job are counted as missing, jobs the action
    /// does not change as skipped; neither is an error. One count mutation (one
    /// revision) when a count changed. [`crate::inspect::run_bulk`] drives it in
    /// batches.
    async fn act_on_jobs(&self, action: BulkAction, ids: &[String]) -> Result<BulkBatch>;

    /// Pauses `queue`: from the next claim on, no worker claims its
    /// jobs (a durable row, seen by every process within a poll). Jobs already
    /// handed off keep running and report as usual; enqueueing into the queue
    /// still works. Returns `true` if the queue was running, `false` if it was
    /// already paused (nothing changes). Not a count mutation: the revision does
    /// not move. A queue need not hold jobs to be paused.
    async fn pause_queue(&self, queue: &QueueName) -> Result<bool>;

    /// Resumes a paused `queue`: its due jobs become claimable again and idle
    /// workers are woken (as after an enqueue). Returns `true` if it was paused,
    /// `false` if it was running (nothing changes). Not a count mutation.
    async fn resume_queue(&self, queue: &QueueName) -> Result<bool>;

    /// Deletes terminal jobs older than the given ages, in batches. Never touches
    /// idempotency ownership, operation rows or schedule high-water marks.
    async fn prune(&self, req: &PruneRequest) -> Result<PruneReport>;

    /// Sets every reservation count to the number of `handed_off` jobs holding that
    /// key; returns how many keys changed.
    async fn reconcile_reservations(&self) -> Result<u64>;

    /// The history sampler: stores every queue's current totals as the sample of
    /// the current minute ([`crate::inspect::history_minute`] of the store's clock),
    /// unless that minute already has samples (the first sampler of a minute
    /// wins, so any number of processes may call it), and deletes samples older
    /// than [`crate::limits::HISTORY_RETENTION_MS`]. Returns whether this call wrote the
    /// minute's samples. Changes no job and no count, and moves no revision.
    async fn record_history(&self) -> Result<bool>;
}

/// Operation records of mail deliveries (`docs/mail.md`), for the mailer's
/// delivery job: read the record, stamp the first attempt, store the result.
/// The record itself is written by [`Producer::enqueue`] with the job.
#[async_trait]
pub trait MailOperations: Send + Sync + 'static {
    /// Reads an operation record.
    async fn get_operation(&self, key: &str) -> Result<Option<Operation>>;

    /// Durably stamps `firstAttemptStartedAtMs` = now if unset and returns the row
    /// (`operation-not-found` when missing). Committed before it returns.
    async fn start_operation_attempt(&self, key: &str) -> Result<Operation>;

    /// Stores the outcome of an operation (e.g. the provider's message id).
    async fn record_operation_result(&self, key: &str, result: serde_json::Value) -> Result<()>;
}
