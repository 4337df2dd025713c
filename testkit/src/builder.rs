//! Building a kit: where its clock starts, how its worker is configured, and
//! which store it runs on. Kept apart from the kit's calls because it is the
//! one place that wires the store wrapper, the worker and the clock together.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use duraq_core::worker::WorkerBuilder;
use duraq_core::{Clock, ManualClock, MemoryStore, Registry, Store, Worker};
#[cfg(feature = "sqlite")]
use duraq_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};

use crate::store::KitStore;
use crate::{system_time_ms, Error, Kit, TestKit};

/// Configures a [`TestKit`]: the start instant and the worker's settings.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use duraq_core::Registry;
/// let registry = Registry::new().register_fn("hello", |_ctx, _args| async { Ok(()) }).unwrap();
/// let kit = duraq_testkit::TestKit::builder(registry)
///     .start_at(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
///     .worker(|w| w.concurrency(4))
///     .memory()
///     .unwrap();
/// assert_eq!(kit.now(), UNIX_EPOCH + Duration::from_secs(1_800_000_000));
/// ```
pub struct TestKitBuilder {
    pub(crate) registry: Registry,
    pub(crate) start_ms: Option<i64>,
    pub(crate) clock: Option<ManualClock>,
    pub(crate) configure: Option<Box<dyn FnOnce(WorkerBuilder) -> WorkerBuilder>>,
}

impl TestKitBuilder {
    /// Where the manual clock starts (default: the wall clock when the kit is
    /// built, then frozen).
    pub fn start_at(mut self, at: SystemTime) -> Self {
        self.start_ms = Some(system_time_ms(at));
        self
    }

    /// Makes `clock` the kit's clock (instead of one made at
    /// [`TestKitBuilder::start_at`]), so that a store opened before the kit
    /// reads the time the kit moves: PostgreSQL's, which connects
    /// asynchronously, given to [`TestKitBuilder::with_store`] once open.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use duraq_core::{ManualClock, MemoryStore, Registry};
    ///
    /// let registry = Registry::new().register_fn("hello", |_ctx, _args| async { Ok(()) }).unwrap();
    /// let clock = ManualClock::new(1_800_000_000_000);
    /// // Opened beforehand, as `PostgresStore::connect_with_clock(url, options, clock)` is.
    /// let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    /// let kit = duraq_testkit::TestKit::builder(registry)
    ///     .clock(clock)
    ///     .with_store(|_| Ok(store))
    ///     .unwrap();
    /// assert_eq!(kit.now(), UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    /// ```
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Adjusts the kit's worker: concurrency (default 1, so attempts run one at
    /// a time in claim order), queues, queue caps, the job timeout. Its store,
    /// registry and clock are the kit's; do not replace them.
    pub fn worker(mut self, f: impl FnOnce(WorkerBuilder) -> WorkerBuilder + 'static) -> Self {
        self.configure = Some(Box::new(f));
        self
    }

    /// The kit on a fresh [`MemoryStore`], the reference store.
    ///
    /// Errors: the worker's configuration errors (`invalid-worker-config`).
    pub fn memory(self) -> Result<TestKit, Error> {
        self.with_store(|clock| Ok(Arc::new(MemoryStore::with_clock(clock))))
    }

    /// The kit on a real SQLite file in the system temp folder
    /// (`synchronous=NORMAL`), deleted when the kit and its store handles are
    /// dropped.
    ///
    /// Errors: opening the file (`database-*`), the worker's configuration.
    ///
    /// With the `sqlite` feature (on by default).
    #[cfg(feature = "sqlite")]
    pub fn sqlite_temp(self) -> Result<TestKit, Error> {
        self.with_store(|clock| {
            let opts = SqliteOptions {
                synchronous: Synchronous::Normal,
                ..SqliteOptions::default()
            };
            Ok(Arc::new(SqliteStore::open_temporary(opts, clock)?))
        })
    }

    /// The kit on a store `open` makes; `open` must give that store the clock
    /// it is passed, so that the store and the worker share one time.
    ///
    /// Errors: `open`'s, the worker's configuration.
    pub fn with_store(
        self,
        open: impl FnOnce(Arc<dyn Clock>) -> Result<Arc<dyn Store>, duraq_core::Error>,
    ) -> Result<TestKit, Error> {
        let start_ms = self
            .start_ms
            .unwrap_or_else(|| system_time_ms(SystemTime::now()));
        let clock = self.clock.unwrap_or_else(|| ManualClock::new(start_ms));
        let base = open(Arc::new(clock.clone()))?;
        let store = Arc::new(KitStore::new(base.clone()));
        let shared: Arc<dyn Store> = store.clone();
        let names = self.registry.names();
        let mut builder = Worker::builder(shared, self.registry)
            .clock(Arc::new(clock.clone()))
            .worker_id("duraq-testkit")
            .concurrency(1);
        if let Some(configure) = self.configure {
            builder = configure(builder);
        }
        let kit = Arc::new(Kit {
            base,
            worker: builder.build()?,
            clock,
            names,
            inline: AtomicBool::new(false),
            attempts: Mutex::new(Vec::new()),
        });
        store.attach(&kit);
        Ok(TestKit { kit, store })
    }
}
