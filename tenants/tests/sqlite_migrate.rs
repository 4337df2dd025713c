//! `migrate` on real SQLite tenant files: applies what is pending (each migration
//! with its ledger row, atomically), then the preflight says nothing is pending;
//! stops at the first failing tenant and leaves later tenants untouched.

mod common;

use common::{ledger_versions, sqlite_master, Fixture, ID, STANDARD};
use duraq_tenants::{
    migrate, migrate_command, pending, CatalogSource, ErrorCode, Progress, TenantSource,
    TenantsRequest,
};

#[tokio::test]
async fn migrate_applies_then_nothing_is_pending() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let acme = fixture.tenant_db("acme", None);
    let beta = fixture.tenant_db("beta", Some(&[1]));
    fixture.tenants_file(&[
        ("acme", "sqlite:tenants/acme.db"),
        ("beta", "sqlite:tenants/beta.db"),
    ]);
    let mut applied = Vec::new();
    let report = migrate(&fixture.request(), &mut |e| {
        if let Progress::Applied {
            tenant, version, ..
        } = e
        {
            applied.push((tenant.to_string(), version))
        }
    })
    .await
    .unwrap();
    assert_eq!(
        applied,
        [("acme".into(), 1), ("acme".into(), 2), ("beta".into(), 2)]
    );
    assert_eq!(
        report.json_line(),
        r#"{"appliedMigrationCount":3,"identifier":"projectTenant","migrationCount":2,"migratedTenantCount":2,"tenantCount":2,"tenants":[{"name":"acme","applied":[1,2]},{"name":"beta","applied":[2]}]}"#
    );
    assert_eq!(ledger_versions(&acme), [1, 2]);
    assert_eq!(ledger_versions(&beta), [1, 2]);
    assert!(sqlite_master(&acme).contains(&("table".into(), "tags".into())));
    let report = pending(&fixture.request(), &mut |_| {}).await.unwrap();
    assert_eq!(
        (
            report.has_pending,
            report.pending_tenant_count,
            report.tenant_count
        ),
        (false, 0, 2)
    );
    // A second run applies nothing.
    let again = migrate(&fixture.request(), &mut |_| {}).await.unwrap();
    assert_eq!(again.applied_migration_count, 0);
}

#[tokio::test]
async fn migrate_stops_at_the_first_failing_tenant() {
    let fixture = Fixture::new();
    fixture.migrations(&[
        ("1_create_notes.sql", "-- duraq:databases: projectTenant\nCREATE TABLE notes (id INTEGER);\n"),
        ("2_fill.sql", "-- duraq:databases: projectTenant\nCREATE TABLE half (x INTEGER);\nINSERT INTO missing_table VALUES (1);\n"),
    ]);
    let first = fixture.tenant_db("first", Some(&[1, 2]));
    let broken = fixture.tenant_db("broken", Some(&[]));
    let later = fixture.tenant_db("later", None);
    fixture.tenants_file(&[
        ("first", "sqlite:tenants/first.db"),
        ("broken", "sqlite:tenants/broken.db"),
        ("later", "sqlite:tenants/later.db"),
    ]);
    let later_before = sqlite_master(&later);
    let first_before = sqlite_master(&first);
    let outcome = migrate_command(&fixture.request(), &mut |_| {}).await;
    assert_eq!((outcome.exit_code, outcome.stdout.as_deref()), (1, None));
    let err = outcome.error.unwrap();
    assert_eq!(err.code(), ErrorCode::TenantMigrationFailed);
    assert_eq!(err.tenants(), ["broken"]);
    assert!(matches!(
        err,
        duraq_tenants::Error::MigrationFailed { version: 2, .. }
    ));
    // The failing migration rolled back whole (no `half` table, no ledger row);
    // the one before it stays applied.
    assert_eq!(ledger_versions(&broken), [1]);
    let tables = sqlite_master(&broken);
    assert!(tables.contains(&("table".into(), "notes".into())));
    assert!(!tables.iter().any(|(_, n)| n == "half"));
    assert_eq!(
        sqlite_master(&later),
        later_before,
        "later tenants are untouched"
    );
    assert_eq!(sqlite_master(&first), first_before);
}

#[tokio::test]
async fn migrate_never_creates_a_tenant_database() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenants_file(&[("ghost", "sqlite:tenants/ghost.db")]);
    let err = migrate(&fixture.request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    assert_eq!(err.tenants(), ["ghost"]);
    assert!(!fixture.path("tenants/ghost.db").exists());
}

#[tokio::test]
async fn the_job_store_catalog_is_not_applied_here() {
    let fixture = Fixture::new();
    fixture.tenant_db("acme", None);
    let request = TenantsRequest::new(
        ID,
        TenantSource::Directory(fixture.path("tenants")),
        CatalogSource::JobStore,
    );
    let err = migrate(&request, &mut |_| {}).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::MigrationCatalogNotApplicable);
    assert_eq!(
        sqlite_master(&fixture.path("tenants/acme.db")),
        [("table".to_string(), "app_data".to_string())]
    );
}
