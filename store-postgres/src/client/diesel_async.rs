//! [`Executor`] for diesel-async's `AsyncPgConnection` (feature
//! `diesel-async`), so duraq enqueues inside the transaction an application
//! opened with `conn.transaction(…)` (or `begin_test_transaction`).
//!
//! The statement and the rows are diesel's own, shared with the sync
//! connection ([`super::diesel`]); diesel-async runs them on its
//! tokio-postgres client (no libpq), which sends every parameter with its
//! type oid and receives results in binary format.
//!
//! Its rows tell a value's type, not a column's: a column `NULL` in every
//! row is handed on with type oid 0, which the store reads as all `NULL`s.

use async_trait::async_trait;
use diesel_async::{AsyncConnectionCore, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use duraq_core::Result;
use futures_util::TryStreamExt;

use super::diesel::{map_diesel_error, rows, statement};
use super::{Executor, Param, Rows};

#[async_trait]
impl Executor for AsyncPgConnection {
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
        let stream = AsyncConnectionCore::load(self, statement(sql, params)?)
            .await
            .map_err(map_diesel_error)?;
        let loaded: Vec<_> = stream.try_collect().await.map_err(map_diesel_error)?;
        // diesel-async's rows tell a value's type, not a column's: a column
        // `NULL` in every row has none.
        rows(&loaded, |_, _| None)
    }

    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let n = statement(sql, params)?
            .execute(self)
            .await
            .map_err(map_diesel_error)?;
        Ok(n as u64)
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        self.batch_execute(sql).await.map_err(map_diesel_error)
    }
}
