//! [`delegate_store!`](crate::driver::delegate_store): forwarding whole store traits to
//! a field, so that a wrapper around a store (a fault injector in a test, a
//! decorator that counts or traces calls) writes only the trait whose calls it
//! changes.

/// Implements the named store traits for a wrapper type by forwarding every
/// method (default methods and [`Producer::close`](crate::Producer::close)
/// included) to one of its fields.
///
/// The field may hold any value whose type implements those traits: a concrete
/// store, an `Arc<dyn Store>`, another wrapper. The traits are among
/// `Producer`, `WorkerStore`, `Inspect`, `Operate` and `MailOperations`; the
/// wrapper implements the others itself, and is then a [`Store`](crate::Store).
/// The wrapper type must not be generic.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use duraq_core::{async_trait, MemoryStore, Operate, Result};
/// use duraq_core::driver::delegate_store;
///
/// /// Counts operator retries; forwards everything else.
/// struct CountingRetries {
///     inner: MemoryStore,
///     retries: AtomicUsize,
/// }
///
/// delegate_store!(impl Producer, WorkerStore, Inspect, MailOperations for CountingRetries => inner);
///
/// #[async_trait]
/// impl Operate for CountingRetries {
///     async fn retry_job(&self, id: &str) -> Result<duraq_core::Job> {
///         self.retries.fetch_add(1, Ordering::Relaxed);
///         self.inner.retry_job(id).await
///     }
///     async fn cancel_job(&self, id: &str) -> Result<duraq_core::Job> {
///         self.inner.cancel_job(id).await
///     }
///     async fn act_on_jobs(
///         &self,
///         action: duraq_core::inspect::BulkAction,
///         ids: &[String],
///     ) -> Result<duraq_core::inspect::BulkBatch> {
///         self.inner.act_on_jobs(action, ids).await
///     }
///     async fn pause_queue(&self, queue: &duraq_core::QueueName) -> Result<bool> {
///         self.inner.pause_queue(queue).await
///     }
///     async fn resume_queue(&self, queue: &duraq_core::QueueName) -> Result<bool> {
///         self.inner.resume_queue(queue).await
///     }
///     async fn prune(&self, req: &duraq_core::inspect::PruneRequest) -> Result<duraq_core::inspect::PruneReport> {
///         self.inner.prune(req).await
///     }
///     async fn reconcile_reservations(&self) -> Result<u64> {
///         self.inner.reconcile_reservations().await
///     }
///     async fn record_history(&self) -> Result<bool> {
///         self.inner.record_history().await
///     }
/// }
///
/// let store: std::sync::Arc<dyn duraq_core::Store> = std::sync::Arc::new(CountingRetries {
///     inner: MemoryStore::new(),
///     retries: AtomicUsize::new(0),
/// });
/// # let _ = store;
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! delegate_store {
    (impl $($part:ident),+ $(,)? for $ty:ty => $field:ident) => {
        $( $crate::driver::delegate_store!(@part $part, $ty, $field); )+
    };
    (@part Producer, $ty:ty, $field:ident) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::Producer as _;
            #[$crate::async_trait]
            impl $crate::Producer for $ty {
                async fn enqueue(&self, job: $crate::NewJob) -> $crate::Result<$crate::EnqueueOutcome> {
                    self.$field.enqueue(job).await
                }
                async fn enqueue_batch(
                    &self,
                    jobs: ::std::vec::Vec<$crate::NewJob>,
                ) -> $crate::Result<::std::vec::Vec<$crate::EnqueueOutcome>> {
                    self.$field.enqueue_batch(jobs).await
                }
                async fn replace_scheduled(
                    &self,
                    key: &$crate::ScheduleKey,
                    job: $crate::NewJob,
                    running: $crate::RunningOwner,
                ) -> $crate::Result<$crate::ReplaceOutcome> {
                    self.$field.replace_scheduled(key, job, running).await
                }
                async fn cancel_scheduled(
                    &self,
                    key: &$crate::ScheduleKey,
                    running: $crate::RunningOwner,
                ) -> $crate::Result<$crate::KeyedOutcome<$crate::CancelOutcome>> {
                    self.$field.cancel_scheduled(key, running).await
                }
                async fn wake_scheduled(
                    &self,
                    key: &$crate::ScheduleKey,
                ) -> $crate::Result<$crate::KeyedOutcome<$crate::WakeOutcome>> {
                    self.$field.wake_scheduled(key).await
                }
                async fn signal(
                    &self,
                    job_id: &str,
                    name: &str,
                    payload: $crate::__private::serde_json::Value,
                ) -> $crate::Result<$crate::Signalled> {
                    self.$field.signal(job_id, name, payload).await
                }
                async fn close(&self) -> $crate::Result<()> {
                    self.$field.close().await
                }
            }
        };
    };
    (@part WorkerStore, $ty:ty, $field:ident) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::WorkerStore as _;
            #[$crate::async_trait]
            impl $crate::WorkerStore for $ty {
                async fn claim(
                    &self,
                    req: &$crate::driver::ClaimRequest,
                ) -> $crate::Result<::std::vec::Vec<$crate::Job>> {
                    self.$field.claim(req).await
                }
                async fn report_batch(
                    &self,
                    reports: ::std::vec::Vec<($crate::driver::Lease, $crate::Outcome)>,
                ) -> $crate::Result<::std::vec::Vec<bool>> {
                    self.$field.report_batch(reports).await
                }
                async fn report_and_claim(
                    &self,
                    reports: ::std::vec::Vec<($crate::driver::Lease, $crate::Outcome)>,
                    req: &$crate::driver::ClaimRequest,
                ) -> $crate::Result<$crate::driver::ReportedAndClaimed> {
                    self.$field.report_and_claim(reports, req).await
                }
                async fn heartbeat(&self, worker_id: &str) -> $crate::Result<()> {
                    self.$field.heartbeat(worker_id).await
                }
                async fn register_worker(&self, info: &$crate::driver::WorkerInfo) -> $crate::Result<()> {
                    self.$field.register_worker(info).await
                }
                async fn remove_worker(&self, worker_id: &str) -> $crate::Result<bool> {
                    self.$field.remove_worker(worker_id).await
                }
                async fn recover_stale(
                    &self,
                    stale_after_ms: i64,
                ) -> $crate::Result<::std::vec::Vec<::std::string::String>> {
                    self.$field.recover_stale(stale_after_ms).await
                }
                async fn expire_due(
                    &self,
                    limit: usize,
                ) -> $crate::Result<::std::vec::Vec<::std::string::String>> {
                    self.$field.expire_due(limit).await
                }
                async fn age_priorities(
                    &self,
                    pass: &$crate::driver::AgingPass,
                ) -> $crate::Result<u64> {
                    self.$field.age_priorities(pass).await
                }
                async fn lease_states(
                    &self,
                    job_ids: &[::std::string::String],
                ) -> $crate::Result<::std::vec::Vec<$crate::driver::LeaseState>> {
                    self.$field.lease_states(job_ids).await
                }
                async fn lost_leases(
                    &self,
                    held: &[$crate::driver::Lease],
                ) -> $crate::Result<::std::vec::Vec<$crate::driver::LostLease>> {
                    self.$field.lost_leases(held).await
                }
                fn subscribe_cancellations(
                    &self,
                ) -> $crate::__private::tokio::sync::broadcast::Receiver<::std::string::String> {
                    self.$field.subscribe_cancellations()
                }
                async fn next_scheduled_at(
                    &self,
                    job_names: &[::std::string::String],
                    queues: ::std::option::Option<&[::std::string::String]>,
                ) -> $crate::Result<::std::option::Option<i64>> {
                    self.$field.next_scheduled_at(job_names, queues).await
                }
                async fn record_progress(
                    &self,
                    batch: $crate::driver::ProgressBatch,
                ) -> $crate::Result<bool> {
                    self.$field.record_progress(batch).await
                }
                async fn end_timed_out_waits(
                    &self,
                    limit: usize,
                ) -> $crate::Result<::std::vec::Vec<::std::string::String>> {
                    self.$field.end_timed_out_waits(limit).await
                }
                async fn record_step(
                    &self,
                    write: $crate::driver::StepWrite,
                ) -> $crate::Result<::std::option::Option<$crate::inspect::StepRecord>> {
                    self.$field.record_step(write).await
                }
                async fn upkeep(&self) -> $crate::Result<$crate::driver::Upkeep> {
                    self.$field.upkeep().await
                }
                fn work_signal(&self) -> $crate::__private::tokio::sync::watch::Receiver<u64> {
                    self.$field.work_signal()
                }
                async fn settle_release_backlog(
                    &self,
                    max_steps: usize,
                ) -> $crate::Result<$crate::driver::BacklogProgress> {
                    self.$field.settle_release_backlog(max_steps).await
                }
                fn release_backlog_signal(
                    &self,
                ) -> $crate::__private::tokio::sync::watch::Receiver<u64> {
                    self.$field.release_backlog_signal()
                }
            }
        };
    };
    (@part Inspect, $ty:ty, $field:ident) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::Inspect as _;
            #[$crate::async_trait]
            impl $crate::Inspect for $ty {
                async fn get_job(
                    &self,
                    id: &str,
                ) -> $crate::Result<::std::option::Option<$crate::Job>> {
                    self.$field.get_job(id).await
                }
                async fn search_jobs(
                    &self,
                    filter: &$crate::inspect::JobFilter,
                ) -> $crate::Result<$crate::inspect::JobPage> {
                    self.$field.search_jobs(filter).await
                }
                async fn jobs_with_id_prefix(
                    &self,
                    prefix: &str,
                    limit: usize,
                ) -> $crate::Result<::std::vec::Vec<$crate::Job>> {
                    self.$field.jobs_with_id_prefix(prefix, limit).await
                }
                async fn list_workflows(
                    &self,
                    req: &$crate::inspect::WorkflowListRequest,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::WorkflowSummary>> {
                    self.$field.list_workflows(req).await
                }
                async fn get_scheduled(
                    &self,
                    key: &$crate::ScheduleKey,
                    include_latest_terminal: bool,
                ) -> $crate::Result<$crate::inspect::ScheduledJobs> {
                    self.$field.get_scheduled(key, include_latest_terminal).await
                }
                async fn count_snapshot(&self) -> $crate::Result<$crate::inspect::CountSnapshot> {
                    self.$field.count_snapshot().await
                }
                async fn queue_snapshot(&self) -> $crate::Result<$crate::inspect::QueueSnapshot> {
                    self.$field.queue_snapshot().await
                }
                fn subscribe_counts(&self) -> $crate::__private::tokio::sync::broadcast::Receiver<$crate::inspect::CountDelta> {
                    self.$field.subscribe_counts()
                }
                async fn list_workers(
                    &self,
                    stale_after_ms: i64,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::WorkerRecord>> {
                    self.$field.list_workers(stale_after_ms).await
                }
                async fn fairness_keys(
                    &self,
                    queue: &str,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::KeyBacklog>> {
                    self.$field.fairness_keys(queue).await
                }
                async fn due_job_names(
                    &self,
                    limit: usize,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::DueJobGroup>> {
                    self.$field.due_job_names(limit).await
                }
                async fn unhandled_jobs(
                    &self,
                    stale_after_ms: i64,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::DueJobGroup>> {
                    self.$field.unhandled_jobs(stale_after_ms).await
                }
                async fn job_progress(
                    &self,
                    id: &str,
                ) -> $crate::Result<::std::option::Option<$crate::inspect::JobProgress>> {
                    self.$field.job_progress(id).await
                }
                async fn job_signals(
                    &self,
                    id: &str,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::SignalRecord>> {
                    self.$field.job_signals(id).await
                }
                async fn job_steps(
                    &self,
                    id: &str,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::StepRecord>> {
                    self.$field.job_steps(id).await
                }
                async fn health(&self) -> $crate::Result<$crate::inspect::Health> {
                    self.$field.health().await
                }
                async fn outcome_totals(
                    &self,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::QueueTotals>> {
                    self.$field.outcome_totals().await
                }
                async fn history(
                    &self,
                    since_ms: i64,
                ) -> $crate::Result<::std::vec::Vec<$crate::inspect::HistorySample>> {
                    self.$field.history(since_ms).await
                }
            }
        };
    };
    (@part Operate, $ty:ty, $field:ident) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::Operate as _;
            #[$crate::async_trait]
            impl $crate::Operate for $ty {
                async fn retry_job(&self, id: &str) -> $crate::Result<$crate::Job> {
                    self.$field.retry_job(id).await
                }
                async fn cancel_job(&self, id: &str) -> $crate::Result<$crate::Job> {
                    self.$field.cancel_job(id).await
                }
                async fn act_on_jobs(
                    &self,
                    action: $crate::inspect::BulkAction,
                    ids: &[::std::string::String],
                ) -> $crate::Result<$crate::inspect::BulkBatch> {
                    self.$field.act_on_jobs(action, ids).await
                }
                async fn pause_queue(&self, queue: &$crate::QueueName) -> $crate::Result<bool> {
                    self.$field.pause_queue(queue).await
                }
                async fn resume_queue(&self, queue: &$crate::QueueName) -> $crate::Result<bool> {
                    self.$field.resume_queue(queue).await
                }
                async fn prune(
                    &self,
                    req: &$crate::inspect::PruneRequest,
                ) -> $crate::Result<$crate::inspect::PruneReport> {
                    self.$field.prune(req).await
                }
                async fn reconcile_reservations(&self) -> $crate::Result<u64> {
                    self.$field.reconcile_reservations().await
                }
                async fn record_history(&self) -> $crate::Result<bool> {
                    self.$field.record_history().await
                }
            }
        };
    };
    (@part MailOperations, $ty:ty, $field:ident) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::MailOperations as _;
            #[$crate::async_trait]
            impl $crate::MailOperations for $ty {
                async fn get_operation(
                    &self,
                    key: &str,
                ) -> $crate::Result<::std::option::Option<$crate::inspect::Operation>> {
                    self.$field.get_operation(key).await
                }
                async fn start_operation_attempt(
                    &self,
                    key: &str,
                ) -> $crate::Result<$crate::inspect::Operation> {
                    self.$field.start_operation_attempt(key).await
                }
                async fn record_operation_result(
                    &self,
                    key: &str,
                    result: $crate::__private::serde_json::Value,
                ) -> $crate::Result<()> {
                    self.$field.record_operation_result(key, result).await
                }
            }
        };
    };
}
