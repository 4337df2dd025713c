//! A test kit for applications that use duraq: the `Oban.Testing` / `rivertest`
//! counterpart (`docs/testing.md`). A test builds a [`TestKit`] from the same
//! [`Registry`] its worker takes, hands [`TestKit::store`] to the code under
//! test, and then either asserts on what was enqueued (collecting mode, the
//! default) or lets each enqueue run its job at once (inline mode); `drain`
//! runs whatever is due, and a [`ManualClock`] moves time.
//!
//! Why a crate of its own and no re-implementation: the kit is a real store
//! (`MemoryStore` or a temporary SQLite file) and a real [`Worker`] built from
//! the application's registry; jobs run through [`Worker::run_due`], the
//! worker runtime's own attempt path, so retries, backoffs, timeouts, panics
//! and `invalid-args` are what production does. Nothing here sleeps or polls.
//!
//! ```
//! use duraq_core::{JobArgs, JobContext, JobError, JobHandler, JobResult, Registry};
//! use duraq_testkit::TestKit;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug)]
//! struct SendWelcome {
//!     user_id: i64,
//! }
//! impl JobArgs for SendWelcome {
//!     const NAME: &'static str = "send_welcome";
//! }
//! struct Welcomer;
//! #[duraq_core::async_trait]
//! impl JobHandler for Welcomer {
//!     type Args = SendWelcome;
//!     async fn perform(&self, _ctx: &JobContext, _args: SendWelcome) -> Result<JobResult, JobError> {
//!         Ok(JobResult::Completed)
//!     }
//! }
//!
//! /// The application code under test: enqueues through any store it is given.
//! async fn sign_up(store: &dyn duraq_core::Store, user_id: i64) -> duraq_core::Result<()> {
//!     store.enqueue(SendWelcome { user_id }.job()?).await?;
//!     Ok(())
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let kit = TestKit::memory(Registry::new().register(Welcomer).unwrap()).unwrap();
//! sign_up(kit.store().as_ref(), 42).await.unwrap();
//! kit.assert_enqueued::<SendWelcome>(|args| args.user_id == 42).await;
//!
//! let report = kit.drain().await.unwrap();
//! assert_eq!(report.completed, 1);
//! kit.assert_not_enqueued::<SendWelcome>().await;
//! # });
//! ```

mod assert;
mod builder;
mod error;
mod run;
mod store;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use duraq_core::worker::JobFinished;
use duraq_core::{Clock, Job, JobArgs, ManualClock, Producer, Registry, Store, Worker};

pub use assert::Enqueued;
pub use builder::TestKitBuilder;
pub use error::Error;
pub use run::{DrainReport, MAX_DRAIN_ROUNDS};

use store::KitStore;

/// A store, a manual clock and a worker over the application's handlers, for
/// one test. Cheap to share by reference; dropping it removes a temporary
/// SQLite file (once [`TestKit::store`]'s clones are gone too).
pub struct TestKit {
    kit: Arc<Kit>,
    store: Arc<KitStore>,
}

/// What the kit's store wrapper reaches back to (weakly: the worker holds the
/// wrapper, so a strong link would be a cycle).
pub(crate) struct Kit {
    pub(crate) base: Arc<dyn Store>,
    pub(crate) worker: Worker,
    pub(crate) clock: ManualClock,
    /// The job names the worker handles (its registry's).
    pub(crate) names: Vec<String>,
    pub(crate) inline: AtomicBool,
    /// Every attempt the kit ran, in the order they ended.
    pub(crate) attempts: Mutex<Vec<JobFinished>>,
}

impl std::fmt::Debug for TestKit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestKit")
            .field("now_ms", &self.kit.clock.now_ms())
            .field("inline", &self.is_inline())
            .field("worker", &self.kit.worker)
            .finish()
    }
}

impl TestKit {
    /// Starts configuring a kit over `registry`, the one the application's
    /// worker takes.
    pub fn builder(registry: Registry) -> TestKitBuilder {
        TestKitBuilder {
            registry,
            start_ms: None,
            clock: None,
            configure: None,
        }
    }

    /// A collecting kit on a fresh [`MemoryStore`](duraq_core::MemoryStore); see [`TestKitBuilder::memory`].
    ///
    /// Errors: as [`TestKitBuilder::memory`].
    pub fn memory(registry: Registry) -> Result<Self, Error> {
        Self::builder(registry).memory()
    }

    /// A collecting kit on a temporary SQLite file; see
    /// [`TestKitBuilder::sqlite_temp`].
    ///
    /// Errors: as [`TestKitBuilder::sqlite_temp`].
    #[cfg(feature = "sqlite")]
    pub fn sqlite_temp(registry: Registry) -> Result<Self, Error> {
        Self::builder(registry).sqlite_temp()
    }

    /// The store to hand to the code under test. It is the kit's real store;
    /// in inline mode its `enqueue`, `enqueue_batch` and `replace_scheduled`
    /// run each new due job before returning. Handlers see it as
    /// `ctx.store()`, so jobs they enqueue follow the same mode.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The kit's worker (the application's registry, the kit's clock).
    pub fn worker(&self) -> &Worker {
        &self.kit.worker
    }

    /// Inline mode: from now on an enqueue through [`TestKit::store`] of a job
    /// that is due runs it (through the worker's attempt path) before
    /// returning; the enqueue still answers with its own outcome, and the
    /// attempt is in [`TestKit::attempts`].
    pub fn inline(&self) {
        self.kit.inline.store(true, Ordering::SeqCst);
    }

    /// Collecting mode (the default): enqueues are stored and nothing runs
    /// until [`TestKit::drain`] or [`TestKit::perform`].
    pub fn collect(&self) {
        self.kit.inline.store(false, Ordering::SeqCst);
    }

    /// Whether the kit is in inline mode.
    pub fn is_inline(&self) -> bool {
        self.kit.inline.load(Ordering::SeqCst)
    }

    /// The manual clock the store and worker share.
    pub fn clock(&self) -> &ManualClock {
        &self.kit.clock
    }

    /// The kit's current instant.
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.kit.clock.now_ms().max(0) as u64)
    }

    /// Moves the clock forward by `by`: a job scheduled that far ahead, or a
    /// retry whose backoff has passed, becomes due. Runs nothing by itself.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.kit.clock.advance(ms);
    }

    /// Enqueues `args` with its type's default options through
    /// [`TestKit::store`] (so in inline mode it runs); returns the job id.
    ///
    /// Errors: the enqueue's validation and store errors.
    pub async fn enqueue<T: JobArgs>(&self, args: T) -> Result<String, Error> {
        let outcome = self.store.enqueue(args.job()?).await?;
        Ok(outcome.job_id().to_owned())
    }

    /// The job row `id`, as the store has it now.
    ///
    /// Errors: `job-not-found`, the store's.
    pub async fn job(&self, id: &str) -> Result<Job, Error> {
        self.kit
            .base
            .get_job(id)
            .await?
            .ok_or_else(|| Error::Store(duraq_core::Error::job_not_found(id)))
    }

    /// Every attempt the kit has run (inline, drained or performed), in the
    /// order they ended.
    pub fn attempts(&self) -> Vec<JobFinished> {
        self.kit.attempts().clone()
    }

    /// Closes the store (SQLite stops its writer); later calls fail.
    ///
    /// Errors: the store's.
    pub async fn close(&self) -> Result<(), Error> {
        Ok(self.kit.base.close().await?)
    }
}

impl Kit {
    pub(crate) fn attempts(&self) -> std::sync::MutexGuard<'_, Vec<JobFinished>> {
        // Only pushes and clones run under this lock: a poisoned lock still
        // holds a consistent list.
        self.attempts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Milliseconds since the epoch (negative before it), saturating.
fn system_time_ms(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The store wrapper's link back to its kit, set once after the worker exists.
pub(crate) type KitLink = OnceLock<std::sync::Weak<Kit>>;
