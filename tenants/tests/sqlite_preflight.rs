//! The read-only preflight on real SQLite tenant files: answers, fail-closed
//! errors naming every failing tenant, and proof that nothing was written.

mod common;

use common::{sqlite_master, Fixture, ID, STANDARD};
use duraq_tenants::{
    pending, pending_command, progress_lines, CatalogSource, Error, ErrorCode, Progress,
    TenantSource, TenantsRequest,
};

async fn run(request: &TenantsRequest) -> duraq_tenants::Result<duraq_tenants::PreflightReport> {
    pending(request, &mut |_| {}).await
}

#[tokio::test]
async fn all_applied() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[1, 2]));
    fixture.tenant_db("beta", Some(&[1, 2]));
    fixture.tenants_file(&[
        ("acme", "sqlite:tenants/acme.db"),
        ("beta", "sqlite:tenants/beta.db"),
    ]);
    let report = run(&fixture.request()).await.unwrap();
    assert_eq!(
        report.json_line(),
        r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":0,"tenantCount":2}"#
    );
    assert!(report
        .tenants
        .iter()
        .all(|t| t.pending.is_empty() && t.unknown_versions.is_empty()));
}

#[tokio::test]
async fn one_tenant_pending() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[1, 2]));
    fixture.tenant_db("beta", Some(&[1]));
    fixture.tenant_db("gamma", Some(&[1, 2]));
    fixture.tenants_file(&[
        ("acme", "sqlite:tenants/acme.db"),
        ("beta", "sqlite:tenants/beta.db"),
        ("gamma", "sqlite:tenants/gamma.db"),
    ]);
    let mut request = fixture.request();
    request.concurrency = 2;
    let report = run(&request).await.unwrap();
    assert_eq!(
        report.json_line(),
        r#"{"hasPendingMigrations":true,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":1,"tenantCount":3}"#
    );
    assert_eq!(report.tenants[1].name, "beta");
    assert_eq!(report.tenants[1].pending, vec![2]);
    // Pending is a successful answer; --fail-on-pending makes it exit 3.
    assert_eq!(
        pending_command(&request, false, &mut |_| {})
            .await
            .exit_code,
        0
    );
    let outcome = pending_command(&request, true, &mut |_| {}).await;
    assert_eq!(outcome.exit_code, 3);
    assert_eq!(outcome.stdout.as_deref(), Some(report.json_line().as_str()));
}

#[tokio::test]
async fn no_tenants_is_zeros_and_false() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenants_file(&[]);
    let outcome = pending_command(&fixture.request(), true, &mut |_| {}).await;
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(
        outcome.stdout.unwrap(),
        r#"{"hasPendingMigrations":false,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":0,"tenantCount":0}"#
    );
    let empty = Fixture::new();
    let request = TenantsRequest::new(
        ID,
        TenantSource::Directory(empty.path("tenants")),
        CatalogSource::Dir(empty.path("migrations")),
    );
    let report = run(&request).await.unwrap();
    assert_eq!(
        (
            report.has_pending,
            report.migration_count,
            report.tenant_count
        ),
        (false, 0, 0)
    );
}

#[tokio::test]
async fn phase_filtering() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[2]));
    fixture.tenants_file(&[("acme", "sqlite:tenants/acme.db")]);
    let mut request = fixture.request();
    request.phase = Some("post-publication".into());
    let report = run(&request).await.unwrap();
    assert_eq!((report.has_pending, report.migration_count), (false, 1));
    request.phase = None;
    let report = run(&request).await.unwrap();
    assert_eq!((report.has_pending, report.migration_count), (true, 2));
    assert_eq!(report.tenants[0].pending, vec![1]);
    assert!(
        report.tenants[0].unknown_versions.is_empty(),
        "a filtered-out version is still known"
    );
}

#[tokio::test]
async fn missing_ledger_fails_and_creates_nothing() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[1, 2]));
    let bare = fixture.tenant_db("bare", None);
    fixture.tenants_file(&[
        ("acme", "sqlite:tenants/acme.db"),
        ("bare", "sqlite:tenants/bare.db"),
    ]);
    let before = sqlite_master(&bare);
    let err = run(&fixture.request()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantLedgerMissing);
    assert_eq!(err.tenants(), ["bare"]);
    assert_eq!(
        sqlite_master(&bare),
        before,
        "the preflight created nothing"
    );
    let outcome = pending_command(&fixture.request(), false, &mut |_| {}).await;
    assert_eq!((outcome.exit_code, outcome.stdout), (1, None));
    assert!(outcome.error.unwrap().to_string().contains("bare"));
}

#[tokio::test]
async fn unreachable_tenant_fails_and_stays_missing() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[1, 2]));
    fixture.tenants_file(&[
        ("acme", "sqlite:tenants/acme.db"),
        ("ghost", "sqlite:tenants/ghost.db"),
    ]);
    let err = run(&fixture.request()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    assert_eq!(err.tenants(), ["ghost"]);
    assert!(
        !fixture.path("tenants/ghost.db").exists(),
        "the preflight never creates a file"
    );
    std::fs::write(
        fixture.path("tenants/junk.db"),
        "not a database, just some text long enough",
    )
    .unwrap();
    fixture.tenants_file(&[("junk", "sqlite:tenants/junk.db")]);
    assert_eq!(
        run(&fixture.request()).await.unwrap_err().code(),
        ErrorCode::TenantUnreachable
    );
}

#[tokio::test]
async fn every_failing_tenant_is_reported() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("ok", Some(&[1, 2]));
    fixture.tenant_db("bare", None);
    fixture.tenants_file(&[
        ("ghost", "sqlite:tenants/ghost.db"),
        ("ok", "sqlite:tenants/ok.db"),
        ("bare", "sqlite:tenants/bare.db"),
        ("weird", "mysql://x"),
    ]);
    let mut events = Vec::new();
    let err = pending(&fixture.request(), &mut |e| {
        if let Progress::ScanFailed { tenant, .. } = e {
            events.push(tenant.to_string())
        }
    })
    .await
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantsFailed);
    assert_eq!(err.tenants(), ["ghost", "bare", "weird"]);
    let Error::Tenants { failures } = &err else {
        panic!("{err:?}")
    };
    let codes: Vec<ErrorCode> = failures.iter().map(|f| f.error.code()).collect();
    assert_eq!(
        codes,
        [
            ErrorCode::TenantUnreachable,
            ErrorCode::TenantLedgerMissing,
            ErrorCode::TenantUnresolved
        ]
    );
    events.sort();
    assert_eq!(events, ["bare", "ghost", "weird"]);
}

#[tokio::test]
async fn unknown_ledger_versions_are_reported_not_fatal() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenant_db("acme", Some(&[1, 2, 3, 99]));
    fixture.tenants_file(&[("acme", "sqlite:tenants/acme.db")]);
    let mut out = Vec::new();
    let report = pending(&fixture.request(), &mut progress_lines(&mut out))
        .await
        .unwrap();
    assert!(!report.has_pending);
    assert_eq!(
        report.tenants[0].unknown_versions,
        vec![99],
        "3 belongs to another identifier: known"
    );
    let lines = String::from_utf8(out).unwrap();
    assert!(
        lines.contains("scanning 1 tenant(s)") && lines.contains("[99]"),
        "{lines}"
    );
}

#[tokio::test]
async fn the_job_store_catalog_reads_the_store_ledger() {
    let fixture = Fixture::new();
    let path = fixture.path("tenants/acme.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE duraq_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at_ms INTEGER NOT NULL, PRIMARY KEY (scope, version));
         INSERT INTO duraq_migrations VALUES ('duraq.jobs', 1, 0), ('other.scope', 2, 0);",
    )
    .unwrap();
    fixture.tenants_file(&[("acme", "sqlite:tenants/acme.db")]);
    let request = TenantsRequest::new(
        ID,
        TenantSource::File(fixture.path("tenants.json")),
        CatalogSource::JobStore,
    );
    let report = run(&request).await.unwrap();
    // Every job-store version but the one the ledger records.
    let expected: Vec<i64> = duraq_store_sqlite::SCHEMA_VERSIONS
        .iter()
        .map(|v| v.version)
        .filter(|v| *v != 1)
        .collect();
    assert_eq!(expected.first(), Some(&2));
    assert_eq!(report.tenants[0].pending, expected);
}

#[tokio::test]
async fn catalog_and_config_errors_exit_1() {
    let fixture = Fixture::new();
    fixture.migrations(&[("1_a.sql", "SELECT 1;"), ("01_b.sql", "SELECT 1;")]);
    fixture.tenants_file(&[]);
    let outcome = pending_command(&fixture.request(), false, &mut |_| {}).await;
    assert_eq!(outcome.exit_code, 1);
    assert_eq!(
        outcome.error.unwrap().code(),
        ErrorCode::MigrationCatalogInvalid
    );
    std::fs::remove_file(fixture.path("migrations/01_b.sql")).unwrap();
    std::fs::write(fixture.path("tenants.json"), "[]").unwrap();
    let outcome = pending_command(&fixture.request(), false, &mut |_| {}).await;
    assert_eq!((outcome.exit_code, outcome.stdout), (1, None));
    assert_eq!(
        outcome.error.unwrap().code(),
        ErrorCode::TenantConfigInvalid
    );
}
