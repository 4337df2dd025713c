//! Running duraq's statements on a connection of the application's own.
//!
//! A job belongs in the transaction that creates the data it works on: the
//! order row and its "send the receipt" job commit together or not at all.
//! That transaction is the application's, opened by whatever client it uses.
//! duraq's statements stay the store's; only their execution moves to that
//! client, through one narrow seam, [`Executor`]: run this SQL with these
//! parameters and give back the rows. Parameters and values cross it in
//! PostgreSQL's binary format with their type oids, which every client that
//! speaks the extended protocol sends and receives already, so an executor
//! passes bytes through and never interprets a value.
//!
//! Implemented here:
//! - tokio-postgres: `&tokio_postgres::Transaction`, or a `deadpool-postgres`
//!   transaction (no feature needed; the store's own driver runs the
//!   statements directly);
//! - sqlx (feature `sqlx`): `&mut sqlx::PgConnection` and
//!   `&mut sqlx::Transaction<'_, Postgres>`, so `&mut *tx` and `&mut tx` both work;
//! - diesel-async (feature `diesel-async`): `&mut diesel_async::AsyncPgConnection`
//!   inside `conn.transaction(async |conn| …)` (or any transaction open on it);
//! - SeaORM (feature `sea-orm`): `&mut sea_orm::DatabaseTransaction`, from
//!   `db.begin()` (or `&mut &*txn` for the `&DatabaseTransaction` of a
//!   `db.transaction_async(async |txn| …)` closure). Its parameters go
//!   through SeaORM's own values, decoded from their binary format (see the
//!   module); its rows are sqlx's, handed on in binary format;
//! - diesel (feature `diesel`): `&mut diesel::PgConnection` inside
//!   `conn.transaction(|conn| …)`. The connection is synchronous, so each
//!   statement blocks the calling thread while it runs: drive the store's
//!   future where blocking is allowed (e.g. `Handle::block_on` on a
//!   `spawn_blocking` thread). Links libpq, as diesel's PostgreSQL
//!   connection does.
//!
//! ```no_run
//! # #[cfg(feature = "sqlx")]
//! # async fn demo(store: duraq_store_postgres::PostgresStore, pool: sqlx::PgPool)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use duraq_core::{EnqueueOptions, NewJob};
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO users (email) VALUES ($1)")
//!     .bind("ada@example.com")
//!     .execute(&mut *tx)
//!     .await?;
//! let job = NewJob::new("send_welcome", serde_json::json!(["ada@example.com"]), EnqueueOptions::new())?;
//! store.enqueue_in(&mut *tx, job).await?;
//! tx.commit().await?; // the user and the job, or neither
//! # Ok(()) }
//! ```

use async_trait::async_trait;
use duraq_core::Result;

#[cfg(any(feature = "diesel", feature = "diesel-async"))]
mod diesel;
#[cfg(feature = "diesel-async")]
mod diesel_async;
#[cfg(feature = "sea-orm")]
mod sea_orm;
#[cfg(feature = "sqlx")]
mod sqlx;

/// Runs statements on an application's connection, inside the transaction
/// the application opened on it. Implement it for a client duraq does not
/// support yet; errors with a SQLSTATE go through
/// [`map_sqlstate`](crate::map_sqlstate).
#[async_trait]
pub trait Executor: Send {
    /// Runs one statement with `params` (`$1`, `$2`, … in order) and returns
    /// its rows, every value in binary format.
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows>;

    /// Runs one statement with `params` and returns how many rows it
    /// changed.
    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64>;

    /// Runs statements without parameters (savepoints), with the simple
    /// query protocol.
    async fn batch(&mut self, sql: &str) -> Result<()>;
}

/// One bound parameter: its PostgreSQL type and its value in binary format
/// (`None` for SQL `NULL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The type's oid (`pg_type.oid`), as the server described the statement.
    pub type_oid: u32,
    /// The value in the type's binary format.
    pub value: Option<Vec<u8>>,
}

/// A statement's result: its columns, then one list of values per row, each
/// in binary format in column order (`None` for SQL `NULL`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// The result's columns, in order.
    pub columns: Vec<Column>,
    /// The rows.
    pub values: Vec<Vec<Option<Vec<u8>>>>,
}

/// One column of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name (its alias in the statement).
    pub name: String,
    /// The column's type oid; 0 when the client cannot tell, which only a
    /// column `NULL` in every row may be (it reads as `NULL` whatever its type).
    pub type_oid: u32,
}

/// An application's transaction that duraq can enqueue in; made from the
/// clients above with `into()`, which the store's `…_in` methods call.
pub enum AppTransaction<'a> {
    /// A tokio-postgres connection inside a transaction: statements run on
    /// it directly. Made from a `&tokio_postgres::Transaction` (or
    /// deadpool-postgres's), or from a bare `&tokio_postgres::Client` (or a
    /// pooled `&deadpool_postgres::Object`) on which the application ran
    /// `BEGIN` itself; outside a transaction the call fails and writes
    /// nothing.
    TokioPostgres(&'a tokio_postgres::Client),
    /// Any other client, through its [`Executor`].
    Executor(&'a mut dyn Executor),
}

impl<'a> From<&'a tokio_postgres::Transaction<'a>> for AppTransaction<'a> {
    fn from(tx: &'a tokio_postgres::Transaction<'a>) -> Self {
        AppTransaction::TokioPostgres(tx.client())
    }
}

/// A transaction begun on a pooled connection of `deadpool-postgres` (the
/// pool the store itself uses): `&tx` as for tokio-postgres.
impl<'a> From<&'a deadpool_postgres::Transaction<'a>> for AppTransaction<'a> {
    fn from(tx: &'a deadpool_postgres::Transaction<'a>) -> Self {
        AppTransaction::TokioPostgres(tx.client())
    }
}

/// A client the application began a transaction on with `BEGIN`, for code
/// that holds a shared `&Client` (`Client::transaction` needs `&mut`).
impl<'a> From<&'a tokio_postgres::Client> for AppTransaction<'a> {
    fn from(client: &'a tokio_postgres::Client) -> Self {
        AppTransaction::TokioPostgres(client)
    }
}

/// A pooled deadpool-postgres connection the application began a
/// transaction on with `BEGIN`.
impl<'a> From<&'a deadpool_postgres::Object> for AppTransaction<'a> {
    fn from(client: &'a deadpool_postgres::Object) -> Self {
        AppTransaction::TokioPostgres(client)
    }
}

impl<'a, E: Executor> From<&'a mut E> for AppTransaction<'a> {
    fn from(executor: &'a mut E) -> Self {
        AppTransaction::Executor(executor)
    }
}
