//! Transactional enqueue and reports on an application's diesel connection
//! (feature `diesel`).
//!
//! diesel 2.4 and this crate link the same SQLite library (one
//! `libsqlite3-sys` in the build), and diesel lends its connection's raw
//! handle: the store's statements run on it through a non-owning rusqlite
//! connection, exactly as on the application's own rusqlite transaction
//! ([`SqliteStore::enqueue_in_transaction`]).

use diesel::SqliteConnection;
use duraq_core::{
    CancelOutcome, EnqueueOutcome, JobContext, KeyedOutcome, NewJob, Outcome, ReplaceOutcome,
    Result, ScheduleKey,
};
use rusqlite::Connection;

use crate::error::SqlResult;
use crate::SqliteStore;

impl SqliteStore {
    /// Enqueues `job` inside the transaction open on `conn`, an application's
    /// diesel connection to the same file (inside `conn.transaction(…)` or
    /// `conn.immediate_transaction(…)`): the job commits or rolls back with the
    /// application's writes, and a refused job rolls back to a savepoint of
    /// its own, leaving the transaction usable (see
    /// [`SqliteStore::enqueue_in_transaction`]).
    ///
    /// ```no_run
    /// # fn demo(store: &duraq_store_sqlite::SqliteStore, conn: &mut diesel::SqliteConnection)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use diesel::prelude::*;
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// conn.immediate_transaction(|conn| {
    ///     diesel::sql_query("INSERT INTO users (email) VALUES ('ada@example.com')").execute(conn)?;
    ///     let job = NewJob::new("send_welcome", serde_json::json!([1]), EnqueueOptions::new())?;
    ///     store.enqueue_in_diesel(conn, job)?;
    ///     Ok::<_, Box<dyn std::error::Error>>(()) // commits the user and the job
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn enqueue_in_diesel(
        &self,
        conn: &mut SqliteConnection,
        job: NewJob,
    ) -> Result<EnqueueOutcome> {
        with_rusqlite(conn, |conn| self.enqueue_in_transaction(conn, job))
    }

    /// [`SqliteStore::enqueue_in_diesel`] for many jobs, in order, all or none
    /// (see [`SqliteStore::enqueue_many_in_transaction`]).
    pub fn enqueue_many_in_diesel(
        &self,
        conn: &mut SqliteConnection,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<EnqueueOutcome>> {
        with_rusqlite(conn, |conn| self.enqueue_many_in_transaction(conn, jobs))
    }

    /// [`SqliteStore::replace_scheduled_in_transaction`] on an application's
    /// diesel connection.
    pub fn replace_scheduled_in_diesel(
        &self,
        conn: &mut SqliteConnection,
        key: &ScheduleKey,
        job: NewJob,
    ) -> Result<ReplaceOutcome> {
        with_rusqlite(conn, |conn| {
            self.replace_scheduled_in_transaction(conn, key, job)
        })
    }

    /// [`SqliteStore::cancel_scheduled_in_transaction`] on an application's
    /// diesel connection.
    pub fn cancel_scheduled_in_diesel(
        &self,
        conn: &mut SqliteConnection,
        key: &ScheduleKey,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        with_rusqlite(conn, |conn| self.cancel_scheduled_in_transaction(conn, key))
    }

    /// [`SqliteStore::report_in_transaction`] on an application's diesel
    /// connection: the attempt's outcome commits with the handler's own
    /// writes, fenced by its lease (`lease-lost` otherwise).
    pub fn report_in_diesel(
        &self,
        conn: &mut SqliteConnection,
        ctx: &JobContext,
        outcome: Outcome,
    ) -> Result<()> {
        with_rusqlite(conn, |conn| self.report_in_transaction(conn, ctx, outcome))
    }

    /// [`SqliteStore::record_step_in_transaction`] on a diesel connection:
    /// the step's record commits with the handler's own writes (exactly once).
    pub fn record_step_in_diesel<T: serde::Serialize>(
        &self,
        conn: &mut SqliteConnection,
        ctx: &JobContext,
        name: &str,
        output: &T,
    ) -> Result<()> {
        with_rusqlite(conn, |conn| {
            self.record_step_in_transaction(conn, ctx, name, output)
        })
    }
}

/// Runs `f` on a rusqlite connection over `conn`'s handle; it does not own
/// the handle, and its prepared statements are finalized when `f` returns.
fn with_rusqlite<T>(
    conn: &mut SqliteConnection,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    // SAFETY: diesel hands out its open handle for the duration of the
    // closure, during which `conn` is borrowed mutably (diesel runs nothing
    // on it meanwhile); the rusqlite connection does not outlive the closure.
    // One SQLite library is linked, so the handle is the type rusqlite
    // expects.
    unsafe {
        conn.with_raw_connection(|raw| {
            let borrowed = Connection::from_handle(raw).db()?;
            f(&borrowed)
        })
    }
}
