//! `duraq tenants pending|migrate` through the real binary: the one JSON line, the
//! exit codes 0/1/3, and that the preflight creates nothing.

mod common;

use std::path::Path;
use std::process::Output;

use common::{bin, exists};

fn tenants(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .current_dir(dir)
        .arg("tenants")
        .args(args)
        .output()
        .expect("run duraq")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn setup(dir: &Path) {
    std::fs::create_dir(dir.join("migrations")).unwrap();
    for (file, sql) in [
        (
            "1_accounts.sql",
            "-- duraq:databases: projectTenant\nCREATE TABLE accounts(id INTEGER);\n",
        ),
        (
            "2_users.sql",
            "-- duraq:databases: projectTenant\nCREATE TABLE users(id INTEGER);\n",
        ),
    ] {
        std::fs::write(dir.join("migrations").join(file), sql).unwrap();
    }
    // Zero-length files are empty SQLite databases.
    std::fs::write(dir.join("acme.db"), b"").unwrap();
    std::fs::write(dir.join("beta.db"), b"").unwrap();
    std::fs::write(
        dir.join("tenants.json"),
        r#"{"tenants":[{"name":"acme","database":"sqlite:acme.db"},{"name":"beta","database":"sqlite:beta.db"}]}"#,
    )
    .unwrap();
}

const COMMON: [&str; 5] = [
    "projectTenant",
    "--tenants",
    "tenants.json",
    "--migrations",
    "migrations",
];

#[test]
fn preflight_fails_closed_then_migrate_then_reports_pending() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    setup(dir);

    let out = tenants(dir, &[&["pending"][..], &COMMON].concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[tenant-ledger-missing]"));
    assert_eq!(stdout(&out), "");

    let out = tenants(dir, &[&["migrate"][..], &COMMON].concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["appliedMigrationCount"], 4);

    let out = tenants(dir, &[&["pending"][..], &COMMON].concat());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":0,"tenantCount":2}"#
    );

    std::fs::write(
        dir.join("migrations/3_orders.sql"),
        "-- duraq:databases: projectTenant\n-- duraq:phase: post-publication\nCREATE TABLE orders(id INTEGER);\n",
    )
    .unwrap();
    let out = tenants(dir, &[&["pending"][..], &COMMON].concat());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        r#"{"hasPendingMigrations":true,"identifier":"projectTenant","migrationCount":3,"pendingTenantCount":2,"tenantCount":2}"#
    );
    let out = tenants(
        dir,
        &[&["pending", "--fail-on-pending"][..], &COMMON].concat(),
    );
    assert_eq!(out.status.code(), Some(3));
    let out = tenants(
        dir,
        &[&["pending", "--phase", "pre-publication"][..], &COMMON].concat(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains(r#""hasPendingMigrations":false"#));
}

#[test]
fn unreachable_tenant_is_named_and_never_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    setup(dir);
    std::fs::remove_file(dir.join("beta.db")).unwrap();
    let out = tenants(dir, &[&["pending", "--json"][..], &COMMON].concat());
    assert_eq!(out.status.code(), Some(1));
    let err: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stderr).lines().last().unwrap()).unwrap();
    assert!(err["error"]["message"].as_str().unwrap().contains("beta"));
    assert!(!exists(&dir.join("beta.db")));
}

#[test]
fn bad_tenant_file_and_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    setup(dir);
    std::fs::write(dir.join("tenants.json"), "{not json").unwrap();
    let out = tenants(dir, &[&["pending"][..], &COMMON].concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[tenant-config-invalid]"));
    // No tenant source at all is a usage error.
    assert_eq!(
        tenants(dir, &["pending", "projectTenant"]).status.code(),
        Some(2)
    );
}
