//! One way to run a statement, whatever holds the connection.
//!
//! Statements are written once as templates with `{s}` standing for the quoted
//! schema, so tenant-per-schema needs no per-connection `search_path` and works on
//! an application's own transaction ([`crate::PostgresStore::enqueue_in`]). The
//! schema is an identifier, validated and quoted once; every *value* is a bound
//! parameter. Pooled connections cache prepared statements; a borrowed
//! application transaction prepares per call; with prepared statements off
//! (a transaction-mode pooler that cannot keep them), every statement runs
//! unnamed ([`crate::backend::unnamed`]).

use std::sync::Arc;

use duraq_core::{Error, ErrorCode, Result};
use tokio_postgres::types::{IsNull, ToSql, Type};

use crate::backend::row::Row;
use crate::backend::unnamed::{rows_affected, typed, Describer};
use crate::client::{Executor, Param};
use crate::error::{map_pg_error, map_pool_error_at, Target};

/// Parameters as tokio-postgres takes them.
pub(crate) type Params<'p> = [&'p (dyn ToSql + Sync)];

/// The schema a store lives in, and the names derived from it.
#[derive(Debug)]
pub(crate) struct Names {
    /// The schema name as given (validated).
    pub schema: String,
    /// `"schema"`, ready to prefix table names.
    pub quoted: String,
    /// The LISTEN/NOTIFY channel of this schema (a fixed-length digest).
    pub channel: String,
    /// This store instance's id, so its listener skips its own notifications.
    pub origin: String,
    /// Set when statements must not be prepared by name.
    pub unnamed: Option<Arc<Describer>>,
}

impl Names {
    pub fn new(schema: &str) -> Result<Self> {
        validate_identifier(schema)?;
        let digest = duraq_core::driver::digest_hex("channel", &serde_json::json!(schema));
        Ok(Self {
            schema: schema.to_owned(),
            quoted: quote_identifier(schema),
            channel: format!("duraq_{}", &digest[..24]),
            origin: duraq_core::driver::new_job_id(),
            unnamed: None,
        })
    }

    /// `template` with `{s}` replaced by the quoted schema.
    pub fn sql(&self, template: &str) -> String {
        template.replace("{s}", &self.quoted)
    }
}

/// A schema name must be a plain identifier: ASCII letters, digits, `_`, `$`, not
/// starting with a digit or `$`, at most 63 bytes.
pub(crate) fn validate_identifier(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !first_ok || !rest_ok || name.len() > 63 {
        return Err(Error::invalid(
            ErrorCode::Backend,
            format!(
                "invalid PostgreSQL schema name {name:?}: use letters, digits and _ (max 63 bytes)"
            ),
        ));
    }
    Ok(())
}

/// Double-quotes an identifier (quotes inside are doubled).
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whatever connection a statement runs on.
pub(crate) enum Conn<'a> {
    Pooled(deadpool_postgres::Transaction<'a>),
    /// An application's tokio-postgres connection, inside the transaction
    /// it opened ([`crate::client::AppTransaction::TokioPostgres`]).
    Borrowed(&'a tokio_postgres::Client),
    Client(&'a deadpool_postgres::Object),
    /// An application's own client ([`crate::client`]).
    External(External<'a>),
}

/// An application's connection, and where its statements' parameter types
/// come from: the describer's connection of the store's own, once per
/// statement text, since the application's client cannot say.
pub(crate) struct External<'a> {
    pub executor: tokio::sync::Mutex<&'a mut dyn Executor>,
    pub describer: &'a Describer,
}

impl External<'_> {
    async fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let params = self.encode(sql, params).await?;
        let rows = self.executor.lock().await.query(sql, &params).await?;
        Row::from_binary(rows)
    }

    async fn execute(&self, sql: &str, params: &Params<'_>) -> Result<u64> {
        let params = self.encode(sql, params).await?;
        self.executor.lock().await.execute(sql, &params).await
    }

    /// `params` in binary format, as the statement's described types take them.
    async fn encode(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Param>> {
        let types = self.describer.describe(sql).await?;
        params
            .iter()
            .zip(types.iter())
            .map(|(value, ty)| encode(*value, ty))
            .collect()
    }
}

/// One parameter in binary format.
fn encode(value: &(dyn ToSql + Sync), ty: &Type) -> Result<Param> {
    let mut buf = bytes::BytesMut::new();
    let null = value
        .to_sql_checked(ty, &mut buf)
        .map_err(|e| Error::backend(format!("encoding a parameter of type {ty}"), e))?;
    Ok(Param {
        type_oid: ty.oid(),
        value: match null {
            IsNull::Yes => None,
            IsNull::No => Some(buf.to_vec()),
        },
    })
}

/// A connection plus the schema names.
pub(crate) struct Db<'a> {
    pub conn: Conn<'a>,
    pub names: &'a Names,
}

impl Db<'_> {
    pub async fn query(&self, template: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let sql = self.names.sql(template);
        if let Conn::External(external) = &self.conn {
            return external.query(&sql, params).await;
        }
        if let Some(describer) = &self.names.unnamed {
            let types = self.describe(describer, &sql).await?;
            let params = typed(params, &types);
            let rows = match &self.conn {
                Conn::Pooled(tx) => tx.query_typed(&sql, &params).await,
                Conn::Borrowed(client) => client.query_typed(&sql, &params).await,
                Conn::Client(client) => client.query_typed(&sql, &params).await,
                Conn::External(_) => unreachable!("answered above"),
            };
            return native(rows);
        }
        let rows = match &self.conn {
            Conn::Pooled(tx) => {
                let stmt = tx.prepare_cached(&sql).await.map_err(map_pg_error)?;
                tx.query(&stmt, params).await
            }
            Conn::Client(client) => {
                let stmt = client.prepare_cached(&sql).await.map_err(map_pg_error)?;
                client.query(&stmt, params).await
            }
            Conn::Borrowed(client) => client.query(sql.as_str(), params).await,
            Conn::External(_) => unreachable!("answered above"),
        };
        native(rows)
    }

    pub async fn query_opt(&self, template: &str, params: &Params<'_>) -> Result<Option<Row>> {
        Ok(self.query(template, params).await?.into_iter().next())
    }

    pub async fn query_one(&self, template: &str, params: &Params<'_>) -> Result<Row> {
        self.query_opt(template, params)
            .await?
            .ok_or_else(|| Error::Backend {
                message: "statement returned no row".into(),
                source: None,
            })
    }

    pub async fn execute(&self, template: &str, params: &Params<'_>) -> Result<u64> {
        let sql = self.names.sql(template);
        if let Conn::External(external) = &self.conn {
            return external.execute(&sql, params).await;
        }
        if let Some(describer) = &self.names.unnamed {
            let types = self.describe(describer, &sql).await?;
            let params = typed(params, &types);
            let params = params.iter().map(|(v, t)| (*v, t.clone()));
            return match &self.conn {
                Conn::Pooled(tx) => rows_affected(tx.query_typed_raw(&sql, params).await).await,
                Conn::Borrowed(client) => {
                    rows_affected(client.query_typed_raw(&sql, params).await).await
                }
                Conn::Client(client) => {
                    rows_affected(client.query_typed_raw(&sql, params).await).await
                }
                Conn::External(_) => unreachable!("answered above"),
            };
        }
        let n = match &self.conn {
            Conn::Pooled(tx) => {
                let stmt = tx.prepare_cached(&sql).await.map_err(map_pg_error)?;
                tx.execute(&stmt, params).await
            }
            Conn::Client(client) => {
                let stmt = client.prepare_cached(&sql).await.map_err(map_pg_error)?;
                client.execute(&stmt, params).await
            }
            Conn::Borrowed(client) => client.execute(sql.as_str(), params).await,
            Conn::External(_) => unreachable!("answered above"),
        };
        n.map_err(map_pg_error)
    }

    /// Prepares `templates` ahead of a pipeline (pooled connections cache them,
    /// so this costs no round trip once they are), after which each is sent
    /// when its future is first polled: see `crate::tx`'s docs on COMMIT.
    pub async fn prepare(&self, templates: &[&str]) -> Result<()> {
        for template in templates {
            let sql = self.names.sql(template);
            if let Conn::External(external) = &self.conn {
                external.describer.describe(&sql).await?;
                continue;
            }
            if let Some(describer) = &self.names.unnamed {
                self.describe(describer, &sql).await?;
                continue;
            }
            let prepared = match &self.conn {
                Conn::Pooled(tx) => tx.prepare_cached(&sql).await.map(drop),
                Conn::Client(client) => client.prepare_cached(&sql).await.map(drop),
                Conn::Borrowed(_) | Conn::External(_) => Ok(()),
            };
            prepared.map_err(map_pg_error)?;
        }
        Ok(())
    }

    /// The parameter types of `sql`, described in this connection's own
    /// transaction when it is one (see [`crate::backend::unnamed`]).
    async fn describe(
        &self,
        describer: &Describer,
        sql: &str,
    ) -> Result<Arc<[tokio_postgres::types::Type]>> {
        match &self.conn {
            Conn::Pooled(tx) => describer.describe_in(tx.client(), sql).await,
            Conn::Borrowed(client) => describer.describe_in(client, sql).await,
            Conn::Client(_) | Conn::External(_) => describer.describe(sql).await,
        }
    }

    /// Runs parameterless statements (savepoints) with the simple protocol.
    pub async fn batch(&self, sql: &str) -> Result<()> {
        let r = match &self.conn {
            Conn::Pooled(tx) => tx.batch_execute(sql).await,
            Conn::Client(client) => client.batch_execute(sql).await,
            Conn::Borrowed(client) => client.batch_execute(sql).await,
            Conn::External(external) => return external.executor.lock().await.batch(sql).await,
        };
        r.map_err(map_pg_error)
    }

    /// Sets [`BY_KEY_ONLY`](crate::backend::plans::BY_KEY_ONLY) for the rest
    /// of the transaction, on the store's own connections only: on an
    /// application's transaction the settings would outlast duraq's
    /// statements and change how the application's own are planned.
    pub async fn by_key_only(&self) -> Result<()> {
        match self.conn {
            Conn::Borrowed(_) | Conn::External(_) => Ok(()),
            _ => self
                .execute(crate::backend::plans::BY_KEY_ONLY, &[])
                .await
                .map(drop),
        }
    }

    /// Whether `COPY` can run on this connection (an application's client
    /// runs single statements only).
    pub fn can_copy(&self) -> bool {
        !matches!(self.conn, Conn::External(_))
    }
}

/// tokio-postgres's rows as the store reads them.
fn native(
    rows: std::result::Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>,
) -> Result<Vec<Row>> {
    Ok(rows
        .map_err(map_pg_error)?
        .into_iter()
        .map(Row::Native)
        .collect())
}

/// The connection pool and the server it connects to, so that a connection the
/// pool fails to open is reported with the server's address.
pub(crate) struct Pool {
    pub pool: deadpool_postgres::Pool,
    pub target: Target,
}

/// A pooled connection. Now and then its cached statements are dropped, so they
/// are planned again against the table as it is now: at its 4th, 8th, 16th, …
/// use, and every 4,096th after that.
///
/// Why: a cached plan is made once, often while `duraq_jobs` is nearly empty,
/// when a sequential scan is the cheapest way to find rows by id; PostgreSQL
/// re-plans only after ANALYZE, which autovacuum runs late on a young table.
/// Measured with auto_explain in the end-to-end bench (a worker running while
/// producers fill an empty table): the report's row lookup stayed a sequential
/// scan, 15–37 ms per 64-job batch, for the whole run. The doubling schedule
/// follows a table that grows from empty; later re-plans cost nothing measurable.
pub(crate) async fn pooled(pool: &Pool) -> Result<deadpool_postgres::Object> {
    let client = pool
        .pool
        .get()
        .await
        .map_err(|e| map_pool_error_at(e, &pool.target))?;
    let uses = deadpool_postgres::Object::metrics(&client).recycle_count;
    if uses >= 4 && (uses.is_power_of_two() || uses.is_multiple_of(4096)) {
        client.statement_cache.clear();
    }
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_validated_and_quoted() {
        for good in ["public", "tenant_acme", "_x1", "a$b"] {
            assert!(validate_identifier(good).is_ok(), "{good}");
        }
        for bad in ["", "1a", "a-b", "a b", "a\"b", "é", &"a".repeat(64)] {
            assert!(validate_identifier(bad).is_err(), "{bad}");
        }
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        let names = Names::new("tenant_acme").unwrap();
        assert_eq!(
            names.sql("SELECT 1 FROM {s}.duraq_jobs"),
            "SELECT 1 FROM \"tenant_acme\".duraq_jobs"
        );
        assert_eq!(names.channel.len(), "duraq_".len() + 24);
        assert_ne!(names.channel, Names::new("tenant_other").unwrap().channel);
    }
}
