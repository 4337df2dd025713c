//! The store the code under test gets: the kit's real store, with the
//! producer calls watched so that inline mode can run what they enqueue.
//! Everything else is forwarded unchanged (`delegate_store!`), so reads,
//! claims and reports are the real store's.
//!
//! Why a wrapper and not a hook in the application: the application's enqueue
//! is `store.enqueue(job)` on whatever store it is handed; inline mode must
//! work without the application knowing it is under test.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use duraq_core::driver::delegate_store;
use duraq_core::{
    EnqueueOutcome, KeyedOutcome, NewJob, Producer, ReplaceOutcome, Result, RunningOwner,
    ScheduleKey, Store, WakeOutcome, WorkerError,
};

use crate::{Kit, KitLink};

/// The kit's real store, with inline runs after enqueues.
pub(crate) struct KitStore {
    base: Arc<dyn Store>,
    kit: KitLink,
}

delegate_store!(impl WorkerStore, Inspect, Operate, MailOperations for KitStore => base);

impl KitStore {
    pub(crate) fn new(base: Arc<dyn Store>) -> Self {
        Self {
            base,
            kit: KitLink::new(),
        }
    }

    /// Links the wrapper to its kit (once, right after the kit is built).
    pub(crate) fn attach(&self, kit: &Arc<Kit>) {
        let _ = self.kit.set(Arc::downgrade(kit));
    }

    /// The kit, when it is alive and in inline mode.
    fn inline_kit(&self) -> Option<Arc<Kit>> {
        let kit = self.kit.get().and_then(Weak::upgrade)?;
        kit.is_inline().then_some(kit)
    }

    /// Runs each newly created job of `ids` that is due, in inline mode.
    async fn run_created(&self, ids: impl IntoIterator<Item = &str>) -> Result<()> {
        let Some(kit) = self.inline_kit() else {
            return Ok(());
        };
        for id in ids {
            kit.run_job(id).await.map_err(core_error)?;
        }
        Ok(())
    }
}

fn created(outcome: &EnqueueOutcome) -> Option<&str> {
    match outcome {
        EnqueueOutcome::Created(id) => Some(id),
        _ => None,
    }
}

/// An inline run's failure as the enqueue's error: a store error keeps its
/// code; anything else is a backend error with the worker's as its cause.
fn core_error(e: WorkerError) -> duraq_core::Error {
    match e {
        WorkerError::Core(e) => e,
        other => duraq_core::Error::backend("the test kit's inline run failed", other),
    }
}

#[async_trait]
impl Producer for KitStore {
    async fn enqueue(&self, job: NewJob) -> Result<EnqueueOutcome> {
        let outcome = self.base.enqueue(job).await?;
        self.run_created(created(&outcome)).await?;
        Ok(outcome)
    }

    async fn enqueue_batch(&self, jobs: Vec<NewJob>) -> Result<Vec<EnqueueOutcome>> {
        let outcomes = self.base.enqueue_batch(jobs).await?;
        self.run_created(outcomes.iter().filter_map(created))
            .await?;
        Ok(outcomes)
    }

    async fn replace_scheduled(
        &self,
        key: &ScheduleKey,
        job: NewJob,
        running: RunningOwner,
    ) -> Result<ReplaceOutcome> {
        let outcome = self.base.replace_scheduled(key, job, running).await?;
        self.run_created([outcome.job_id.as_str()]).await?;
        Ok(outcome)
    }

    async fn cancel_scheduled(
        &self,
        key: &ScheduleKey,
        running: RunningOwner,
    ) -> Result<KeyedOutcome<duraq_core::CancelOutcome>> {
        self.base.cancel_scheduled(key, running).await
    }

    async fn wake_scheduled(&self, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
        self.base.wake_scheduled(key).await
    }

    /// Delivers the signal; in inline mode a job it woke has run when this
    /// returns, as a job just enqueued has.
    async fn signal(
        &self,
        job_id: &str,
        name: &str,
        payload: serde_json::Value,
    ) -> Result<duraq_core::Signalled> {
        let done = self.base.signal(job_id, name, payload).await?;
        if done.woke {
            self.run_created([job_id]).await?;
        }
        Ok(done)
    }

    async fn close(&self) -> Result<()> {
        self.base.close().await
    }
}
