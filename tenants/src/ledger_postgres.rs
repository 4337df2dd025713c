//! The migration ledger on a PostgreSQL tenant (optionally one schema of it).
//!
//! Reads are read-only by construction: everything runs inside
//! `START TRANSACTION READ ONLY` ([`PostgresReadOnly`]), in which PostgreSQL itself
//! refuses any write (SQLSTATE 25006), and the transaction is rolled back. With a
//! schema, its existence is checked (a missing schema is `tenant-unreachable`, as a
//! missing SQLite file is) and `SET LOCAL search_path` points at it; the ledger is
//! then looked up with `to_regclass`, so a missing table is `tenant-ledger-missing`.
//!
//! Schema names are validated as plain identifiers and double-quoted; every value
//! is a bound parameter. TLS is not supported yet (`NoTls`). Errors name the
//! target (`user@host:port/db`, never the password) and carry the server's
//! message or the connection failure (see `cause`).

use tokio_postgres::{Client, Config, NoTls};

use crate::catalog::{Ledger, Migration, JOB_STORE_SCOPE, TENANT_LEDGER_TABLE};
use crate::cause::{describe, pg_target};
use crate::error::{Error, Result};

/// Whether `s` is a plain SQL identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes).
pub(crate) fn is_plain_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && s.len() <= 63 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Connects (`tenant-unreachable` naming the target and why it failed).
async fn connect(tenant: &str, config: &Config) -> Result<Client> {
    let (client, connection) = config.connect(NoTls).await.map_err(|e| {
        let context = format!("PostgreSQL connection to {} failed", pg_target(config));
        Error::unreachable(tenant, context, Some(e.into()))
    })?;
    tokio::spawn(async move {
        // Ends when the client is dropped; errors surface on the client's calls.
        let _ = connection.await;
    });
    Ok(client)
}

/// Points the session (`SET` or `SET LOCAL`) at `schema`, which must exist
/// (`tenant-unreachable` otherwise, as a missing SQLite file is).
async fn enter_schema(
    tenant: &str,
    config: &Config,
    client: &Client,
    schema: &str,
    set: &str,
) -> Result<()> {
    let failed = |e: tokio_postgres::Error| {
        let context = format!("entering schema {schema:?} on {}", pg_target(config));
        Error::unreachable(tenant, context, Some(e.into()))
    };
    if !schema_exists(client, schema).await.map_err(failed)? {
        return Err(Error::unreachable(
            tenant,
            format!("schema {schema:?} does not exist on {}", pg_target(config)),
            None,
        ));
    }
    let set = format!("{set} search_path TO {}", quote_ident(schema));
    client.batch_execute(&set).await.map_err(failed)
}

async fn schema_exists(
    client: &Client,
    schema: &str,
) -> std::result::Result<bool, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .await?;
    Ok(row.get(0))
}

/// A connection inside `START TRANSACTION READ ONLY` (and `SET LOCAL search_path`
/// to the tenant's schema, when it has one). Dropping it ends the connection,
/// which rolls the transaction back.
///
/// ```no_run
/// # async fn demo() -> duraq_tenants::Result<()> {
/// use duraq_tenants::PostgresReadOnly;
/// let config = "postgres://postgres@127.0.0.1/postgres".parse().unwrap();
/// let reader = PostgresReadOnly::begin("acme", &config, Some("tenant_acme")).await?;
/// // Refused by PostgreSQL with SQLSTATE 25006 (read_only_sql_transaction):
/// assert!(reader.client().batch_execute("CREATE TABLE t (x int)").await.is_err());
/// # Ok(()) }
/// ```
pub struct PostgresReadOnly {
    client: Client,
}

impl PostgresReadOnly {
    /// Connects and begins the read-only transaction (`tenant-unreachable` when the
    /// server or the schema cannot be reached).
    pub async fn begin(tenant: &str, config: &Config, schema: Option<&str>) -> Result<Self> {
        let client = connect(tenant, config).await?;
        client
            .batch_execute("START TRANSACTION READ ONLY")
            .await
            .map_err(|e| {
                let context = format!("starting a read-only transaction on {}", pg_target(config));
                Error::unreachable(tenant, context, Some(e.into()))
            })?;
        if let Some(schema) = schema {
            enter_schema(tenant, config, &client, schema, "SET LOCAL").await?;
        }
        Ok(Self { client })
    }

    /// The client, inside the read-only transaction.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// The versions `ledger` records on a PostgreSQL tenant, ascending, read inside a
/// read-only transaction.
pub(crate) async fn read_applied(
    tenant: &str,
    config: &Config,
    schema: Option<&str>,
    ledger: Ledger,
) -> Result<Vec<i64>> {
    let reader = PostgresReadOnly::begin(tenant, config, schema).await?;
    let backend = |e: tokio_postgres::Error| {
        let schema = schema
            .map(|s| format!(" in schema {s:?}"))
            .unwrap_or_default();
        let context = format!("reading the ledger{schema} on {}", pg_target(config));
        Error::backend(tenant, context, e.into())
    };
    let client = reader.client();
    let exists: bool = client
        .query_one(
            "SELECT to_regclass($1::text) IS NOT NULL",
            &[&ledger.table()],
        )
        .await
        .map_err(backend)?
        .get(0);
    if !exists {
        return Err(Error::LedgerMissing {
            tenant: tenant.into(),
            table: ledger.table().into(),
        });
    }
    let rows = match ledger {
        Ledger::Tenant => {
            client
                .query("SELECT version::bigint FROM duraq_tenant_migrations", &[])
                .await
        }
        Ledger::JobStore => {
            client
                .query(
                    "SELECT version::bigint FROM duraq_migrations WHERE scope = $1",
                    &[&JOB_STORE_SCOPE],
                )
                .await
        }
    }
    .map_err(backend)?;
    let mut versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    versions.sort_unstable();
    versions.dedup();
    client.batch_execute("ROLLBACK").await.map_err(backend)?;
    Ok(versions)
}

/// Runs a tenant-listing query on a PostgreSQL control database, read-only: rows
/// of (name text, database URL text).
pub(crate) async fn query_pairs(
    config: &Config,
    schema: Option<&str>,
    query: &str,
) -> Result<Vec<(String, String)>> {
    let reader = PostgresReadOnly::begin("control", config, schema)
        .await
        .map_err(|e| Error::provider("control database", e.into()))?;
    let invalid = |e: tokio_postgres::Error| Error::config("the control query", describe(&e));
    let rows = reader.client().query(query, &[]).await.map_err(invalid)?;
    let mut pairs = Vec::with_capacity(rows.len());
    for row in rows {
        if row.len() < 2 {
            return Err(Error::config(
                "the control query",
                "it must return (name, database URL) columns",
            ));
        }
        pairs.push((
            row.try_get(0).map_err(invalid)?,
            row.try_get(1).map_err(invalid)?,
        ));
    }
    Ok(pairs)
}

/// A read-write session on a tenant being migrated (`search_path` set to its
/// schema for the whole session).
pub(crate) struct Writer {
    tenant: String,
    target: String,
    client: Client,
}

impl Writer {
    /// Connects, checks the schema, and creates the tenant ledger table if missing.
    pub(crate) async fn open(tenant: &str, config: &Config, schema: Option<&str>) -> Result<Self> {
        let client = connect(tenant, config).await?;
        if let Some(schema) = schema {
            enter_schema(tenant, config, &client, schema, "SET").await?;
        }
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {TENANT_LEDGER_TABLE} (version BIGINT PRIMARY KEY, \
             name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"
        );
        let writer = Self {
            tenant: tenant.to_string(),
            target: pg_target(config),
            client,
        };
        writer
            .client
            .batch_execute(&create)
            .await
            .map_err(|e| writer.backend(e))?;
        Ok(writer)
    }

    fn backend(&self, e: tokio_postgres::Error) -> Error {
        backend_on(&self.tenant, &self.target, e)
    }

    /// The versions the tenant ledger records, ascending.
    pub(crate) async fn applied(&self) -> Result<Vec<i64>> {
        let rows = self
            .client
            .query(
                "SELECT version FROM duraq_tenant_migrations ORDER BY version",
                &[],
            )
            .await
            .map_err(|e| self.backend(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Runs `migration` and records it in one transaction, holding the ledger
    /// table's lock so concurrent migrators serialize; `Ok(false)` when another
    /// process recorded it first.
    pub(crate) async fn apply_one(
        &mut self,
        migration: &Migration,
        sql: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let (tenant, target) = (self.tenant.clone(), self.target.clone());
        let backend = |e: tokio_postgres::Error| backend_on(&tenant, &target, e);
        let tx = self.client.transaction().await.map_err(backend)?;
        tx.batch_execute("LOCK TABLE duraq_tenant_migrations IN EXCLUSIVE MODE")
            .await
            .map_err(backend)?;
        let recorded: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM duraq_tenant_migrations WHERE version = $1)",
                &[&migration.version],
            )
            .await
            .map_err(backend)?
            .get(0);
        if recorded {
            return Ok(false);
        }
        tx.batch_execute(sql).await.map_err(|e| {
            Error::migration_failed(&tenant, migration.version, &migration.name, e.into())
        })?;
        tx.execute(
            "INSERT INTO duraq_tenant_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)",
            &[&migration.version, &migration.name, &now_ms],
        )
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(true)
    }
}

fn backend_on(tenant: &str, target: &str, e: tokio_postgres::Error) -> Error {
    Error::backend(tenant, format!("migrating {target}"), e.into())
}
