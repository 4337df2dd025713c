//! `duraq-tenants`: tenant providers, migration catalogs, read-only migration-ledger
//! readers, the deploy preflight report, and applying migrations per tenant
//! (`docs/tenants.md`).
//!
//! A deploy asks one question before it ships code that expects a schema: does any
//! existing tenant database lack a migration? [`pending`] answers it without
//! writing anything, enforced by the databases themselves (SQLite opened
//! read-only, PostgreSQL inside `START TRANSACTION READ ONLY`), without leaving
//! a file behind (no `-wal`/`-shm` it did not find, so it also answers on
//! read-only storage), and fails closed:
//! a tenant whose ledger table is missing, whose database is unreachable or whose
//! URL cannot be resolved fails the preflight (after every tenant was scanned, so
//! all of them are named) instead of being counted as up to date or as empty.
//! [`migrate`] is the write path that applies what is pending.
//!
//! The CLI calls [`pending_command`] / [`migrate_command`] with a
//! [`TenantsRequest`] built from its arguments and prints what they return.
//!
//! Ledger: `duraq_tenant_migrations(version INTEGER PRIMARY KEY, name TEXT NOT
//! NULL, applied_at_ms INTEGER NOT NULL)` (`BIGINT` on PostgreSQL), one per tenant
//! database or PostgreSQL schema. Versions are integers so that they order
//! numerically and `001_x.sql` and `1_x.sql` are recognised as the same version.
//! A ledger version the catalog does not know is reported
//! ([`TenantStatus::unknown_versions`]), not fatal.
//!
//! A deploy script's question, end to end: a tenant that was never migrated
//! fails the preflight (no ledger is not "nothing applied"); after [`migrate`] it
//! answers that nothing is pending. File formats, headers and exit codes are in
//! the user's guide (`docs/tenants.md`).
//!
//! ```
//! use duraq_tenants::{migrate, pending, CatalogSource, ErrorCode, TenantSource, TenantsRequest};
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join("migrations")).unwrap();
//! std::fs::write(
//!     dir.path().join("migrations/001_notes.sql"),
//!     "-- duraq:databases: projectTenant\nCREATE TABLE notes (body TEXT);",
//! ).unwrap();
//! std::fs::create_dir(dir.path().join("tenants")).unwrap();
//! rusqlite::Connection::open(dir.path().join("tenants/acme.db")).unwrap();
//! let request = TenantsRequest::new(
//!     "projectTenant",
//!     TenantSource::Directory(dir.path().join("tenants")),
//!     CatalogSource::Dir(dir.path().join("migrations")),
//! );
//!
//! let err = pending(&request, &mut |_| {}).await.unwrap_err();
//! assert_eq!(err.code(), ErrorCode::TenantLedgerMissing);
//!
//! migrate(&request, &mut |_| {}).await.unwrap();
//! let report = pending(&request, &mut |_| {}).await.unwrap();
//! assert_eq!(
//!     report.json_line(),
//!     r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":1,"pendingTenantCount":0,"tenantCount":1}"#
//! );
//! # });
//! ```

#![warn(missing_docs)]

mod catalog;
mod cause;
mod command;
mod error;
mod ledger_postgres;
mod ledger_sqlite;
mod migrate;
mod preflight;
mod provider;
mod report;
mod sqlite_open;

pub use catalog::{
    Catalog, CatalogSource, Ledger, Migration, DEFAULT_IDENTIFIER, JOB_STORE_LEDGER_TABLE,
    JOB_STORE_SCOPE, TENANT_LEDGER_TABLE,
};
pub use command::{migrate_command, pending_command, CommandOutcome};
pub use error::{BoxError, Error, ErrorCode, Result, TenantFailure};
pub use ledger_postgres::PostgresReadOnly;
pub use migrate::migrate;
pub use preflight::{pending, scan, TenantsRequest, DEFAULT_CONCURRENCY};
pub use provider::{Tenant, TenantDatabase, TenantSource};
pub use report::{
    progress_lines, MigrateReport, PreflightReport, Progress, TenantMigration, TenantStatus,
    EXIT_ERROR, EXIT_OK, EXIT_PENDING,
};
