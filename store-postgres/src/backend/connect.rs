//! Opening a store: the pool, the schema (migrated before first use), the
//! LISTEN connection and the notifier, all from one `postgres://` URL. The
//! notifier task is not aborted with the store: it ends once it has sent what
//! was handed to it and every sender is gone, or when the store is closed
//! (`Producer::close`, after sending what it holds).
//!
//! [`PostgresStore::connect`] creates the schema and its tables when missing;
//! [`PostgresStore::connect_existing`] (for reading commands, which never create;
//! `docs/operating.md`) opens only a schema that already holds duraq's ledger. Both take the same path; the one
//! difference is the [`OpenMode`] that [`crate::schema::migrate`] decides on.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod, Runtime};
use duraq_core::driver::system_clock;
use duraq_core::{Clock, Error, Result};
use tokio::sync::{broadcast, watch};
use tokio_postgres::NoTls;

use crate::backend::db::{pooled, Conn, Db, Names, Pool};
use crate::backend::unnamed::Describer;
use crate::backend::{listener, notify};
use crate::error::{map_pg_error, Target};
use crate::schema::OpenMode;
use crate::versions::SCHEMA_VERSION;
use crate::{Inner, PostgresOptions, PostgresStore, Shared};

/// What [`migrate`] (or opening a store) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// The versions this call recorded, ascending (empty when already current).
    pub applied: Vec<i64>,
    /// The schema version afterwards.
    pub version: i64,
}

fn parse_url(url: &str) -> Result<tokio_postgres::Config> {
    url.parse::<tokio_postgres::Config>()
        .map_err(|e| Error::backend("invalid PostgreSQL URL", e))
}

/// `config` with the JIT compiler off for duraq's own sessions. Every statement
/// duraq sends is a short OLTP statement; when the planner's estimate for one
/// crosses `jit_above_cost` (the counter statement with its per-queue arrays
/// does), the server spends hundreds of milliseconds compiling it with LLVM on
/// every execution: a drain fell from 22,000 to 650 jobs/s until this was set.
/// A caller's own `options` are kept.
fn without_jit(mut config: tokio_postgres::Config) -> tokio_postgres::Config {
    let options = match config.get_options() {
        Some(given) if !given.trim().is_empty() => format!("{given} -c jit=off"),
        _ => "-c jit=off".to_string(),
    };
    config.options(&options);
    config
}

/// The pool for `config`, with the JIT off ([`without_jit`]) unless the
/// server refuses the `options` startup parameter that turns it off: PgBouncer
/// does, unless its `ignore_startup_parameters` lists `options` (and then it
/// drops it). Then the pool connects without it and, unless the server has the
/// JIT off already, says once how to turn it off there (`docs/postgres.md`).
async fn checked_pool(config: tokio_postgres::Config, size: usize) -> Result<Pool> {
    let pool = build_pool(without_jit(config.clone()), size)?;
    match pool.pool.get().await {
        Err(deadpool_postgres::PoolError::Backend(e)) if refuses_options(&e) => {
            let pool = build_pool(config, size)?;
            if jit_is_on(&pool).await? {
                tracing::warn!(
                    "duraq: {} refuses the `options` startup parameter (a pooler such as \
                     PgBouncer?), so duraq's sessions keep the server's JIT on; run \
                     `ALTER DATABASE … SET jit = off` (see docs/postgres.md)",
                    pool.target
                );
            }
            Ok(pool)
        }
        Err(e) => Err(crate::error::map_pool_error_at(e, &pool.target)),
        Ok(_) => Ok(pool),
    }
}

/// Whether the server's sessions compile with the JIT (unnamed: this runs
/// before the store knows how its statements must be sent).
async fn jit_is_on(pool: &Pool) -> Result<bool> {
    let client = pooled(pool).await?;
    let rows = client
        .query_typed("SELECT current_setting('jit')", &[])
        .await
        .map_err(map_pg_error)?;
    Ok(rows
        .first()
        .and_then(|r| r.get::<_, Option<String>>(0))
        .as_deref()
        == Some("on"))
}

fn refuses_options(e: &tokio_postgres::Error) -> bool {
    e.as_db_error()
        .is_some_and(|db| db.message().contains("unsupported startup parameter"))
}

fn build_pool(config: tokio_postgres::Config, size: usize) -> Result<Pool> {
    let target = Target::new(&config);
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = deadpool_postgres::Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(30)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| Error::backend(format!("building the PostgreSQL pool for {target}"), e))?;
    Ok(Pool { pool, target })
}

/// The describer of unnamed statements, when prepared statements are off.
fn describer(config: &tokio_postgres::Config, options: &PostgresOptions) -> Option<Arc<Describer>> {
    (!options.prepared_statements).then(|| Arc::new(Describer::new(config.clone())))
}

/// Resolves the schema and brings it to [`SCHEMA_VERSION`] in one transaction.
async fn open_schema(
    pool: &Pool,
    schema: Option<&str>,
    now: i64,
    mode: OpenMode,
    unnamed: Option<Arc<Describer>>,
) -> Result<(Names, MigrationReport)> {
    let mut client = pooled(pool).await?;
    let schema = match schema {
        Some(s) => s.to_owned(),
        None => {
            // Unnamed (no parameters to type), so it also runs behind a
            // transaction-mode pooler.
            let row = client
                .query_typed("SELECT current_schema()::text", &[])
                .await
                .map_err(map_pg_error)?
                .into_iter()
                .next()
                .ok_or_else(|| Error::schema("SELECT current_schema() returned no row"))?;
            match row.get::<_, Option<String>>(0) {
                Some(schema) => schema,
                None if mode == OpenMode::Existing => {
                    return Err(Error::database_not_found(format!(
                        "PostgreSQL database {} has no schema on the search_path; \
                         set PostgresOptions::schema or run `duraq migrate`",
                        pool.target
                    )))
                }
                None => {
                    return Err(Error::schema(
                        "the connection has no current schema; set PostgresOptions::schema",
                    ))
                }
            }
        }
    };
    let mut names = Names::new(&schema)?;
    names.unnamed = unnamed;
    let tx = client.transaction().await.map_err(map_pg_error)?;
    let applied = {
        let db = Db {
            conn: Conn::Pooled(tx),
            names: &names,
        };
        let applied = crate::schema::migrate(&db, now, mode, &pool.target).await?;
        if let Conn::Pooled(tx) = db.conn {
            tx.commit().await.map_err(map_pg_error)?;
        }
        applied
    };
    Ok((
        names,
        MigrationReport {
            applied,
            version: SCHEMA_VERSION,
        },
    ))
}

/// Brings the schema at `url` up to date without opening a store (`duraq migrate`).
pub async fn migrate(url: &str, options: &PostgresOptions) -> Result<MigrationReport> {
    let config = parse_url(url)?;
    let pool = checked_pool(config.clone(), 1).await?;
    let now = duraq_core::SystemClock.now_ms();
    let unnamed = describer(&config, options);
    Ok(open_schema(
        &pool,
        options.schema.as_deref(),
        now,
        OpenMode::Create,
        unnamed,
    )
    .await?
    .1)
}

impl PostgresStore {
    /// Connects to `url`, creates or migrates the schema and starts listening
    /// for changes. For commands that only read or change existing jobs, use
    /// [`PostgresStore::connect_existing`], which never creates.
    ///
    /// Every process that enqueues or works opens its own store; they share
    /// work through the database alone. A process that only enqueues (a web
    /// server) can skip the LISTEN connection, which only workers and count
    /// watchers need:
    ///
    /// ```no_run
    /// # async fn demo() -> duraq_core::Result<()> {
    /// use duraq_core::prelude::*;
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// use duraq_store_postgres::{PostgresOptions, PostgresStore};
    /// let producer = PostgresOptions { listen: false, ..PostgresOptions::default() };
    /// let store = PostgresStore::connect("postgres://app@db.internal/app", producer).await?;
    /// store.enqueue(NewJob::new("send_welcome", serde_json::json!({"user_id": 42}), EnqueueOptions::new())?).await?;
    /// store.close().await?; // before exiting: the NOTIFY leaves, idle workers wake now
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self> {
        Self::connect_with_clock(url, options, system_clock()).await
    }

    /// [`PostgresStore::connect`] reading "now" from `clock` (tests move it).
    pub async fn connect_with_clock(
        url: &str,
        options: PostgresOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        Self::open(url, options, clock, OpenMode::Create).await
    }

    /// Connects to `url` only if its schema ([`PostgresOptions::schema`], or the
    /// connection's current schema) already holds a duraq database. Never runs
    /// `CREATE SCHEMA` or `CREATE TABLE` for a missing one (it takes the
    /// migration advisory lock to look); a duraq schema at an older version is
    /// upgraded as by [`PostgresStore::connect`].
    ///
    /// Errors: `database-not-found` when the schema does not exist or holds no
    /// duraq ledger, or the database does not exist (SQLSTATE 3D000), naming
    /// host:port/database and the schema; `backend-error` naming host and port
    /// with the cause when the server cannot be reached. No message contains
    /// the password.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// use duraq_core::ErrorCode;
    /// use duraq_core::inspect::error_chain;
    /// use duraq_store_postgres::{PostgresOptions, PostgresStore};
    /// let options = PostgresOptions { listen: false, ..PostgresOptions::default() };
    /// match PostgresStore::connect_existing("postgres://app@db/app", options).await {
    ///     Ok(store) => println!("schema {}", store.schema()),
    ///     Err(err) if err.code() == ErrorCode::DatabaseNotFound => {
    ///         eprintln!("{}", error_chain(&err))
    ///     }
    ///     Err(err) => eprintln!("error: {}", error_chain(&err)),
    /// }
    /// # }
    /// ```
    pub async fn connect_existing(url: &str, options: PostgresOptions) -> Result<Self> {
        Self::open(url, options, system_clock(), OpenMode::Existing).await
    }

    /// [`PostgresStore::connect_existing`] reading "now" from `clock`.
    pub async fn connect_existing_with_clock(
        url: &str,
        options: PostgresOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        Self::open(url, options, clock, OpenMode::Existing).await
    }

    async fn open(
        url: &str,
        options: PostgresOptions,
        clock: Arc<dyn Clock>,
        mode: OpenMode,
    ) -> Result<Self> {
        let config = parse_url(url)?;
        let pool = checked_pool(config.clone(), options.pool_size).await?;
        let unnamed = describer(&config, &options);
        // Statements run on an application's client are described here too.
        let describer =
            (unnamed.clone()).unwrap_or_else(|| Arc::new(Describer::new(config.clone())));
        let (names, migration) = open_schema(
            &pool,
            options.schema.as_deref(),
            clock.now_ms(),
            mode,
            unnamed,
        )
        .await?;
        let (notifier, _) =
            notify::spawn(config.clone(), names.channel.clone(), names.origin.clone());
        let shared = Arc::new(Shared {
            pool,
            names,
            deltas: broadcast::channel(1024).0,
            work: watch::channel(0).0,
            backlog: watch::channel(0).0,
            listening: AtomicBool::new(false),
            reconnects: AtomicU64::new(0),
            mirror: Default::default(),
            notifier,
            cancels: broadcast::channel(1024).0,
            last_reclaim_ms: std::sync::atomic::AtomicI64::new(-1),
            describer,
            lane_hints: Default::default(),
        });
        let listener = if options.listen {
            let listen_config = match &options.listen_url {
                Some(url) => parse_url(url)?,
                None => config,
            };
            let direct = options.listen_url.is_some();
            Some(
                listener::start(
                    listen_config,
                    direct,
                    shared.clone(),
                    options.fallback_poll_ms,
                )
                .await?,
            )
        } else {
            None
        };
        let seed = u64::from(std::process::id()) ^ clock.now_ms() as u64;
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                clock,
                shard_seq: AtomicU64::new(seed),
                migration,
                pool_size: options.pool_size,
                group: Default::default(),
                listener,
            }),
        })
    }

    /// What opening this store did to the schema.
    pub fn migration(&self) -> &MigrationReport {
        &self.inner.migration
    }

    pub(crate) fn pool_size(&self) -> usize {
        self.inner.pool_size
    }
}

#[cfg(test)]
mod jit_tests {
    use super::without_jit;

    #[test]
    fn jit_is_off_and_given_options_are_kept() {
        let plain: tokio_postgres::Config = "postgres://u@h/db".parse().unwrap();
        assert_eq!(without_jit(plain).get_options(), Some("-c jit=off"));
        let given: tokio_postgres::Config = "postgres://u@h/db?options=-c%20work_mem%3D4MB"
            .parse()
            .unwrap();
        assert_eq!(
            without_jit(given).get_options(),
            Some("-c work_mem=4MB -c jit=off")
        );
    }
}
