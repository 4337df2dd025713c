//! Tenant errors name their cause and never a password (`SECURITY.md`): the message
//! (`to_string()`, which is also the whole `source()` chain, so the CLI's
//! `error_chain` prints the same) says which server or file, and why.
//!
//! Needs `DATABASE_URL` for the PostgreSQL cases, like `tests/postgres.rs`.

mod common;

use common::pg::{admin, drop_schemas, tenant_schema, unique};
use common::{Fixture, STANDARD};
use duraq_tenants::{migrate, pending, CatalogSource, Error, ErrorCode, TenantSource};

/// The failure of the only tenant of a preflight.
fn only_failure(err: Error) -> Error {
    match err {
        Error::Tenants { mut failures } if failures.len() == 1 => failures.remove(0).error,
        other => panic!("{other:?}"),
    }
}

/// What any printer shows: the message and every source below it.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        out.push_str(&format!(": {cause}"));
        next = cause.source();
    }
    out
}

#[tokio::test]
async fn an_unreachable_postgres_tenant_names_the_server_and_the_refusal() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenants_file(&[("acme", "postgres://u:secret@127.0.0.1:9/x")]);
    let err = pending(&fixture.request(), &mut |_| {}).await.unwrap_err();
    let whole = err.to_string();
    assert!(whole.contains("acme"), "{whole}");
    let err = only_failure(err);
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    let message = err.to_string();
    assert_eq!(chain(&err), message, "the message is the whole chain");
    assert!(message.contains("127.0.0.1:9"), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
    for text in [&message, &whole, &format!("{err:?}")] {
        assert!(!text.contains("secret"), "{text}");
    }
    assert!(!format!("{:?}", fixture.request()).contains("secret"));
    let tenants = TenantSource::File(fixture.path("tenants.json"));
    let listed = tenants.list().await.unwrap();
    assert!(!format!("{listed:?}").contains("secret"));
}

#[tokio::test]
async fn a_sqlite_tenant_that_is_not_a_database_says_so() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    std::fs::write(
        fixture.path("tenants/junk.db"),
        "plain text, long enough to hold a SQLite header and then some more",
    )
    .unwrap();
    fixture.tenants_file(&[("junk", "sqlite:tenants/junk.db")]);
    let err = only_failure(pending(&fixture.request(), &mut |_| {}).await.unwrap_err());
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    let message = err.to_string();
    assert!(message.contains("junk.db"), "{message}");
    assert!(message.contains("file is not a database"), "{message}");
    assert_eq!(chain(&err), message);
    // A missing file: the OS's reason, and still nothing created.
    fixture.tenants_file(&[("ghost", "sqlite:tenants/ghost.db")]);
    let err = only_failure(pending(&fixture.request(), &mut |_| {}).await.unwrap_err());
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    assert!(err.to_string().contains("No such file"), "{err}");
    assert!(!fixture.path("tenants/ghost.db").exists());
}

#[tokio::test]
async fn postgres_server_errors_carry_the_servers_message() {
    let client = admin().await;
    let (bare, odd, broken) = (unique("bare"), unique("odd"), unique("broken"));
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let url_bare = tenant_schema(&client, &bare, None).await;
    fixture.tenants_file(&[("bare", &url_bare)]);
    let err = only_failure(pending(&fixture.request(), &mut |_| {}).await.unwrap_err());
    assert_eq!(err.code(), ErrorCode::TenantLedgerMissing);
    assert!(err.to_string().contains("duraq_tenant_migrations"), "{err}");

    // A job-store ledger without its scope column: the server's own words.
    let url_odd = tenant_schema(&client, &odd, None).await;
    let create = format!("CREATE TABLE {odd}.duraq_migrations (version bigint)");
    client.batch_execute(&create).await.unwrap();
    fixture.tenants_file(&[("odd", &url_odd)]);
    let mut request = fixture.request();
    request.migrations = CatalogSource::JobStore;
    let err = only_failure(pending(&request, &mut |_| {}).await.unwrap_err());
    assert_eq!(err.code(), ErrorCode::Backend);
    let message = err.to_string();
    assert!(
        message.contains(r#"column "scope" does not exist"#),
        "{message}"
    );
    assert!(
        message.contains("42703") && !message.contains("db error"),
        "{message}"
    );

    // A migration that fails on the server.
    fixture.migrations(&[(
        "4_bad.sql",
        "-- duraq:databases: projectTenant\nINSERT INTO nowhere VALUES (1);\n",
    )]);
    let url_broken = tenant_schema(&client, &broken, Some(&[1, 2])).await;
    fixture.tenants_file(&[("broken", &url_broken)]);
    let err = migrate(&fixture.request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantMigrationFailed);
    let message = err.to_string();
    assert!(
        message.contains(r#"relation "nowhere" does not exist"#),
        "{message}"
    );
    assert!(message.contains("(bad)"), "{message}");
    drop_schemas(&client, &[&bare, &odd, &broken]).await;
}

#[tokio::test]
async fn bad_urls_and_control_databases_name_the_cause_without_the_password() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    fixture.tenants_file(&[("acme", "postgres://u:secret@h:notaport/db")]);
    let err = only_failure(pending(&fixture.request(), &mut |_| {}).await.unwrap_err());
    assert_eq!(err.code(), ErrorCode::TenantUnresolved);
    let message = err.to_string();
    assert!(
        message.contains("port") && message.contains("u:***@h"),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");

    let source = TenantSource::Query {
        control: "postgres://u:secret@127.0.0.1:9/control".into(),
        query: "SELECT 1, 2".into(),
    };
    let err = source.list().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantProviderUnreachable);
    let message = err.to_string();
    assert!(message.contains("127.0.0.1:9"), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(!message.contains("secret") && !format!("{source:?}").contains("secret"));

    std::fs::write(
        fixture.path("control.db"),
        "not a database, only some text here",
    )
    .unwrap();
    let source = TenantSource::Query {
        control: format!("sqlite:{}", fixture.path("control.db").display()),
        query: "SELECT slug, db FROM accounts".into(),
    };
    let err = source.list().await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantProviderUnreachable, "{err}");
    assert!(err.to_string().contains("file is not a database"), "{err}");
}
