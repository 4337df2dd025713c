//! Store factories for the stores this crate can build without a server. The
//! PostgreSQL factory lives with its integration test (it needs a database URL).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use duraq_core::{ManualClock, MemoryStore, Store};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};

use crate::StoreFactory;

/// Fresh [`MemoryStore`]s: the reference model itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryFactory;

#[async_trait]
impl StoreFactory for MemoryFactory {
    async fn new_store(&self, clock: ManualClock) -> Arc<dyn Store> {
        Arc::new(MemoryStore::with_clock(Arc::new(clock)))
    }
}

/// Fresh [`SqliteStore`]s, each on its own file in a temp folder that lives as long
/// as the factory (one factory per conformance case or property run).
#[derive(Debug)]
pub struct SqliteFactory {
    dir: tempfile::TempDir,
    next: AtomicUsize,
    options: SqliteOptions,
    /// The file of the store made last (for [`StoreFactory::reopen`]).
    last: Mutex<Option<PathBuf>>,
}

impl SqliteFactory {
    /// A factory with the store's default (durable) options.
    pub fn new() -> Self {
        Self::with_options(SqliteOptions::default())
    }

    /// A factory opening every store with `options`.
    pub fn with_options(options: SqliteOptions) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("duraq-tests-")
            .tempdir()
            .expect("temp dir");
        Self {
            dir,
            next: AtomicUsize::new(0),
            options,
            last: Mutex::new(None),
        }
    }
}

impl Default for SqliteFactory {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl StoreFactory for SqliteFactory {
    async fn new_store(&self, clock: ManualClock) -> Arc<dyn Store> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.path().join(format!("store-{n}.db"));
        let store = SqliteStore::open_with_clock(&path, self.options.clone(), Arc::new(clock))
            .expect("open sqlite store");
        *self.last.lock().unwrap() = Some(path);
        Arc::new(store)
    }

    async fn reopen(&self, clock: ManualClock) -> Option<Arc<dyn Store>> {
        let path = self.last.lock().unwrap().clone()?;
        let store =
            SqliteStore::open_existing_with_clock(&path, self.options.clone(), Arc::new(clock))
                .expect("reopen sqlite store");
        Some(Arc::new(store))
    }
}
