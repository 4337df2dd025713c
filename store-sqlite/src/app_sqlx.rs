//! Transactional enqueue on an application's sqlx connection (feature `sqlx`).
//!
//! sqlx and this crate link the same SQLite library (one `libsqlite3-sys`
//! in the build), and sqlx lends out its connection's raw handle while the
//! connection is locked for the caller. The store's statements then run on
//! that handle through rusqlite, exactly as
//! [`SqliteStore::enqueue_in_transaction`] runs them on a rusqlite
//! connection: one code path, whichever client opened the transaction.

use duraq_core::{
    CancelOutcome, EnqueueOutcome, Error, JobContext, KeyedOutcome, NewJob, Outcome,
    ReplaceOutcome, Result, ScheduleKey,
};
use rusqlite::Connection;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{Sqlite, SqliteConnection};

use crate::error::SqlResult;
use crate::SqliteStore;

impl SqliteStore {
    /// Enqueues `job` inside the transaction open on `conn`, an application's
    /// sqlx connection to the same file (`&mut tx` or `&mut *tx` of a
    /// `sqlx::Transaction<'_, Sqlite>`, see [`SqlxConnection`]): the job commits or rolls back with
    /// the application's writes, and a refused job rolls back to a savepoint
    /// of its own, leaving the transaction usable. Workers in every process
    /// notice it within one poll interval of the commit.
    ///
    /// The statements run on the calling task's thread, as sqlx's do on its
    /// connection's: they are short, but the first write of a transaction
    /// that SQLite began deferred waits for the file's write lock. Begin with
    /// `BEGIN IMMEDIATE` (sqlx: `conn.begin_with("BEGIN IMMEDIATE")`) to wait
    /// at the start instead.
    ///
    /// ```no_run
    /// # async fn demo(store: duraq_store_sqlite::SqliteStore, pool: sqlx::SqlitePool)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    /// sqlx::query("INSERT INTO users (email) VALUES (?1)")
    ///     .bind("ada@example.com")
    ///     .execute(&mut *tx)
    ///     .await?;
    /// let job = NewJob::new("send_welcome", serde_json::json!(["ada@example.com"]), EnqueueOptions::new())?;
    /// store.enqueue_in(&mut *tx, job).await?;
    /// tx.commit().await?; // the user and the job, or neither
    /// # Ok(()) }
    /// ```
    pub async fn enqueue_in(
        &self,
        conn: &mut impl SqlxConnection,
        job: NewJob,
    ) -> Result<EnqueueOutcome> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.enqueue_in_transaction(&conn, job)
    }

    /// [`SqliteStore::enqueue_in`] for many jobs, in order, all or none (see
    /// [`SqliteStore::enqueue_many_in_transaction`]).
    pub async fn enqueue_many_in(
        &self,
        conn: &mut impl SqlxConnection,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<EnqueueOutcome>> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.enqueue_many_in_transaction(&conn, jobs)
    }

    /// [`SqliteStore::replace_scheduled_in_transaction`] on an application's
    /// sqlx connection.
    pub async fn replace_scheduled_in(
        &self,
        conn: &mut impl SqlxConnection,
        key: &ScheduleKey,
        job: NewJob,
    ) -> Result<ReplaceOutcome> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.replace_scheduled_in_transaction(&conn, key, job)
    }

    /// [`SqliteStore::cancel_scheduled_in_transaction`] on an application's
    /// sqlx connection.
    pub async fn cancel_scheduled_in(
        &self,
        conn: &mut impl SqlxConnection,
        key: &ScheduleKey,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.cancel_scheduled_in_transaction(&conn, key)
    }
}

impl SqliteStore {
    /// [`SqliteStore::report_in_transaction`] on an application's sqlx
    /// connection: the attempt's outcome commits with the handler's own
    /// writes, fenced by its lease (`lease-lost` otherwise).
    pub async fn report_in(
        &self,
        conn: &mut impl SqlxConnection,
        ctx: &JobContext,
        outcome: Outcome,
    ) -> Result<()> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.report_in_transaction(&conn, ctx, outcome)
    }

    /// [`SqliteStore::record_step_in_transaction`] on a sqlx connection: the
    /// step's record commits with the handler's own writes (exactly once).
    pub async fn record_step_in<T: serde::Serialize>(
        &self,
        conn: &mut impl SqlxConnection,
        ctx: &JobContext,
        name: &str,
        output: &T,
    ) -> Result<()> {
        let mut handle = conn.sqlite().lock_handle().await.map_err(sqlx_error)?;
        let conn = borrow(&mut handle)?;
        self.record_step_in_transaction(&conn, ctx, name, output)
    }
}

/// A sqlx SQLite connection [`SqliteStore::enqueue_in`] takes, inside the
/// application's open transaction: the connection itself (`&mut *tx`), a
/// `sqlx::Transaction<'_, Sqlite>` (`&mut tx`) or a pooled connection on
/// which the application ran `BEGIN`.
pub trait SqlxConnection: Send {
    /// The connection the statements run on.
    fn sqlite(&mut self) -> &mut SqliteConnection;
}

impl SqlxConnection for SqliteConnection {
    fn sqlite(&mut self) -> &mut SqliteConnection {
        self
    }
}

impl SqlxConnection for sqlx::Transaction<'_, Sqlite> {
    fn sqlite(&mut self) -> &mut SqliteConnection {
        self
    }
}

impl SqlxConnection for PoolConnection<Sqlite> {
    fn sqlite(&mut self) -> &mut SqliteConnection {
        self
    }
}

/// A rusqlite connection on the locked sqlx connection's handle, for as long
/// as the lock is held. It does not own the handle: dropping it finalizes
/// its own prepared statements and leaves the connection open.
fn borrow(handle: &mut sqlx::sqlite::LockedSqliteHandle<'_>) -> Result<Connection> {
    let raw = handle.as_raw_handle().as_ptr();
    // SAFETY: `raw` is an open connection, locked for this task by `handle`,
    // which outlives the returned connection at every call site (both are
    // locals, the connection declared later, so dropped first). One SQLite
    // library is linked, so the handle is the type rusqlite expects.
    unsafe { Connection::from_handle(raw) }.db()
}

fn sqlx_error(err: sqlx::Error) -> Error {
    Error::backend("sqlx SQLite connection", err)
}
