//! The core scenarios on PostgreSQL, one fresh schema per tenant, and proof that
//! the reader's transaction is read-only (SQLSTATE 25006).
//!
//! Needs `DATABASE_URL` (`cargo xtask test-all` always sets it); without it these
//! tests fail on purpose, so a green run always means PostgreSQL was checked.
//! `cargo test -- --skip postgres` leaves them out.

mod common;

use common::pg::{admin, drop_schemas, tables, tenant_schema, unique, url_for};
use common::{Fixture, ID, STANDARD};
use duraq_tenants::{
    migrate, pending, ErrorCode, PostgresReadOnly, TenantDatabase, TenantSource, TenantsRequest,
};
use tokio_postgres::error::SqlState;

#[tokio::test]
async fn postgres_all_applied_one_pending_and_unknown_versions() {
    let client = admin().await;
    let (a, b, c) = (unique("all"), unique("one"), unique("unk"));
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let ua = tenant_schema(&client, &a, Some(&[1, 2])).await;
    let ub = tenant_schema(&client, &b, Some(&[1])).await;
    let uc = tenant_schema(&client, &c, Some(&[1, 2, 77])).await;
    fixture.tenants_file(&[("a", &ua), ("b", &ub), ("c", &uc)]);
    let report = pending(&fixture.request(), &mut |_| {}).await.unwrap();
    assert_eq!(
        report.json_line(),
        r#"{"hasPendingMigrations":true,"identifier":"projectTenant","migrationCount":2,"pendingTenantCount":1,"tenantCount":3}"#
    );
    assert_eq!(report.tenants[1].pending, vec![2]);
    assert_eq!(report.tenants[2].unknown_versions, vec![77]);
    let mut request = fixture.request();
    request.phase = Some("post-publication".into());
    let report = pending(&request, &mut |_| {}).await.unwrap();
    assert_eq!((report.has_pending, report.migration_count), (true, 1));
    fixture.tenants_file(&[("a", &ua), ("c", &uc)]);
    let report = pending(&fixture.request(), &mut |_| {}).await.unwrap();
    assert!(!report.has_pending);
    drop_schemas(&client, &[&a, &b, &c]).await;
}

#[tokio::test]
async fn postgres_failures_are_all_reported_and_nothing_is_created() {
    let client = admin().await;
    let (bare, missing) = (unique("bare"), unique("missing"));
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let url_bare = tenant_schema(&client, &bare, None).await;
    let url_missing = url_for(&missing);
    fixture.tenants_file(&[
        ("bare", &url_bare),
        ("missing", &url_missing),
        ("down", "postgres://postgres@127.0.0.1:1/postgres"),
    ]);
    let err = pending(&fixture.request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.tenants(), ["bare", "missing", "down"]);
    let duraq_tenants::Error::Tenants { failures } = &err else {
        panic!("{err:?}")
    };
    let codes: Vec<ErrorCode> = failures.iter().map(|f| f.error.code()).collect();
    assert_eq!(
        codes,
        [
            ErrorCode::TenantLedgerMissing,
            ErrorCode::TenantUnreachable,
            ErrorCode::TenantUnreachable
        ]
    );
    assert_eq!(
        tables(&client, &bare).await,
        ["app_data"],
        "no ledger table was created"
    );
    let exists = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&missing],
        )
        .await
        .unwrap();
    assert!(!exists.get::<_, bool>(0), "no schema was created");
    drop_schemas(&client, &[&bare]).await;
}

#[tokio::test]
async fn postgres_reader_cannot_write() {
    let client = admin().await;
    let schema = unique("ro");
    let url = tenant_schema(&client, &schema, Some(&[1])).await;
    let tenant = duraq_tenants::Tenant {
        name: "ro".into(),
        database: url,
        base_dir: None,
    };
    let TenantDatabase::Postgres {
        config,
        schema: Some(target),
    } = tenant.resolve().unwrap()
    else {
        panic!()
    };
    let reader = PostgresReadOnly::begin("ro", &config, Some(&target))
        .await
        .unwrap();
    let err = reader
        .client()
        .batch_execute("CREATE TABLE sneaky (x int)")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::READ_ONLY_SQL_TRANSACTION));
    assert_eq!(SqlState::READ_ONLY_SQL_TRANSACTION.code(), "25006");
    drop(reader);
    let reader = PostgresReadOnly::begin("ro", &config, Some(&target))
        .await
        .unwrap();
    let err = reader
        .client()
        .execute(
            "INSERT INTO duraq_tenant_migrations VALUES (2, 'x', 0)",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::READ_ONLY_SQL_TRANSACTION));
    drop(reader);
    assert_eq!(
        tables(&client, &schema).await,
        ["app_data", "duraq_tenant_migrations"]
    );
    drop_schemas(&client, &[&schema]).await;
}

#[tokio::test]
async fn postgres_migrate_applies_then_nothing_pending() {
    let client = admin().await;
    let (a, b) = (unique("ma"), unique("mb"));
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let ua = tenant_schema(&client, &a, None).await;
    let ub = tenant_schema(&client, &b, Some(&[1])).await;
    let ub = ub.replace(
        &format!("#{b}"),
        &format!("{}schema={b}", if ub.contains('?') { "&" } else { "?" }),
    );
    fixture.tenants_file(&[("a", &ua), ("b", &ub)]);
    let report = migrate(&fixture.request(), &mut |_| {}).await.unwrap();
    assert_eq!(report.applied_migration_count, 3);
    assert_eq!(
        tables(&client, &a).await,
        ["app_data", "duraq_tenant_migrations", "notes", "tags"]
    );
    let report = pending(&fixture.request(), &mut |_| {}).await.unwrap();
    assert_eq!((report.has_pending, report.tenant_count), (false, 2));
    drop_schemas(&client, &[&a, &b]).await;
}

#[tokio::test]
async fn postgres_migrate_stops_at_the_first_failing_tenant() {
    let client = admin().await;
    let (first, broken, later) = (unique("first"), unique("broken"), unique("later"));
    let fixture = Fixture::new();
    fixture.migrations(&[
        ("1_notes.sql", "-- duraq:databases: projectTenant\nCREATE TABLE notes (id int);\n"),
        ("2_bad.sql", "-- duraq:databases: projectTenant\nCREATE TABLE half (x int);\nINSERT INTO nowhere VALUES (1);\n"),
    ]);
    let u1 = tenant_schema(&client, &first, Some(&[1, 2])).await;
    let u2 = tenant_schema(&client, &broken, None).await;
    let u3 = tenant_schema(&client, &later, None).await;
    fixture.tenants_file(&[("first", &u1), ("broken", &u2), ("later", &u3)]);
    let err = migrate(&fixture.request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantMigrationFailed);
    assert_eq!(err.tenants(), ["broken"]);
    assert_eq!(
        tables(&client, &broken).await,
        ["app_data", "duraq_tenant_migrations", "notes"]
    );
    let rows = client
        .query(
            &format!("SELECT version FROM {broken}.duraq_tenant_migrations"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(
        tables(&client, &later).await,
        ["app_data"],
        "later tenants are untouched"
    );
    drop_schemas(&client, &[&first, &broken, &later]).await;
}

#[tokio::test]
async fn postgres_control_query_lists_tenants() {
    let client = admin().await;
    let control = unique("control");
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {control}; CREATE TABLE {control}.accounts (slug text, db text)"
        ))
        .await
        .unwrap();
    client
        .execute(
            &format!("INSERT INTO {control}.accounts VALUES ('z', 'sqlite:z.db'), ('a', $1)"),
            &[&url_for("x")],
        )
        .await
        .unwrap();
    let source = TenantSource::Query {
        control: url_for(&control),
        query: "SELECT slug, db FROM accounts".into(),
    };
    let tenants = source.list().await.unwrap();
    assert_eq!(
        tenants.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["a", "z"]
    );
    let bad = TenantSource::Query {
        control: url_for(&control),
        query: "SELECT slug FROM accounts".into(),
    };
    assert_eq!(
        bad.list().await.unwrap_err().code(),
        ErrorCode::TenantConfigInvalid
    );
    let request = TenantsRequest::new(ID, bad, duraq_tenants::CatalogSource::JobStore);
    assert_eq!(
        pending(&request, &mut |_| {}).await.unwrap_err().code(),
        ErrorCode::TenantConfigInvalid
    );
    drop_schemas(&client, &[&control]).await;
}

/// A PostgreSQL job store numbers its schema versions on its own: its ledger is
/// compared with the PostgreSQL store's versions, not the SQLite store's.
#[tokio::test]
async fn postgres_job_stores_are_checked_against_their_own_versions() {
    let client = admin().await;
    let (current, behind) = (unique("jsnow"), unique("jsold"));
    let all: Vec<i64> = duraq_store_postgres::SCHEMA_VERSIONS
        .iter()
        .map(|v| v.version)
        .collect();
    let every = all
        .iter()
        .map(|v| format!("({v})"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut urls = Vec::new();
    for (schema, versions) in [(&current, every.as_str()), (&behind, "(1)")] {
        urls.push(tenant_schema(&client, schema, None).await);
        client
            .batch_execute(&format!(
                "CREATE TABLE {schema}.duraq_migrations (scope text NOT NULL, version bigint NOT NULL, \
                 applied_at_ms bigint NOT NULL, PRIMARY KEY (scope, version)); \
                 INSERT INTO {schema}.duraq_migrations SELECT 'duraq.jobs', v, 0 FROM (VALUES {versions}) AS t(v)"
            ))
            .await
            .unwrap();
    }
    let fixture = Fixture::new();
    fixture.tenants_file(&[("current", &urls[0]), ("behind", &urls[1])]);
    let request = TenantsRequest::new(
        ID,
        TenantSource::File(fixture.path("tenants.json")),
        duraq_tenants::CatalogSource::JobStore,
    );
    let report = pending(&request, &mut |_| {}).await.unwrap();
    let by_name = |n: &str| report.tenants.iter().find(|t| t.name == n).unwrap();
    assert_eq!(by_name("current").pending, Vec::<i64>::new());
    assert!(by_name("current").unknown_versions.is_empty());
    assert_eq!(by_name("behind").pending, all[1..].to_vec());
    assert_eq!(report.pending_tenant_count, 1);
    drop_schemas(&client, &[&current, &behind]).await;
}
