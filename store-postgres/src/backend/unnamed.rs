//! Statements without named prepared statements, for a transaction-mode pooler
//! that does not keep them (PgBouncer before 1.21, or without
//! `max_prepared_statements`): [`crate::PostgresOptions::prepared_statements`]
//! off.
//!
//! Such a pooler gives each transaction (and each statement outside one) any
//! server connection, so a statement prepared by name on one is missing, or
//! holds another client's text, on the next. tokio-postgres prepares every
//! parameterized statement by name, except `query_typed`, which sends parse,
//! bind and execute on the unnamed statement in one message: one round trip,
//! as a cached statement takes, but it needs each parameter's type. Those come
//! from describing the statement once per process: inside the caller's own
//! transaction when there is one (the name is closed before the transaction
//! ends, so it never outlives the server connection it was made on), otherwise
//! on a connection of the [`Describer`]'s own, inside `BEGIN`/`COMMIT` for the
//! same reason. The types are kept by statement text; the server plans an
//! unnamed statement afresh on every execution (no generic plan is ever made).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use duraq_core::Result;
use tokio::task::JoinHandle;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, NoTls};

use crate::error::map_pg_error;

/// The parameter types of every statement this process ran, and the
/// connection that describes statements run outside a transaction.
pub(crate) struct Describer {
    config: Config,
    connection: tokio::sync::Mutex<Option<(Client, JoinHandle<()>)>>,
    types: Mutex<HashMap<String, Arc<[Type]>>>,
}

impl Describer {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            connection: tokio::sync::Mutex::new(None),
            types: Mutex::new(HashMap::new()),
        }
    }

    /// The types already known for `sql`.
    pub fn known(&self, sql: &str) -> Option<Arc<[Type]>> {
        self.lock().get(sql).cloned()
    }

    fn keep(&self, sql: &str, types: Vec<Type>) -> Arc<[Type]> {
        let types: Arc<[Type]> = types.into();
        self.lock().insert(sql.to_owned(), types.clone());
        types
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<[Type]>>> {
        self.types.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Describes `sql` on `client`, inside the caller's open transaction.
    pub async fn describe_in(
        &self,
        client: &tokio_postgres::Client,
        sql: &str,
    ) -> Result<Arc<[Type]>> {
        if let Some(types) = self.known(sql) {
            return Ok(types);
        }
        // The statement is dropped (closed) before anything else is sent on
        // the transaction.
        let types = client
            .prepare(sql)
            .await
            .map_err(map_pg_error)?
            .params()
            .to_vec();
        Ok(self.keep(sql, types))
    }

    /// Describes `sql` on the describer's own connection.
    pub async fn describe(&self, sql: &str) -> Result<Arc<[Type]>> {
        if let Some(types) = self.known(sql) {
            return Ok(types);
        }
        let mut connection = self.connection.lock().await;
        if connection.as_ref().is_none_or(|(c, _)| c.is_closed()) {
            let (client, conn) = self.config.connect(NoTls).await.map_err(map_pg_error)?;
            let driver = tokio::spawn(async move {
                let _ = conn.await;
            });
            if let Some((_, old)) = connection.replace((client, driver)) {
                old.abort();
            }
        }
        let (client, _) = connection.as_ref().expect("connected above");
        client.batch_execute("BEGIN").await.map_err(map_pg_error)?;
        let described = client.prepare(sql).await.map(|s| s.params().to_vec());
        let end = if described.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        client.batch_execute(end).await.map_err(map_pg_error)?;
        Ok(self.keep(sql, described.map_err(map_pg_error)?))
    }
}

impl std::fmt::Debug for Describer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Describer")
            .field("statements", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl Drop for Describer {
    fn drop(&mut self) {
        if let Some((_, driver)) = self.connection.get_mut().take() {
            driver.abort();
        }
    }
}

/// `params` paired with their described `types`, as `query_typed` takes them.
pub(crate) fn typed<'p>(
    params: &'p [&'p (dyn tokio_postgres::types::ToSql + Sync)],
    types: &[Type],
) -> Vec<(&'p (dyn tokio_postgres::types::ToSql + Sync), Type)> {
    params.iter().copied().zip(types.iter().cloned()).collect()
}

/// The rows affected by a statement run with `query_typed_raw`.
pub(crate) async fn rows_affected(
    stream: std::result::Result<tokio_postgres::RowStream, tokio_postgres::Error>,
) -> Result<u64> {
    use futures_util::TryStreamExt;
    let mut stream = std::pin::pin!(stream.map_err(map_pg_error)?);
    while stream.try_next().await.map_err(map_pg_error)?.is_some() {}
    Ok(stream.rows_affected().unwrap_or(0))
}
