//! The versioned, additive schema and its migration ledger (`docs/operating.md`).
//!
//! Every table is declared once with the version that introduced each column,
//! and every version once, in order ([`crate::SCHEMA_VERSIONS`]).
//! Opening a file, under `BEGIN IMMEDIATE` so that concurrent openers serialize:
//! 1. refuses a ledger that records a version newer than [`SCHEMA_VERSION`];
//! 2. checks every existing duraq table with `PRAGMA table_info`: an unknown or
//!    wrongly typed column, or a missing column that no later version adds, is
//!    refused with `schema-incompatible` *before anything is written*;
//! 3. creates missing tables and indexes, adds missing later-version columns with
//!    `ALTER TABLE ADD COLUMN`, and records the missing versions.
//!
//! No table, column or row is ever rebuilt or dropped; only indexes a later
//! version replaced are (see [`crate::SchemaVersion::retired_indexes`]). Tables carry a `duraq_` prefix so that an
//! application can share the file (see [`crate::SqliteStore::enqueue_in_transaction`]).

use std::collections::HashMap;

use duraq_core::{Error, JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::backend::connection::open_connection;
use crate::backend::opening::OpenMode;
use crate::columns::Column;
use crate::error::{opening_error, retry_busy, SqlResult};
use crate::schema_def::{Table, LEDGER_TABLE, MIGRATION_SCOPE, QUEUE_COUNTS_TABLE, TABLES};
use crate::schema_versions::{SCHEMA_VERSION, SCHEMA_VERSIONS};

/// What [`migrate`] (or opening a store) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// The versions this call recorded, ascending (empty when already current).
    pub applied: Vec<i64>,
    /// The schema version of the file afterwards.
    pub version: i64,
}

/// Brings the schema of `path` up to [`SCHEMA_VERSION`], creating the file when
/// missing (what `duraq migrate` runs).
///
/// ```no_run
/// let report = duraq_store_sqlite::migrate("duraq.db")?;
/// println!("applied {:?}, now at version {}", report.applied, report.version);
/// # Ok::<(), duraq_core::Error>(())
/// ```
pub fn migrate(path: impl AsRef<std::path::Path>) -> Result<MigrationReport> {
    let path = path.as_ref();
    let opened = crate::backend::opening::preflight(path, OpenMode::Create).and_then(|()| {
        let conn = open_connection(path, &crate::SqliteOptions::default(), OpenMode::Create)?;
        ensure_schema(&conn)
    });
    opened.map_err(|e| opening_error(path, e))
}

/// Checks and upgrades the schema inside one `BEGIN IMMEDIATE` transaction.
pub(crate) fn ensure_schema(conn: &Connection) -> Result<MigrationReport> {
    retry_busy(|| conn.execute_batch("BEGIN IMMEDIATE"))?;
    match check_and_apply(conn) {
        Ok(report) => {
            retry_busy(|| conn.execute_batch("COMMIT"))?;
            Ok(report)
        }
        Err(err) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(err)
        }
    }
}

fn check_and_apply(conn: &Connection) -> Result<MigrationReport> {
    let existing: HashMap<&str, Vec<(String, String)>> = TABLES
        .iter()
        .map(|t| Ok((t.name, table_columns(conn, t.name)?)))
        .collect::<Result<_>>()?;
    let recorded = if existing[LEDGER_TABLE].is_empty() {
        Vec::new()
    } else {
        recorded_versions(conn)?
    };
    if let Some(newest) = recorded
        .iter()
        .copied()
        .max()
        .filter(|v| *v > SCHEMA_VERSION)
    {
        return Err(Error::schema(format!(
            "the database records schema version {newest}; this binary knows up to {SCHEMA_VERSION}"
        )));
    }
    let mut additions = Vec::new();
    for table in TABLES {
        additions.extend(check_table(table, &existing[table.name])?);
    }
    // Everything is compatible: from here on we only add.
    for table in TABLES.iter().filter(|t| existing[t.name].is_empty()) {
        conn.execute_batch(&create_sql(table)).db()?;
    }
    for (table, column) in additions {
        conn.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {} {} {}",
            column.name, column.ty, column.rest
        ))
        .db()?;
    }
    for index in SCHEMA_VERSIONS.iter().flat_map(|v| v.retired_indexes) {
        conn.execute_batch(&format!("DROP INDEX IF EXISTS {index}"))
            .db()?;
    }
    for index in SCHEMA_VERSIONS.iter().flat_map(|v| v.indexes) {
        conn.execute_batch(index).db()?;
    }
    seed_counts(conn)?;
    if existing[QUEUE_COUNTS_TABLE].is_empty() {
        backfill_queue_counts(conn)?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let applied: Vec<i64> = (SCHEMA_VERSIONS.iter().map(|v| v.version))
        .filter(|v| !recorded.contains(v))
        .collect();
    for version in &applied {
        conn.execute(
            "INSERT INTO duraq_migrations (scope, version, applied_at_ms) VALUES (?1, ?2, ?3)",
            params![MIGRATION_SCOPE, version, now],
        )
        .db()?;
    }
    Ok(MigrationReport {
        applied,
        version: SCHEMA_VERSION,
    })
}

/// The newest version recorded in the ledger (0 when none).
pub(crate) fn current_version(conn: &Connection) -> Result<i64> {
    Ok(recorded_versions(conn)?.into_iter().max().unwrap_or(0))
}

fn recorded_versions(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn
        .prepare("SELECT version FROM duraq_migrations WHERE scope = ?1")
        .db()?;
    let rows = stmt.query_map([MIGRATION_SCOPE], |r| r.get(0)).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// `(name, declared type)` of every column of `table`; empty when it does not exist.
fn table_columns(conn: &Connection, table: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn
        .prepare("SELECT name, type FROM pragma_table_info(?1)")
        .db()?;
    let rows = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// The columns to add to an existing `table`, or `schema-incompatible`.
fn check_table<'t>(
    table: &'t Table,
    found: &[(String, String)],
) -> Result<Vec<(&'t str, &'t Column)>> {
    if found.is_empty() {
        return Ok(Vec::new());
    }
    for (name, ty) in found {
        match table.columns.iter().find(|c| c.name == name) {
            Some(c) if c.ty.eq_ignore_ascii_case(ty) => {}
            Some(c) => {
                return Err(Error::schema(format!(
                    "{}.{name} has type {ty:?}; duraq expects {}",
                    table.name, c.ty
                )))
            }
            None => {
                return Err(Error::schema(format!(
                    "{}.{name} is not a duraq column",
                    table.name
                )))
            }
        }
    }
    let mut missing = Vec::new();
    for column in table
        .columns
        .iter()
        .filter(|c| !found.iter().any(|(n, _)| n == c.name))
    {
        // A later NOT NULL column can be added only with a default (SQLite
        // fills existing rows with it in place).
        let needs_value = column.rest.contains("NOT NULL") && !column.rest.contains("DEFAULT");
        if column.since <= table.since || needs_value {
            return Err(Error::schema(format!(
                "{}.{} is missing",
                table.name, column.name
            )));
        }
        missing.push((table.name, column));
    }
    Ok(missing)
}

fn create_sql(table: &Table) -> String {
    let columns: Vec<String> = table
        .columns
        .iter()
        .map(|c| format!("{} {} {}", c.name, c.ty, c.rest))
        .collect();
    format!(
        "CREATE TABLE {} ({}{})",
        table.name,
        columns.join(", "),
        table.constraints
    )
}

/// One row per status (seeded from the jobs table when missing), plus `revision`
/// and the cross-process `work` epoch.
fn seed_counts(conn: &Connection) -> Result<()> {
    let have: i64 = conn
        .query_row("SELECT COUNT(*) FROM duraq_counts", [], |r| r.get(0))
        .db()?;
    if have == JobStatus::ALL.len() as i64 + 2 {
        return Ok(());
    }
    for status in JobStatus::ALL {
        let exists = conn
            .query_row(
                "SELECT 1 FROM duraq_counts WHERE name = ?1",
                [status.as_str()],
                |_| Ok(()),
            )
            .optional()
            .db()?;
        if exists.is_none() {
            conn.execute(
                "INSERT INTO duraq_counts (name, value) SELECT ?1, COUNT(*) FROM duraq_jobs WHERE status = ?1",
                [status.as_str()],
            )
            .db()?;
        }
    }
    conn.execute(
        "INSERT OR IGNORE INTO duraq_counts (name, value) VALUES ('revision', 0), ('work', 0)",
        [],
    )
    .db()?;
    Ok(())
}

/// Fills the per-queue counters (version 4) from the jobs table, once, when the
/// table was just created. Runs under the same `BEGIN IMMEDIATE` as the rest of
/// the upgrade, so no write can slip between the count and the commit; from then
/// on every mutation keeps the counters in step (see [`crate::counts`]).
fn backfill_queue_counts(conn: &Connection) -> Result<()> {
    conn.execute(
        "INSERT INTO duraq_queue_counts \
         (queue, queued, handed_off, completed, failed, cancelled, orphaned, pending) \
         SELECT queue, SUM(status = 'queued'), SUM(status = 'handed_off'), \
         SUM(status = 'completed'), SUM(status = 'failed'), SUM(status = 'cancelled'), \
         SUM(status = 'orphaned'), SUM(status = 'pending') FROM duraq_jobs GROUP BY queue",
        [],
    )
    .db()?;
    Ok(())
}
