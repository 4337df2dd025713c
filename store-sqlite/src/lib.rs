//! `duraq-store-sqlite`: the [`duraq_core::Store`] contract on one embedded SQLite
//! file (bundled SQLite, nothing to install).
//!
//! Why it is built this way:
//! - **Durable by default.** WAL with `synchronous=FULL`, read back after setting
//!   and refused if SQLite did not apply it; `NORMAL` is a named opt-in
//!   ([`Synchronous::Normal`]).
//! - **One writer, group commit.** SQLite serializes writers anyway, so the store
//!   owns one write connection on one thread and folds every request waiting in
//!   its channel (waiting a moment for callers the last commit answered) into one
//!   `BEGIN IMMEDIATE` transaction, each request in its own savepoint. Many
//!   producers then share one fsync instead of queueing for one each.
//! - **Several processes, one file.** CLI enqueuers and worker processes share the
//!   file: `busy_timeout` plus a bounded retry turn lock waits into latency, and
//!   `database-busy` only when the lock never came. (A finer-grained busy
//!   handler was measured and lost: on two cores, eight pollers waking every
//!   100 µs cost the lock holder more CPU than the shorter waits saved.) Work made available by another
//!   process is noticed through `PRAGMA data_version` and a one-row work epoch,
//!   polled by the writer thread between batches.
//! - **One set of rules.** Rows are loaded, changed with
//!   [`duraq_core::driver::transitions`], and written back; SQL only finds and persists.
//! - **Additive schema.** Versioned tables with a migration ledger; opening
//!   upgrades, never rebuilds, and refuses what it does not understand ([`migrate`]).
//!
//! ```no_run
//! # async fn demo() -> duraq_core::Result<()> {
//! use duraq_core::prelude::*;
//! use duraq_core::{EnqueueOptions, NewJob};
//! use duraq_store_sqlite::{SqliteOptions, SqliteStore};
//! let store = SqliteStore::open("duraq.db", SqliteOptions::default())?;
//! let job = NewJob::new("send_welcome", serde_json::json!([42]), EnqueueOptions::new())?;
//! store.enqueue(job).await?;
//! # Ok(()) }
//! ```
//!
//! ## Module map
//!
//! Both database crates use the same file for the same role; mechanics of the
//! database itself live under `backend/`. The modules' `use crate::…` imports
//! form no cycle. SQL lives in the role modules, none in `store_impl.rs`.
//!
//! - `lib.rs`: [`SqliteStore`], opening a file, the write and read entry points.
//! - `store_impl.rs`: the store traits, one `impl` per trait; each call is one
//!   writer request or one pooled read handed to a role module (no SQL).
//! - `options.rs`: [`SqliteOptions`] and [`Synchronous`].
//! - `error.rs`: rusqlite errors to duraq errors, the bounded busy retry.
//! - `tx.rs`: `Tx`, what one logical write sees (connection, clock reading,
//!   count change, work signal, dedupe scopes looked up).
//! - `columns/`: the job row described once (each column's SQL, version,
//!   insert role and `Job` field), and the statements and reads derived from it.
//! - `rows.rs`: job rows read into `Job` and written back.
//! - `new_row.rs`: a new row (a job plus its args text, digest, dedupe key).
//! - `insert.rs`: fresh job rows, many per statement; `insert_started.rs`:
//!   a row with dependencies, in the status they gave it.
//! - `enqueue.rs`: enqueue and batches (replay, dedupe, checks, insert).
//! - `transactional.rs`: [`SqliteStore::enqueue_in_transaction`]; `app_sqlx.rs`:
//!   the same on an application's sqlx connection (feature `sqlx`); `app_diesel.rs`:
//!   on a diesel connection (feature `diesel`).
//! - `dedupe.rs`: dedupe scopes and the duplicate lookup.
//! - `dependencies.rs`: job dependencies: how a dependent starts, the reopen
//!   after a retry, edges of deleted jobs.
//! - `release.rs`: settling dependents when a job finishes, within the bound.
//! - `backlog.rs`: the release backlog, continued a bounded step at a time.
//! - `schedule.rs`: schedule keys (replace, cancel, wake, get).
//! - `claim.rs`: claiming, and the next due time for the worker's timer.
//! - `rate.rs`: the rate-limit start log.
//! - `report.rs`: fenced reports, heartbeats, lease checks, lost-lease recovery.
//! - `ownership.rs`: what a job holds besides its row (concurrency
//!   reservation, schedule-key ownership), given back around transitions.
//! - `admin.rs`: operator retry and cancel, listing, pruning, reconciliation.
//! - `pause.rs`: paused queues.
//! - `counts.rs`: counts, revision, work epoch, per-queue counters.
//! - `operations.rs`: the mailer's durable operation records.
//! - `workers.rs`: visible workers and due-job groups.
//! - `schema.rs`: migrations and the ledger; `schema_def.rs`: the declared
//!   tables; `schema_versions.rs`: the versions, in order, with their indexes.
//! - `backend/writer.rs`: the single writer thread and its group commit.
//! - `backend/reader.rs`: the pool of read connections.
//! - `backend/opening.rs`: what opening a path may do, decided before connecting.
//! - `backend/connection.rs`: connections with the durability pragmas, checked.
//! - `backend/poller.rs`: other processes' commits, seen through `data_version`.
//! - `backend/checkpoint.rs`: WAL checkpoints off the commit path.
//! - `backend/signals.rs`: in-process count deltas, the work and backlog signals.
//! - `backend/static_bind.rs`: the writer's statements that bind texts in place.

#![warn(missing_docs)]

mod admin;
mod aging;
#[cfg(feature = "diesel")]
mod app_diesel;
#[cfg(feature = "sqlx")]
mod app_sqlx;
mod backend;
mod backlog;
mod claim;
mod columns;
mod counts;
mod dedupe;
mod dependencies;
mod enqueue;
mod ephemeral;
mod error;
mod expiry;
mod history;
mod insert;
mod insert_started;
mod key_backlog;
mod new_row;
mod operations;
mod options;
mod ownership;
mod pause;
mod progress;
mod rate;
mod release;
mod report;
mod rows;
mod schedule;
mod schema;
mod schema_def;
mod schema_versions;
mod search;
mod signals;
mod steps;
mod store_impl;
mod transactional;
mod tx;
mod workers;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use duraq_core::driver::system_clock;
use duraq_core::{Clock, Error, Result};
use rusqlite::Connection;

#[cfg(feature = "sqlx")]
pub use app_sqlx::SqlxConnection;
pub use backend::connection::PragmaReport;
pub use options::{SqliteOptions, Synchronous};
pub use schema::{migrate, MigrationReport};
pub use schema_def::{LEDGER_TABLE, MIGRATION_SCOPE};
pub use schema_versions::{SchemaVersion, SCHEMA_VERSION, SCHEMA_VERSIONS};

use backend::checkpoint::Checkpoints;
use backend::connection::{enlarge_writer_cache, open_connection, read_pragmas};
use backend::opening::OpenMode;
use backend::reader::Readers;
use backend::signals::Signals;
use backend::writer::Writer;
use error::opening_error;
use tx::Tx;

/// A [`duraq_core::Store`] on one SQLite file. Cloning shares the same store.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Writer,
    readers: Readers,
    clock: Arc<dyn Clock>,
    signals: Arc<Signals>,
    pragmas: PragmaReport,
    migration: MigrationReport,
    /// Running jobs cancelled through this store value (other processes' cancels
    /// are found by the workers' lease check).
    cancels: tokio::sync::broadcast::Sender<String>,
    /// Delete the files on drop (a store made by [`SqliteStore::open_temporary`]).
    temporary: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.temporary {
            for suffix in ["", "-wal", "-shm"] {
                let mut path = self.path.clone().into_os_string();
                path.push(suffix);
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` on the system clock,
    /// applying missing schema versions. For commands that only read or change
    /// existing jobs, use [`SqliteStore::open_existing`], which never creates.
    pub fn open(path: impl AsRef<Path>, opts: SqliteOptions) -> Result<Self> {
        Self::open_with_clock(path, opts, system_clock())
    }

    /// Like [`SqliteStore::open`], reading time from `clock`.
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        opts: SqliteOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        Self::open_inner(
            path.as_ref().to_path_buf(),
            opts,
            clock,
            false,
            OpenMode::Create,
        )
    }

    /// Opens the store at `path` only if a duraq database is already there, on the
    /// system clock. Never creates a file or a table, and leaves a file that is not
    /// duraq's byte-identical (it is only read, through a read-only connection).
    /// A duraq database at an older schema version is upgraded as by
    /// [`SqliteStore::open`].
    ///
    /// Errors: `database-not-found` (naming `path`) when there is no file or the
    /// file holds no duraq migration ledger (an empty file, another application's
    /// database); `backend-error` with the cause for a directory, a file that is not
    /// a database, or a read-only or corrupt one.
    ///
    /// ```no_run
    /// use duraq_core::ErrorCode;
    /// use duraq_core::inspect::error_chain;
    /// use duraq_store_sqlite::{SqliteOptions, SqliteStore};
    /// match SqliteStore::open_existing("duraq.db", SqliteOptions::default()) {
    ///     Ok(store) => println!("opened {}", store.path().display()),
    ///     Err(err) if err.code() == ErrorCode::DatabaseNotFound => {
    ///         eprintln!("{}; run `duraq migrate` first", error_chain(&err))
    ///     }
    ///     Err(err) => eprintln!("error: {}", error_chain(&err)),
    /// }
    /// ```
    pub fn open_existing(path: impl AsRef<Path>, opts: SqliteOptions) -> Result<Self> {
        Self::open_existing_with_clock(path, opts, system_clock())
    }

    /// Like [`SqliteStore::open_existing`], reading time from `clock`.
    pub fn open_existing_with_clock(
        path: impl AsRef<Path>,
        opts: SqliteOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        Self::open_inner(
            path.as_ref().to_path_buf(),
            opts,
            clock,
            false,
            OpenMode::Existing,
        )
    }

    /// A store on a fresh file in the system temp folder, deleted when the last
    /// clone is dropped: the SQLite answer to `sqlite::memory:` (a real in-memory
    /// database cannot be shared by several connections in WAL mode).
    pub fn open_temporary(opts: SqliteOptions, clock: Arc<dyn Clock>) -> Result<Self> {
        let path =
            std::env::temp_dir().join(format!("duraq-{}.db", duraq_core::driver::new_job_id()));
        Self::open_inner(path, opts, clock, true, OpenMode::Create)
    }

    /// Every open path: [`backend::opening::preflight`] decides what `mode` allows, then the
    /// write connection, the schema, and the writer thread; any failure names the
    /// file being opened.
    fn open_inner(
        path: PathBuf,
        opts: SqliteOptions,
        clock: Arc<dyn Clock>,
        temporary: bool,
        mode: OpenMode,
    ) -> Result<Self> {
        let opened = backend::opening::preflight(&path, mode).and_then(|()| {
            let conn = open_connection(&path, &opts, mode)?;
            enlarge_writer_cache(&conn)?;
            let migration = schema::ensure_schema(&conn)?;
            let pragmas = read_pragmas(&conn)?;
            Ok((conn, migration, pragmas))
        });
        let (conn, migration, pragmas) = opened.map_err(|e| opening_error(&path, e))?;
        let signals = Arc::new(Signals::new());
        let checkpoints = Checkpoints::new(path.clone(), opts.clone());
        let writer = Writer::spawn(
            conn,
            checkpoints,
            clock.clone(),
            signals.clone(),
            opts.max_batch,
            opts.poll_interval,
        )
        .map_err(|e| opening_error(&path, e))?;
        let readers = Readers::new(path.clone(), opts);
        let inner = Inner {
            path,
            writer,
            readers,
            clock,
            signals,
            pragmas,
            migration,
            cancels: tokio::sync::broadcast::channel(1024).0,
            temporary,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The durability pragmas as SQLite reported them after opening.
    pub fn pragmas(&self) -> &PragmaReport {
        &self.inner.pragmas
    }

    /// What opening did to the schema (the versions it applied, if any).
    pub fn migration(&self) -> &MigrationReport {
        &self.inner.migration
    }

    pub(crate) fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// Tells this process's workers that running job `id` was cancelled.
    pub(crate) fn announce_cancelled(&self, id: &str) {
        let _ = self.inner.cancels.send(id.to_owned());
    }

    pub(crate) fn cancels(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.cancels.subscribe()
    }

    /// Runs `f` as one logical mutation in the writer's next group commit.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
    {
        self.inner.writer.run(f).await
    }

    /// Runs `f` on a pooled read connection off the async runtime.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.readers.read(f))
            .await
            .map_err(|e| Error::backend("read task failed", e))?
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}
