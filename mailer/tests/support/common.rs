//! Shared test helpers: the store matrix and driving one attempt with a real
//! lease obtained through `WorkerStore::claim`, reported exactly as the worker would.

use std::sync::Arc;

use duraq_core::driver::ClaimRequest;
use duraq_core::{Job, Outcome, Store};
use duraq_mailer::{MailDeliverJob, DELIVER_JOB};

/// Where every test clock starts.
pub const START_MS: i64 = 1_700_000_000_000;

/// Claims the next due mail job and runs one attempt at `now_ms`; reports the
/// outcome under the lease. Returns the claimed row and the error code, if any.
pub async fn run_attempt(
    store: &Arc<dyn Store>,
    handler: &MailDeliverJob,
    now_ms: i64,
) -> Option<(Job, Result<(), String>)> {
    let claim = ClaimRequest {
        worker_id: "test-worker".into(),
        job_names: vec![DELIVER_JOB.into()],
        queues: None,
        queue_config: Default::default(),
        limit: 1,
        turns: Default::default(),
    };
    let job = store
        .claim(&claim)
        .await
        .expect("claim")
        .into_iter()
        .next()?;
    let result = handler.attempt(store.as_ref(), now_ms, &job).await;
    let (outcome, code) = match result {
        Ok(()) => (Outcome::Completed, Ok(())),
        Err(e) => {
            let code = e.code().to_owned();
            let je = e.into_job_error();
            let retry_in_ms = je.retry_delay().map(|d| d.as_millis() as i64);
            (
                Outcome::Failed {
                    error: je.message().to_owned(),
                    retry_in_ms,
                    discard: je.is_discard(),
                },
                Err(code),
            )
        }
    };
    let lease = job.lease().expect("claimed job has a lease");
    assert_eq!(
        store
            .report_batch(vec![(lease, outcome)])
            .await
            .expect("report"),
        [true],
        "lease still current"
    );
    Some((job, code))
}

/// Fetches a job that must exist.
pub async fn job(store: &Arc<dyn Store>, id: &str) -> Job {
    store
        .get_job(id)
        .await
        .expect("get_job")
        .expect("job exists")
}

/// Runs each named `async fn(Arc<dyn Store>, ManualClock)` against MemoryStore,
/// SqliteStore and (when `DATABASE_URL` is set) PostgresStore, each on a fresh store with a ManualClock at [`START_MS`].
#[macro_export]
macro_rules! on_every_store {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let clock = duraq_core::ManualClock::new($crate::support::common::START_MS);
                    let store: std::sync::Arc<dyn duraq_core::Store> = std::sync::Arc::new(
                        duraq_core::MemoryStore::with_clock(std::sync::Arc::new(clock.clone())),
                    );
                    super::$case(store, clock).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let clock = duraq_core::ManualClock::new($crate::support::common::START_MS);
                    let store: std::sync::Arc<dyn duraq_core::Store> = std::sync::Arc::new(
                        duraq_store_sqlite::SqliteStore::open_temporary(
                            duraq_store_sqlite::SqliteOptions::default(),
                            std::sync::Arc::new(clock.clone()),
                        )
                        .expect("open sqlite store"),
                    );
                    super::$case(store, clock).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let clock = duraq_core::ManualClock::new($crate::support::common::START_MS);
                    let Some(store) = $crate::support::common::postgres_store(clock.clone()).await else {
                        eprintln!("DATABASE_URL is not set: skipping the PostgreSQL run");
                        return;
                    };
                    super::$case(store, clock).await;
                }
            )*
        }
    };
}

/// A `PostgresStore` in a fresh schema on `DATABASE_URL`, if it is set.
pub async fn postgres_store(clock: duraq_core::ManualClock) -> Option<Arc<dyn Store>> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())?;
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let schema = format!(
        "duraq_mail_{}_{micros}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let options = duraq_store_postgres::PostgresOptions {
        schema: Some(schema),
        pool_size: 4,
        ..duraq_store_postgres::PostgresOptions::default()
    };
    let store =
        duraq_store_postgres::PostgresStore::connect_with_clock(&url, options, Arc::new(clock))
            .await
            .unwrap_or_else(|e| panic!("connect to PostgreSQL at DATABASE_URL: {e}"));
    Some(Arc::new(store))
}
