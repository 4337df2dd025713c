//! The two commands as the CLI runs them: parsed arguments in, the exact stdout
//! line and exit code out. The CLI keeps only argument parsing, printing and the
//! progress display, so the contract of `docs/tenants.md` (one JSON line on success; exit
//! 0, 3 with `--fail-on-pending` when something is pending, 1 on any error naming
//! the tenant(s)) lives and is tested here.

use crate::error::Error;
use crate::migrate::migrate;
use crate::preflight::{pending, TenantsRequest};
use crate::report::{Progress, EXIT_ERROR, EXIT_OK};

/// What a command produced: print `stdout` (one line, add the newline) when it is
/// there, print `error` the CLI's usual way (`error[<code>]: <message>`, with
/// [`Error::code`]) when it is there, then exit with `exit_code`.
#[derive(Debug)]
pub struct CommandOutcome {
    /// The one JSON line for stdout (success only).
    pub stdout: Option<String>,
    /// The failure (its message names every failing tenant).
    pub error: Option<Error>,
    /// 0, 1 or 3 (see [`crate::EXIT_PENDING`]).
    pub exit_code: i32,
}

impl CommandOutcome {
    fn failed(error: Error) -> Self {
        Self {
            stdout: None,
            error: Some(error),
            exit_code: EXIT_ERROR,
        }
    }
}

/// `duraq tenants pending <IDENTIFIER> --tenants <FILE> [--migrations <DIR>]
/// [--phase <P>] [--fail-on-pending]`.
///
/// ```
/// use duraq_tenants::{pending_command, CatalogSource, TenantSource, TenantsRequest};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("t.json"), r#"{"tenants":[]}"#).unwrap();
/// let request = TenantsRequest::new(
///     "projectTenant",
///     TenantSource::File(dir.path().join("t.json")),
///     CatalogSource::JobStore,
/// );
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let outcome = rt.block_on(pending_command(&request, true, &mut |_| {}));
/// assert_eq!(outcome.exit_code, 0);
/// // The job store's versions, one migration each.
/// let count = duraq_store_sqlite::SCHEMA_VERSIONS.len();
/// assert_eq!(
///     outcome.stdout.unwrap(),
///     format!(r#"{{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":{count},"pendingTenantCount":0,"tenantCount":0}}"#)
/// );
/// ```
pub async fn pending_command(
    request: &TenantsRequest,
    fail_on_pending: bool,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> CommandOutcome {
    match pending(request, progress).await {
        Ok(report) => CommandOutcome {
            stdout: Some(report.json_line()),
            error: None,
            exit_code: report.exit_code(fail_on_pending),
        },
        Err(error) => CommandOutcome::failed(error),
    }
}

/// `duraq tenants migrate <IDENTIFIER> --tenants <FILE> --migrations <DIR> [--phase <P>]`:
/// prints [`crate::MigrateReport::json_line`] and exits 0, or exits 1 naming the
/// tenant it stopped at.
pub async fn migrate_command(
    request: &TenantsRequest,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> CommandOutcome {
    match migrate(request, progress).await {
        Ok(report) => CommandOutcome {
            stdout: Some(report.json_line()),
            error: None,
            exit_code: EXIT_OK,
        },
        Err(error) => CommandOutcome::failed(error),
    }
}
