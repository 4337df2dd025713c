//! What a preflight or a migration run answers, what it tells the caller while it
//! runs ([`Progress`]), and the exact stdout line and exit code of the two
//! commands (`docs/tenants.md`): the CLI prints [`PreflightReport::json_line`] as is.

use std::io::Write;

use serde::Serialize;

use crate::error::Error;

/// Exit code of a successful command.
pub const EXIT_OK: i32 = 0;
/// Exit code of any failure (the error names the tenant(s)).
pub const EXIT_ERROR: i32 = 1;
/// Exit code of `tenants pending --fail-on-pending` when something is pending.
pub const EXIT_PENDING: i32 = 3;

/// One tenant as a preflight saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    /// The tenant's name.
    pub name: String,
    /// Catalog versions the ledger lacks, ascending.
    pub pending: Vec<i64>,
    /// Ledger versions the catalog (any identifier, any phase) does not know,
    /// ascending. Reported, not fatal.
    pub unknown_versions: Vec<i64>,
}

/// The answer of a preflight.
///
/// ```
/// use duraq_tenants::PreflightReport;
/// let report = PreflightReport::new("projectTenant", 12, Vec::new());
/// assert_eq!(
///     report.json_line(),
///     r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":12,"pendingTenantCount":0,"tenantCount":0}"#
/// );
/// assert_eq!(report.exit_code(true), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightReport {
    /// Whether any tenant lacks any catalog migration.
    pub has_pending: bool,
    /// The database identifier the catalog was selected for.
    pub identifier: String,
    /// How many migrations the selected catalog holds.
    pub migration_count: usize,
    /// How many tenants lack at least one of them.
    pub pending_tenant_count: usize,
    /// How many tenants were scanned.
    pub tenant_count: usize,
    /// Every tenant, in provider order.
    pub tenants: Vec<TenantStatus>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PreflightLine<'a> {
    has_pending_migrations: bool,
    identifier: &'a str,
    migration_count: usize,
    pending_tenant_count: usize,
    tenant_count: usize,
}

impl PreflightReport {
    /// Builds the counts from the per-tenant statuses.
    pub fn new(identifier: &str, migration_count: usize, tenants: Vec<TenantStatus>) -> Self {
        let pending_tenant_count = tenants.iter().filter(|t| !t.pending.is_empty()).count();
        Self {
            has_pending: pending_tenant_count > 0,
            identifier: identifier.to_string(),
            migration_count,
            pending_tenant_count,
            tenant_count: tenants.len(),
            tenants,
        }
    }

    /// The one stdout line (no newline), keys in the documented order
    /// (`hasPendingMigrations`, `identifier`, `migrationCount`,
    /// `pendingTenantCount`, `tenantCount`).
    pub fn json_line(&self) -> String {
        let line = PreflightLine {
            has_pending_migrations: self.has_pending,
            identifier: &self.identifier,
            migration_count: self.migration_count,
            pending_tenant_count: self.pending_tenant_count,
            tenant_count: self.tenant_count,
        };
        serde_json::to_string(&line).expect("a struct of strings and numbers serializes")
    }

    /// 0, or 3 when `fail_on_pending` and something is pending.
    pub fn exit_code(&self, fail_on_pending: bool) -> i32 {
        if fail_on_pending && self.has_pending {
            EXIT_PENDING
        } else {
            EXIT_OK
        }
    }
}

/// What `migrate` applied to one tenant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantMigration {
    /// The tenant's name.
    pub name: String,
    /// The versions applied to it by this run, ascending.
    pub applied: Vec<i64>,
}

/// The answer of `migrate`; its JSON line is
/// `{"appliedMigrationCount":…,"identifier":…,"migrationCount":…,"migratedTenantCount":…,"tenantCount":…,"tenants":[{"name":…,"applied":[…]}]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateReport {
    /// Migrations applied in total, over every tenant.
    pub applied_migration_count: usize,
    /// The database identifier the catalog was selected for.
    pub identifier: String,
    /// How many migrations the selected catalog holds.
    pub migration_count: usize,
    /// How many tenants had at least one migration applied.
    pub migrated_tenant_count: usize,
    /// How many tenants were visited.
    pub tenant_count: usize,
    /// Every tenant, in provider order.
    pub tenants: Vec<TenantMigration>,
}

impl MigrateReport {
    /// The one stdout line (no newline).
    pub fn json_line(&self) -> String {
        serde_json::to_string(self).expect("a struct of strings and numbers serializes")
    }
}

/// What a running preflight or migration reports, in order, from the caller's task.
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// A preflight starts scanning `total` tenants.
    ScanStarted {
        /// How many tenants the provider listed.
        total: usize,
    },
    /// One tenant was scanned (`done` of `total`, in completion order).
    Scanned {
        /// Tenants scanned so far, this one included.
        done: usize,
        /// Tenants to scan in all.
        total: usize,
        /// What the scan found.
        status: &'a TenantStatus,
    },
    /// One tenant failed to scan; the preflight goes on and fails at the end.
    ScanFailed {
        /// Tenants scanned so far, this one included.
        done: usize,
        /// Tenants to scan in all.
        total: usize,
        /// The failing tenant's name.
        tenant: &'a str,
        /// Why it failed.
        error: &'a Error,
    },
    /// `migrate` starts on tenant number `index` (from 0) of `total`.
    MigrateTenant {
        /// The tenant's position in provider order, from 0.
        index: usize,
        /// Tenants in all.
        total: usize,
        /// The tenant's name.
        tenant: &'a str,
        /// The versions about to be applied, ascending.
        pending: &'a [i64],
    },
    /// `migrate` applied (and recorded) one migration.
    Applied {
        /// The tenant's name.
        tenant: &'a str,
        /// The migration's version.
        version: i64,
        /// The migration's name.
        name: &'a str,
    },
}

/// A progress callback writing one plain line per event to `out` (for a stderr
/// that is not a terminal; the CLI may draw a bar instead). Write errors are
/// ignored: progress must never fail the command.
///
/// ```
/// use duraq_tenants::{progress_lines, Progress};
/// let mut out = Vec::new();
/// progress_lines(&mut out)(Progress::ScanStarted { total: 2 });
/// assert_eq!(String::from_utf8(out).unwrap(), "scanning 2 tenant(s)\n");
/// ```
pub fn progress_lines<W: Write + Send>(mut out: W) -> impl FnMut(Progress<'_>) + Send {
    move |event| {
        let _ = match event {
            Progress::ScanStarted { total } => writeln!(out, "scanning {total} tenant(s)"),
            Progress::Scanned {
                done,
                total,
                status,
            } => writeln!(
                out,
                "[{done}/{total}] {}: {} pending{}",
                status.name,
                status.pending.len(),
                if status.unknown_versions.is_empty() {
                    String::new()
                } else {
                    format!(", unknown ledger versions {:?}", status.unknown_versions)
                }
            ),
            Progress::ScanFailed {
                done,
                total,
                tenant,
                error,
            } => {
                writeln!(
                    out,
                    "[{done}/{total}] {tenant}: error[{}] {error}",
                    error.code()
                )
            }
            Progress::MigrateTenant {
                index,
                total,
                tenant,
                pending,
            } => {
                writeln!(
                    out,
                    "[{}/{total}] {tenant}: {} pending",
                    index + 1,
                    pending.len()
                )
            }
            Progress::Applied {
                tenant,
                version,
                name,
            } => {
                writeln!(out, "  {tenant}: applied {version}_{name}")
            }
        };
    }
}
