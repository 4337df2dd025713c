//! A deploy script's tenant preflight: before shipping code that needs a schema,
//! ask whether any tenant database lacks a migration, and turn the answer into
//! the exit codes of `duraq tenants pending` (0 answered, 3 pending with
//! `--fail-on-pending`, 1 error). The preflight only reads: SQLite is opened
//! read-only and nothing is created, not even a missing tenant's file.
//!
//! Two tenants (SQLite files) share a migrations folder; release 1 is applied to
//! both, release 2's migration to the canary tenant only, so the preflight
//! reports the other one until it is migrated too.
//!
//! Run: `cargo run -p duraq-examples --example tenant_preflight`

use std::fs;
use std::io::IsTerminal;
use std::path::Path;

use duraq_tenants::{
    migrate, pending, pending_command, CatalogSource, TenantSource, TenantsRequest, EXIT_ERROR,
    EXIT_OK, EXIT_PENDING,
};
use tracing_subscriber::EnvFilter;

/// The deploy step: print what `duraq tenants pending` prints and return its exit
/// code. A real deploy script ends with `std::process::exit(code)`.
async fn preflight(request: &TenantsRequest, fail_on_pending: bool) -> i32 {
    let flag = if fail_on_pending {
        " --fail-on-pending"
    } else {
        ""
    };
    println!(
        "$ duraq tenants pending projectTenant --tenants {} --migrations migrations{flag}",
        tenants_file(request)
    );
    let outcome = pending_command(request, fail_on_pending, &mut |_| {}).await;
    if let Some(line) = &outcome.stdout {
        println!("{line}");
    }
    if let Some(error) = &outcome.error {
        println!("error[{}]: {error}", error.code());
    }
    println!("exit {}", outcome.exit_code);
    outcome.exit_code
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs on stderr (`RUST_LOG` filters, `info` by default), as in every example.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    fs::create_dir_all(root.join("migrations"))?;
    fs::create_dir_all(root.join("tenants"))?;
    // The tenants' databases exist (migrate never creates one).
    for name in ["acme", "globex"] {
        rusqlite::Connection::open(root.join(format!("tenants/{name}.db")))?;
    }
    let list = |file: &str, names: &[&str]| -> std::io::Result<TenantsRequest> {
        let tenants: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"name":"{n}","database":"sqlite:tenants/{n}.db"}}"#))
            .collect();
        fs::write(
            root.join(file),
            format!(r#"{{"tenants":[{}]}}"#, tenants.join(",")),
        )?;
        let tenants = TenantSource::File(root.join(file));
        Ok(TenantsRequest::new(
            "projectTenant",
            tenants,
            CatalogSource::Dir(root.join("migrations")),
        ))
    };
    let all = list("tenants.json", &["acme", "globex"])?;
    let canary = list("canary.json", &["acme"])?;

    // Release 1: one migration, applied to every tenant (this writes each ledger).
    add_migration(
        root,
        "001_notes.sql",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);",
    )?;
    let applied = migrate(&all, &mut |_| {}).await?;
    println!("release 1 migrated: {}", applied.json_line());

    // Release 2 adds a migration; only the canary tenant has it so far.
    add_migration(
        root,
        "002_tags.sql",
        "ALTER TABLE notes ADD COLUMN tags TEXT;",
    )?;
    let applied = migrate(&canary, &mut |_| {}).await?;
    println!("release 2 migrated the canary: {}", applied.json_line());

    // The deploy of release 2 asks first. Pending is an answer (exit 0) unless the
    // script asks to fail on it (exit 3).
    assert_eq!(preflight(&all, false).await, EXIT_OK);
    assert_eq!(preflight(&all, true).await, EXIT_PENDING);
    // The library also says who lacks what.
    for tenant in pending(&all, &mut |_| {}).await?.tenants {
        println!("  {}: pending versions {:?}", tenant.name, tenant.pending);
    }

    // Migrate the rest; now the gate opens.
    migrate(&all, &mut |_| {}).await?;
    assert_eq!(preflight(&all, true).await, EXIT_OK);

    // Fails closed: a listed tenant whose database is missing is an error (exit 1,
    // naming it), never "up to date", and the read-only preflight does not create it.
    let broken = list("broken.json", &["acme", "initech"])?;
    assert_eq!(preflight(&broken, true).await, EXIT_ERROR);
    assert!(!root.join("tenants/initech.db").exists());
    println!("tenants/initech.db still does not exist: the preflight wrote nothing");
    Ok(())
}

/// Writes a migration for the `projectTenant` database into the folder.
fn add_migration(root: &Path, file: &str, sql: &str) -> std::io::Result<()> {
    fs::write(
        root.join("migrations").join(file),
        format!("-- duraq:databases: projectTenant\n{sql}\n"),
    )
}

fn tenants_file(request: &TenantsRequest) -> String {
    match &request.tenants {
        TenantSource::File(path) => path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        _ => String::new(),
    }
}
