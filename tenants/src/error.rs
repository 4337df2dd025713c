//! One error type for the tenants crate. Kinds are backend-neutral (a SQLite tenant
//! and a PostgreSQL tenant fail with the same kind for the same reason) and every
//! kind has a stable code ([`ErrorCode::as_str`]) that the CLI prints as
//! `error[<code>]` and that tests match on; messages are for humans only.
//!
//! A preflight scans every tenant before it fails, so it fails with
//! [`Error::Tenants`]: one entry per failing tenant, each with its own code.
//!
//! A message carries its cause (`tenant "acme" unreachable: PostgreSQL
//! connection to u@127.0.0.1:9/x failed: error connecting to server: Connection
//! refused`), rendered when the error is made, because the backends' own
//! `Display` often says only `db error`; so `to_string()`, `{:#}` and
//! `duraq_core::inspect::error_chain` all print the same complete line, and no error
//! returns its cause from `source()` as well (that would print it twice). The
//! original error is kept in the `cause` field. Messages never hold a password.

use std::fmt;
use std::path::PathBuf;

use crate::cause::with_cause;
pub use crate::cause::BoxError;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The stable machine codes of the tenant commands (`docs/tenants.md`); match
/// on these, never on messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A migration file with a bad name or header, or two files with one version.
    MigrationCatalogInvalid,
    /// The catalog cannot be applied by this crate (the job store's own schema is
    /// applied by the store, `duraq migrate`).
    MigrationCatalogNotApplicable,
    /// The tenants file (or the control query's answer) is malformed.
    TenantConfigInvalid,
    /// The control database of a query provider cannot be reached.
    TenantProviderUnreachable,
    /// A tenant's database URL is empty or of an unknown kind.
    TenantUnresolved,
    /// A tenant's database cannot be opened (missing file, refused connection,
    /// missing PostgreSQL schema).
    TenantUnreachable,
    /// A tenant's database has no migration ledger table.
    TenantLedgerMissing,
    /// A migration's SQL failed while `migrate` applied it (rolled back).
    TenantMigrationFailed,
    /// Several tenants failed with different codes (see [`Error::Tenants`]).
    TenantsFailed,
    /// Anything else a backend reports.
    Backend,
}

impl ErrorCode {
    /// The stable string, e.g. `"tenant-ledger-missing"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MigrationCatalogInvalid => "migration-catalog-invalid",
            Self::MigrationCatalogNotApplicable => "migration-catalog-not-applicable",
            Self::TenantConfigInvalid => "tenant-config-invalid",
            Self::TenantProviderUnreachable => "tenant-provider-unreachable",
            Self::TenantUnresolved => "tenant-unresolved",
            Self::TenantUnreachable => "tenant-unreachable",
            Self::TenantLedgerMissing => "tenant-ledger-missing",
            Self::TenantMigrationFailed => "tenant-migration-failed",
            Self::TenantsFailed => "tenants-failed",
            Self::Backend => "backend-error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failing tenant inside [`Error::Tenants`].
#[derive(Debug)]
pub struct TenantFailure {
    /// The tenant's name as the provider listed it.
    pub tenant: String,
    /// Why it failed (never itself an [`Error::Tenants`]).
    pub error: Error,
}

/// Every failure this crate reports.
///
/// ```
/// use duraq_tenants::{Catalog, ErrorCode};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("x_bad.sql"), "SELECT 1;").unwrap();
/// let err = Catalog::load_dir(dir.path()).unwrap_err();
/// assert_eq!(err.code(), ErrorCode::MigrationCatalogInvalid);
/// assert_eq!(err.code().as_str(), "migration-catalog-invalid");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A migration file is malformed or repeats a version.
    #[error("migration catalog invalid: {file}: {message}")]
    CatalogInvalid {
        /// The offending file (or folder, for a duplicate version).
        file: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The catalog cannot be applied by this crate.
    #[error("{message}")]
    CatalogNotApplicable {
        /// Which catalog, and what applies it instead.
        message: String,
    },
    /// The tenant list is malformed (`source` names the file or control query).
    #[error("tenant config invalid: {source_name}: {message}")]
    ConfigInvalid {
        /// The tenants file, or `query on <control database>` (password redacted).
        source_name: String,
        /// What is malformed, with the parser's position where it has one.
        message: String,
    },
    /// The control database of a query provider cannot be reached.
    #[error("tenant provider unreachable: {message}")]
    ProviderUnreachable {
        /// The connection failure, with passwords redacted.
        message: String,
        /// The original error (already rendered in `message`).
        cause: Option<BoxError>,
    },
    /// A tenant's URL is empty or of an unknown kind.
    #[error("tenant {tenant:?} unresolved: {message}")]
    Unresolved {
        /// The tenant's name, as its provider lists it.
        tenant: String,
        /// Why its URL cannot be used.
        message: String,
    },
    /// A tenant's database cannot be opened.
    #[error("tenant {tenant:?} unreachable: {message}")]
    Unreachable {
        /// The tenant's name, as its provider lists it.
        tenant: String,
        /// Why it cannot be opened (missing file, refused connection, missing
        /// schema), with passwords redacted.
        message: String,
        /// The original error (already rendered in `message`).
        cause: Option<BoxError>,
    },
    /// A tenant's database has no ledger table (never read as "nothing applied").
    #[error("tenant {tenant:?} has no migration ledger table {table}")]
    LedgerMissing {
        /// The tenant's name, as its provider lists it.
        tenant: String,
        /// The ledger table that was looked for.
        table: String,
    },
    /// A migration failed on a tenant and was rolled back.
    #[error("tenant {tenant:?}: migration {version} ({name}) failed: {message}")]
    MigrationFailed {
        /// The tenant's name, as its provider lists it.
        tenant: String,
        /// The failing migration's version.
        version: i64,
        /// The failing migration's name (its file name after the version).
        name: String,
        /// The database's error.
        message: String,
        /// The original error (already rendered in `message`).
        cause: Option<BoxError>,
    },
    /// One or more tenants failed; every failing tenant is listed, in provider order.
    #[error("{}", tenants_message(.failures))]
    Tenants {
        /// Each failing tenant with its own error.
        failures: Vec<TenantFailure>,
    },
    /// Any other backend failure (`tenant` names the tenant when there is one).
    #[error("{}backend error: {message}", tenant.as_ref().map(|t| format!("tenant {t:?}: ")).unwrap_or_default())]
    Backend {
        /// The tenant being read, when the failure concerns one.
        tenant: Option<String>,
        /// The backend's error, with passwords redacted.
        message: String,
        /// The original error (already rendered in `message`).
        cause: Option<BoxError>,
    },
}

fn tenants_message(failures: &[TenantFailure]) -> String {
    let parts: Vec<String> = failures
        .iter()
        .map(|f| format!("[{}] {}", f.error.code(), f.error))
        .collect();
    format!("{} tenant(s) failed: {}", failures.len(), parts.join("; "))
}

impl Error {
    /// The stable code of this error. For [`Error::Tenants`] it is the failures'
    /// common code when they all share one, else `tenants-failed`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::CatalogInvalid { .. } => ErrorCode::MigrationCatalogInvalid,
            Self::CatalogNotApplicable { .. } => ErrorCode::MigrationCatalogNotApplicable,
            Self::ConfigInvalid { .. } => ErrorCode::TenantConfigInvalid,
            Self::ProviderUnreachable { .. } => ErrorCode::TenantProviderUnreachable,
            Self::Unresolved { .. } => ErrorCode::TenantUnresolved,
            Self::Unreachable { .. } => ErrorCode::TenantUnreachable,
            Self::LedgerMissing { .. } => ErrorCode::TenantLedgerMissing,
            Self::MigrationFailed { .. } => ErrorCode::TenantMigrationFailed,
            Self::Backend { .. } => ErrorCode::Backend,
            Self::Tenants { failures } => {
                let mut codes = failures.iter().map(|f| f.error.code());
                match codes.next() {
                    Some(first) if codes.all(|c| c == first) => first,
                    _ => ErrorCode::TenantsFailed,
                }
            }
        }
    }

    /// The names of the failing tenants, in provider order (empty when the error
    /// is not about a tenant).
    pub fn tenants(&self) -> Vec<&str> {
        match self {
            Self::Tenants { failures } => failures.iter().map(|f| f.tenant.as_str()).collect(),
            Self::Unresolved { tenant, .. }
            | Self::Unreachable { tenant, .. }
            | Self::LedgerMissing { tenant, .. }
            | Self::MigrationFailed { tenant, .. } => vec![tenant.as_str()],
            Self::Backend {
                tenant: Some(tenant),
                ..
            } => vec![tenant.as_str()],
            _ => Vec::new(),
        }
    }

    pub(crate) fn catalog(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::CatalogInvalid {
            file: file.into(),
            message: message.into(),
        }
    }

    pub(crate) fn config(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        Self::ConfigInvalid {
            source_name: source_name.into(),
            message: message.into(),
        }
    }

    /// `tenant-unreachable`: `context` and the rendered `cause`.
    pub(crate) fn unreachable(
        tenant: &str,
        context: impl fmt::Display,
        cause: Option<BoxError>,
    ) -> Self {
        Self::Unreachable {
            tenant: tenant.to_string(),
            message: with_cause(context, cause.as_ref()),
            cause,
        }
    }

    /// `backend-error` on `tenant`: `context` and the rendered `cause`.
    pub(crate) fn backend(tenant: &str, context: impl fmt::Display, cause: BoxError) -> Self {
        Self::Backend {
            tenant: Some(tenant.to_string()),
            message: with_cause(context, Some(&cause)),
            cause: Some(cause),
        }
    }

    /// `tenant-provider-unreachable`: `context` and the rendered `cause`.
    pub(crate) fn provider(context: impl fmt::Display, cause: BoxError) -> Self {
        Self::ProviderUnreachable {
            message: with_cause(context, Some(&cause)),
            cause: Some(cause),
        }
    }

    /// `tenant-migration-failed`: the rendered `cause` of `migration` failing.
    pub(crate) fn migration_failed(
        tenant: &str,
        version: i64,
        name: &str,
        cause: BoxError,
    ) -> Self {
        Self::MigrationFailed {
            tenant: tenant.to_string(),
            version,
            name: name.to_string(),
            message: with_cause("", Some(&cause)),
            cause: Some(cause),
        }
    }
}
