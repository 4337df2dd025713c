//! The migration ledger on a SQLite tenant.
//!
//! Reads are read-only by construction: the file is opened through
//! `sqlite_open` (`SQLITE_OPEN_READ_ONLY`, no create flag, and a WAL database
//! opened so that no `-wal`/`-shm` is ever created), so SQLite itself refuses any
//! write and a missing file is an open error (`tenant-unreachable`), never a new
//! empty database. The ledger table's presence is checked in `sqlite_master`
//! first: a missing table is `tenant-ledger-missing`, never "no migrations
//! applied". Errors carry SQLite's own reason and result code.
//!
//! The write path ([`apply_one`], used by `migrate`) opens read-write, still
//! without the create flag, creates the ledger table if missing, and runs each
//! migration and its ledger row in one `BEGIN IMMEDIATE` transaction.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode as SqliteCode, OpenFlags, TransactionBehavior};

use crate::catalog::{Ledger, Migration, JOB_STORE_SCOPE, TENANT_LEDGER_TABLE};
use crate::error::{BoxError, Error, Result};
use crate::sqlite_open::{self, OpenError};

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The error to keep as a cause (a SQLite error as itself, so that its code
/// is rendered).
fn open_cause(err: OpenError) -> BoxError {
    match err {
        OpenError::Sqlite(e) => e.into(),
        other => other.into(),
    }
}

/// Whether a SQLite error means "cannot open this database" rather than a failed
/// statement.
fn is_unreachable(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(SqliteCode::CannotOpen | SqliteCode::NotADatabase | SqliteCode::PermissionDenied)
    )
}

fn map_err(tenant: &str, path: &Path, err: rusqlite::Error) -> Error {
    if is_unreachable(&err) {
        Error::unreachable(
            tenant,
            format!("cannot open {}", path.display()),
            Some(err.into()),
        )
    } else {
        Error::backend(tenant, path.display(), err.into())
    }
}

fn map_open_err(tenant: &str, path: &Path, err: OpenError) -> Error {
    let context = format!("cannot open {}", path.display());
    Error::unreachable(tenant, context, Some(open_cause(err)))
}

/// The versions `ledger` records in the SQLite file at `path`, ascending, read
/// through a read-only connection.
pub(crate) fn read_applied(tenant: &str, path: &Path, ledger: Ledger) -> Result<Vec<i64>> {
    let read = |conn: &Connection| {
        conn.execute_batch("BEGIN")
            .map_err(|e| map_err(tenant, path, e))?;
        if !table_exists(conn, ledger.table()).map_err(|e| map_err(tenant, path, e))? {
            return Err(Error::LedgerMissing {
                tenant: tenant.into(),
                table: ledger.table().into(),
            });
        }
        recorded_versions(conn, ledger).map_err(|e| map_err(tenant, path, e))
    };
    sqlite_open::read(path, read).map_err(|e| map_open_err(tenant, path, e))?
}

fn table_exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [table],
        |row| row.get(0),
    )
}

fn recorded_versions(conn: &Connection, ledger: Ledger) -> rusqlite::Result<Vec<i64>> {
    let mut versions: Vec<i64> = match ledger {
        Ledger::Tenant => {
            let mut stmt = conn.prepare("SELECT version FROM duraq_tenant_migrations")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        }
        Ledger::JobStore => {
            let mut stmt = conn.prepare("SELECT version FROM duraq_migrations WHERE scope = ?1")?;
            let rows = stmt.query_map([JOB_STORE_SCOPE], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        }
    };
    versions.sort_unstable();
    versions.dedup();
    Ok(versions)
}

/// Runs a tenant-listing query on a SQLite control database, read-only: rows of
/// (name TEXT, database URL TEXT).
pub(crate) fn query_pairs(path: &Path, query: &str) -> Result<Vec<(String, String)>> {
    let context = format!("cannot open the control database {}", path.display());
    let unreachable = |e: BoxError| Error::provider(&context, e);
    let invalid =
        |e: rusqlite::Error| Error::config("the control query", crate::cause::describe(&e));
    let read = |conn: &Connection| {
        let mut stmt = conn.prepare(query).map_err(|e| {
            if is_unreachable(&e) {
                unreachable(e.into())
            } else {
                invalid(e)
            }
        })?;
        if stmt.column_count() < 2 {
            return Err(Error::config(
                "the control query",
                "it must return (name, database URL) columns",
            ));
        }
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(invalid)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(invalid)
    };
    sqlite_open::read(path, read).map_err(|e| unreachable(open_cause(e)))?
}

/// An open read-write connection to a tenant being migrated, with its ledger.
pub(crate) struct Writer {
    tenant: String,
    path: std::path::PathBuf,
    conn: Connection,
}

impl Writer {
    /// Opens the existing file read-write (never creating it) and creates the
    /// tenant ledger table if missing.
    pub(crate) fn open(tenant: &str, path: &Path) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(path, flags).map_err(|e| map_err(tenant, path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| map_err(tenant, path, e))?;
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {TENANT_LEDGER_TABLE} (version INTEGER PRIMARY KEY, \
             name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)"
        );
        conn.execute_batch(&create)
            .map_err(|e| map_err(tenant, path, e))?;
        Ok(Self {
            tenant: tenant.to_string(),
            path: path.to_path_buf(),
            conn,
        })
    }

    /// The versions the tenant ledger records, ascending.
    pub(crate) fn applied(&self) -> Result<Vec<i64>> {
        recorded_versions(&self.conn, Ledger::Tenant)
            .map_err(|e| map_err(&self.tenant, &self.path, e))
    }

    /// Runs `migration` and records it in one transaction; `Ok(false)` when another
    /// process recorded it first.
    pub(crate) fn apply_one(
        &mut self,
        migration: &Migration,
        sql: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let (tenant, path) = (self.tenant.clone(), self.path.clone());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| map_err(&tenant, &path, e))?;
        let recorded: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM duraq_tenant_migrations WHERE version = ?1)",
                [migration.version],
                |r| r.get(0),
            )
            .map_err(|e| map_err(&tenant, &path, e))?;
        if recorded {
            return Ok(false);
        }
        tx.execute_batch(sql).map_err(|e| {
            Error::migration_failed(&tenant, migration.version, &migration.name, e.into())
        })?;
        tx.execute(
            "INSERT INTO duraq_tenant_migrations (version, name, applied_at_ms) VALUES (?1, ?2, ?3)",
            params![migration.version, migration.name, now_ms],
        )
        .map_err(|e| map_err(&tenant, &path, e))?;
        tx.commit().map_err(|e| map_err(&tenant, &path, e))?;
        Ok(true)
    }
}
