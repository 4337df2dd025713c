//! The conformance suite and the model-based property suite against
//! `PostgresStore`, unchanged. Every store the suites ask for lives in its own,
//! freshly created schema on the `DATABASE_URL` server, so cases never see each
//! other's rows (or each other's LISTEN channel) and may run in parallel.
//!
//! The conformance suite runs a second time with prepared statements off
//! (`postgres_unnamed`), as behind a transaction-mode pooler that keeps none
//! (`docs/postgres.md`): every statement then takes the unnamed path.
//!
//! `DATABASE_URL` is required: without it these tests fail loudly rather than
//! pass vacuously. `cargo xtask test-all` always provides one (a throwaway server
//! unless the environment names one); `--skip-postgres` filters them out by name.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use duraq_core::{ManualClock, Store};
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_tests::StoreFactory;

/// Fresh stores, each in a new schema `duraq_t_<pid>_<time>_<n>`.
struct PgFactory {
    url: String,
    /// [`PostgresOptions::prepared_statements`] for every store made.
    prepared_statements: bool,
    /// The schema of the store made last (for `reopen`).
    last: Mutex<Option<String>>,
}

impl PgFactory {
    fn new() -> Self {
        let url = std::env::var("DATABASE_URL").unwrap_or_default();
        assert!(
            !url.is_empty(),
            "DATABASE_URL is not set: the PostgreSQL suites need a server \
             (run `cargo xtask test-all`, or `cargo xtask pg` and export the URL it prints)"
        );
        Self {
            url,
            prepared_statements: true,
            last: Mutex::new(None),
        }
    }

    /// Stores with prepared statements off.
    fn unnamed() -> Self {
        Self {
            prepared_statements: false,
            ..Self::new()
        }
    }
}

fn unique_schema() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!(
        "duraq_t_{}_{micros}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[async_trait]
impl StoreFactory for PgFactory {
    async fn new_store(&self, clock: ManualClock) -> Arc<dyn Store> {
        let schema = unique_schema();
        let options = PostgresOptions {
            schema: Some(schema.clone()),
            pool_size: 4,
            prepared_statements: self.prepared_statements,
            ..PostgresOptions::default()
        };
        let store = PostgresStore::connect_with_clock(&self.url, options, Arc::new(clock))
            .await
            .unwrap_or_else(|e| panic!("connect to PostgreSQL at DATABASE_URL: {e}"));
        *self.last.lock().unwrap() = Some(schema);
        Arc::new(store)
    }

    async fn reopen(&self, clock: ManualClock) -> Option<Arc<dyn Store>> {
        let schema = self.last.lock().unwrap().clone()?;
        let options = PostgresOptions {
            schema: Some(schema),
            pool_size: 2,
            prepared_statements: self.prepared_statements,
            ..PostgresOptions::default()
        };
        let store = PostgresStore::connect_with_clock(&self.url, options, Arc::new(clock))
            .await
            .unwrap_or_else(|e| panic!("reconnect to PostgreSQL at DATABASE_URL: {e}"));
        Some(Arc::new(store))
    }
}

duraq_tests::store_suite!(postgres, PgFactory::new());

duraq_tests::store_suite!(postgres_unnamed, PgFactory::unnamed());

duraq_tests::model_suite!(postgres_matches_reference, PgFactory::new());
