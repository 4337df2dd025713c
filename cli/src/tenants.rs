//! `duraq tenants pending|migrate` (`docs/tenants.md`). The library (`duraq-tenants`) owns
//! the contract — the one JSON line, the exit codes 0/1/3, the read-only scan —
//! so this module only maps flags to a `TenantsRequest` and draws progress: a bar
//! when stderr is a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand};
use duraq_tenants::{
    migrate_command, pending_command, progress_lines, CatalogSource, CommandOutcome, Progress,
    TenantSource, TenantsRequest, DEFAULT_CONCURRENCY,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::display::terminal_safe;
use crate::output::{print_error, scrub};
use duraq_core::inspect::error_chain;

#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// Read-only preflight: does any tenant lack a migration? One JSON line.
    #[command(after_long_help = crate::examples::TENANTS_PENDING)]
    Pending(PendingArgs),
    /// Apply pending migrations tenant by tenant; stops at the first failing tenant.
    #[command(after_long_help = crate::examples::TENANTS_MIGRATE)]
    Migrate(TenantArgs),
}

#[derive(Debug, Args)]
pub struct PendingArgs {
    #[command(flatten)]
    pub common: TenantArgs,
    /// Exit with status 3 when something is pending (for deploy pipelines).
    #[arg(long)]
    pub fail_on_pending: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["tenants", "tenants_dir", "tenants_query"])))]
pub struct TenantArgs {
    /// The database identifier whose migrations count (e.g. `projectTenant`).
    pub identifier: String,
    /// A JSON or TOML file `{"tenants":[{"name":…,"database":…}]}`.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
    /// A folder whose `*.db` files are the tenants (SQLite).
    #[arg(long, value_name = "DIR")]
    pub tenants_dir: Option<PathBuf>,
    /// A SQL query returning (name, database URL) rows on `--control-database`.
    #[arg(long, value_name = "SQL", requires = "control_database")]
    pub tenants_query: Option<String>,
    /// The database URL `--tenants-query` runs on.
    #[arg(long, value_name = "URL")]
    pub control_database: Option<String>,
    /// Folder of `<version>_<name>.sql` migrations (default: the job store schema).
    #[arg(long, value_name = "DIR")]
    pub migrations: Option<PathBuf>,
    /// Only migrations of this phase (a file's `-- duraq:phase: NAME` header line).
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
    /// Tenants scanned at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
}

impl TenantArgs {
    fn request(self) -> TenantsRequest {
        let tenants = match (self.tenants, self.tenants_dir, self.tenants_query) {
            (Some(file), _, _) => TenantSource::File(file),
            (_, Some(dir), _) => TenantSource::Directory(dir),
            (_, _, query) => TenantSource::Query {
                control: self.control_database.unwrap_or_default(),
                query: query.unwrap_or_default(),
            },
        };
        let migrations = self
            .migrations
            .map_or(CatalogSource::JobStore, CatalogSource::Dir);
        let mut request = TenantsRequest::new(self.identifier, tenants, migrations);
        request.phase = self.phase;
        request.concurrency = self.concurrency.max(1);
        request
    }
}

/// Runs a tenants command and returns its exit status (0, 1 or 3).
pub async fn run(cmd: TenantsCommand, json: bool) -> u8 {
    let mut progress: Box<dyn FnMut(Progress<'_>) + Send> = if std::io::stderr().is_terminal() {
        Box::new(bar_progress())
    } else {
        Box::new(progress_lines(std::io::stderr()))
    };
    let outcome = match cmd {
        TenantsCommand::Pending(a) => {
            pending_command(&a.common.request(), a.fail_on_pending, &mut *progress).await
        }
        TenantsCommand::Migrate(a) => migrate_command(&a.request(), &mut *progress).await,
    };
    finish(outcome, json)
}

fn bar_progress() -> impl FnMut(Progress<'_>) + Send {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    move |event| match event {
        Progress::ScanStarted { total } => bar.set_length(total as u64),
        Progress::Scanned { done, status, .. } => {
            bar.set_position(done as u64);
            bar.set_message(terminal_safe(&status.name).into_owned());
        }
        Progress::ScanFailed {
            done,
            tenant,
            error,
            ..
        } => {
            bar.set_position(done as u64);
            // Tenant names come from a file or a control database: escaped.
            let line = format!("{tenant}: error[{}] {}", error.code(), error_chain(error));
            bar.println(terminal_safe(&scrub(&line)));
        }
        Progress::MigrateTenant {
            index,
            total,
            tenant,
            ..
        } => {
            bar.set_length(total as u64);
            bar.set_position(index as u64);
            bar.set_message(terminal_safe(tenant).into_owned());
        }
        Progress::Applied {
            tenant,
            version,
            name,
        } => {
            bar.println(terminal_safe(&format!(
                "{tenant}: applied {version}_{name}"
            )));
        }
        _ => {}
    }
}

fn finish(outcome: CommandOutcome, json: bool) -> u8 {
    if let Some(line) = outcome.stdout {
        println!("{line}");
    }
    if let Some(error) = outcome.error {
        print_error(&anyhow::Error::new(error), json);
    }
    u8::try_from(outcome.exit_code).unwrap_or(1)
}
