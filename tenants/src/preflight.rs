//! The read-only deploy preflight (`docs/tenants.md`): does any tenant lack a migration?
//!
//! Every tenant is scanned, with at most `concurrency` ledgers read at once (tokio
//! tasks behind a semaphore; SQLite reads on the blocking pool), and the preflight
//! fails only after all of them were scanned, listing every failing tenant
//! ([`Error::Tenants`]): a deploy operator fixes them all in one round. Nothing is
//! written anywhere: each ledger is read through a reader that the database itself
//! keeps read-only (see `ledger_sqlite` and `ledger_postgres`).

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::catalog::{Catalog, CatalogSource, Ledger};
use crate::cause::with_cause;
use crate::error::{BoxError, Error, Result, TenantFailure};
use crate::provider::{Tenant, TenantDatabase, TenantSource};
use crate::report::{PreflightReport, Progress, TenantStatus};
use crate::{ledger_postgres, ledger_sqlite};

/// How many ledgers a preflight reads at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What `tenants pending` and `tenants migrate` are asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantsRequest {
    /// The database identifier whose migrations count (e.g. `projectTenant`).
    pub identifier: String,
    /// Where the tenants are listed.
    pub tenants: TenantSource,
    /// Where the migrations are (`--migrations <DIR>`, else the job store schema).
    pub migrations: CatalogSource,
    /// Only migrations of this phase, when given.
    pub phase: Option<String>,
    /// How many tenants a preflight scans at once (0 counts as 1; `migrate` goes
    /// one tenant at a time regardless).
    pub concurrency: usize,
}

impl TenantsRequest {
    /// A request with no phase and [`DEFAULT_CONCURRENCY`].
    pub fn new(
        identifier: impl Into<String>,
        tenants: TenantSource,
        migrations: CatalogSource,
    ) -> Self {
        Self {
            identifier: identifier.into(),
            tenants,
            migrations,
            phase: None,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }

    /// The catalog selected for this request's identifier and phase.
    pub fn catalog(&self) -> Result<Catalog> {
        Ok(self
            .migrations
            .load()?
            .select(&self.identifier, self.phase.as_deref()))
    }
}

/// Loads the catalog, lists the tenants and scans every tenant's ledger.
///
/// ```
/// use duraq_tenants::{pending, CatalogSource, TenantSource, TenantsRequest};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("tenants.json"), r#"{"tenants":[]}"#).unwrap();
/// let request = TenantsRequest::new(
///     "projectTenant",
///     TenantSource::File(dir.path().join("tenants.json")),
///     CatalogSource::JobStore,
/// );
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let report = rt.block_on(pending(&request, &mut |_| {})).unwrap();
/// assert_eq!((report.has_pending, report.tenant_count), (false, 0));
/// ```
pub async fn pending(
    request: &TenantsRequest,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<PreflightReport> {
    let catalog = request.catalog()?;
    let tenants = request.tenants.list().await?;
    scan(
        &request.identifier,
        &tenants,
        &catalog,
        request.concurrency,
        progress,
    )
    .await
}

/// Scans already-listed `tenants` against an already-selected `catalog`.
pub async fn scan(
    identifier: &str,
    tenants: &[Tenant],
    catalog: &Catalog,
    concurrency: usize,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<PreflightReport> {
    let total = tenants.len();
    progress(Progress::ScanStarted { total });
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for (index, tenant) in tenants.iter().enumerate() {
        let (tenant, permits, ledger) = (tenant.clone(), permits.clone(), catalog.ledger());
        tasks.spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            (index, read_applied(&tenant, ledger).await)
        });
    }
    let mut results: Vec<Option<Result<TenantStatus>>> = (0..total).map(|_| None).collect();
    let mut done = 0;
    while let Some(joined) = tasks.join_next().await {
        let (index, applied) = joined.map_err(|e| {
            let cause: BoxError = e.into();
            Error::Backend {
                tenant: None,
                message: with_cause("a ledger scan task failed", Some(&cause)),
                cause: Some(cause),
            }
        })?;
        done += 1;
        let name = &tenants[index].name;
        let result = applied
            .map(|(postgres, applied)| status(name, catalog.for_backend(postgres), &applied));
        match &result {
            Ok(status) => progress(Progress::Scanned {
                done,
                total,
                status,
            }),
            Err(error) => progress(Progress::ScanFailed {
                done,
                total,
                tenant: name,
                error,
            }),
        }
        results[index] = Some(result);
    }
    let mut statuses = Vec::with_capacity(total);
    let mut failures = Vec::new();
    for (tenant, result) in tenants.iter().zip(results) {
        match result.expect("every task reported") {
            Ok(status) => statuses.push(status),
            Err(error) => failures.push(TenantFailure {
                tenant: tenant.name.clone(),
                error,
            }),
        }
    }
    if !failures.is_empty() {
        return Err(Error::Tenants { failures });
    }
    Ok(PreflightReport::new(identifier, catalog.len(), statuses))
}

/// Compares one tenant's ledger with the catalog.
pub(crate) fn status(name: &str, catalog: &Catalog, applied: &[i64]) -> TenantStatus {
    let pending = catalog
        .versions()
        .into_iter()
        .filter(|v| applied.binary_search(v).is_err())
        .collect();
    let unknown_versions = applied
        .iter()
        .copied()
        .filter(|v| !catalog.knows(*v))
        .collect();
    TenantStatus {
        name: name.to_string(),
        pending,
        unknown_versions,
    }
}

/// Resolves a tenant and reads its ledger read-only: whether it is on
/// PostgreSQL, and its versions (ascending).
async fn read_applied(tenant: &Tenant, ledger: Ledger) -> Result<(bool, Vec<i64>)> {
    match tenant.resolve()? {
        TenantDatabase::Sqlite(path) => {
            let name = tenant.name.clone();
            let read = move || ledger_sqlite::read_applied(&name, &path, ledger);
            let applied = tokio::task::spawn_blocking(read)
                .await
                .map_err(|e| Error::backend(&tenant.name, "the ledger read panicked", e.into()))?;
            Ok((false, applied?))
        }
        TenantDatabase::Postgres { config, schema } => {
            let applied =
                ledger_postgres::read_applied(&tenant.name, &config, schema.as_deref(), ledger)
                    .await?;
            Ok((true, applied))
        }
    }
}
