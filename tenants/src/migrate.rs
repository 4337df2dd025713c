//! Applying pending migrations, tenant by tenant (`duraq tenants migrate`).
//!
//! This is the write path: each tenant's database must already exist (a SQLite
//! file is opened without the create flag, a PostgreSQL schema must exist), its
//! ledger table is created when missing, and each migration runs together with its
//! ledger row in one transaction, so a tenant never records a migration it does
//! not have nor has one it does not record. Tenants are visited in provider order
//! and the run stops at the first failing tenant: later tenants are untouched, and
//! the error names the tenant (and the migration, for `tenant-migration-failed`).
//! Migration files must not contain their own `BEGIN`/`COMMIT`.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::catalog::{Catalog, Ledger, Migration};
use crate::error::{Error, Result};
use crate::preflight::TenantsRequest;
use crate::provider::{Tenant, TenantDatabase};
use crate::report::{MigrateReport, Progress, TenantMigration};
use crate::{ledger_postgres, ledger_sqlite};

/// Loads the catalog, lists the tenants and applies what each one lacks.
///
/// ```
/// use duraq_tenants::{migrate, CatalogSource, TenantSource, TenantsRequest};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("migrations")).unwrap();
/// std::fs::write(dir.path().join("migrations/1_notes.sql"), "CREATE TABLE notes (x);").unwrap();
/// std::fs::create_dir(dir.path().join("tenants")).unwrap();
/// rusqlite::Connection::open(dir.path().join("tenants/acme.db")).unwrap();
/// let request = TenantsRequest::new(
///     "default",
///     TenantSource::Directory(dir.path().join("tenants")),
///     CatalogSource::Dir(dir.path().join("migrations")),
/// );
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let report = rt.block_on(migrate(&request, &mut |_| {})).unwrap();
/// assert_eq!(report.tenants[0].applied, vec![1]);
/// ```
pub async fn migrate(
    request: &TenantsRequest,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<MigrateReport> {
    let catalog = request.catalog()?;
    if catalog.ledger() == Ledger::JobStore {
        return Err(Error::CatalogNotApplicable {
            message: "the job store schema is applied by the store itself: run `duraq migrate \
                      --database <tenant URL>`, or pass --migrations <DIR>"
                .into(),
        });
    }
    let tenants = request.tenants.list().await?;
    let total = tenants.len();
    let mut report = MigrateReport {
        applied_migration_count: 0,
        identifier: request.identifier.clone(),
        migration_count: catalog.len(),
        migrated_tenant_count: 0,
        tenant_count: total,
        tenants: Vec::with_capacity(total),
    };
    for (index, tenant) in tenants.iter().enumerate() {
        let applied = migrate_tenant(tenant, &catalog, index, total, progress).await?;
        report.applied_migration_count += applied.len();
        report.migrated_tenant_count += usize::from(!applied.is_empty());
        report.tenants.push(TenantMigration {
            name: tenant.name.clone(),
            applied,
        });
    }
    Ok(report)
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn pending_of<'c>(catalog: &'c Catalog, applied: &[i64]) -> Vec<&'c Migration> {
    catalog
        .migrations()
        .iter()
        .filter(|m| applied.binary_search(&m.version).is_err())
        .collect()
}

fn sql_of(migration: &Migration) -> &str {
    migration.sql.as_deref().unwrap_or_default()
}

/// Applies what one tenant lacks; returns the versions this run applied.
async fn migrate_tenant(
    tenant: &Tenant,
    catalog: &Catalog,
    index: usize,
    total: usize,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Vec<i64>> {
    let name = tenant.name.as_str();
    let join_err =
        |e: tokio::task::JoinError| Error::backend(name, "the migration task panicked", e.into());
    let mut applied_now = Vec::new();
    match tenant.resolve()? {
        TenantDatabase::Sqlite(path) => {
            let owned = name.to_string();
            let (mut writer, applied) = tokio::task::spawn_blocking(move || {
                let writer = ledger_sqlite::Writer::open(&owned, &path)?;
                let applied = writer.applied()?;
                Ok::<_, Error>((writer, applied))
            })
            .await
            .map_err(join_err)??;
            let pending = pending_of(catalog, &applied);
            let versions: Vec<i64> = pending.iter().map(|m| m.version).collect();
            progress(Progress::MigrateTenant {
                index,
                total,
                tenant: name,
                pending: &versions,
            });
            for migration in pending {
                let owned = migration.clone();
                let (back, done) = tokio::task::spawn_blocking(move || {
                    let done = writer.apply_one(&owned, sql_of(&owned), now_ms());
                    (writer, done)
                })
                .await
                .map_err(join_err)?;
                writer = back;
                if done? {
                    applied_now.push(migration.version);
                    progress(Progress::Applied {
                        tenant: name,
                        version: migration.version,
                        name: &migration.name,
                    });
                }
            }
        }
        TenantDatabase::Postgres { config, schema } => {
            let mut writer =
                ledger_postgres::Writer::open(name, &config, schema.as_deref()).await?;
            let applied = writer.applied().await?;
            let pending = pending_of(catalog, &applied);
            let versions: Vec<i64> = pending.iter().map(|m| m.version).collect();
            progress(Progress::MigrateTenant {
                index,
                total,
                tenant: name,
                pending: &versions,
            });
            for migration in pending {
                if writer
                    .apply_one(migration, sql_of(migration), now_ms())
                    .await?
                {
                    applied_now.push(migration.version);
                    progress(Progress::Applied {
                        tenant: name,
                        version: migration.version,
                        name: &migration.name,
                    });
                }
            }
        }
    }
    Ok(applied_now)
}
