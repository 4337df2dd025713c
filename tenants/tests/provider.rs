//! Tenant providers: a JSON or TOML file, a folder of SQLite files, a query on a
//! control database; bad input is `tenant-config-invalid`, a bad URL
//! `tenant-unresolved` (at resolve time, so a preflight lists it with the others).

mod common;

use common::Fixture;
use duraq_tenants::{ErrorCode, TenantDatabase, TenantSource};

async fn list(source: TenantSource) -> duraq_tenants::Result<Vec<(String, String)>> {
    let tenants = source.list().await?;
    Ok(tenants.into_iter().map(|t| (t.name, t.database)).collect())
}

#[tokio::test]
async fn json_file_lists_in_order_and_resolves_relative_paths() {
    let fixture = Fixture::new();
    let file = fixture.tenants_file(&[
        ("zeta", "sqlite:tenants/z.db"),
        ("acme", "sqlite:///abs/a.db"),
    ]);
    let tenants = TenantSource::File(file).list().await.unwrap();
    assert_eq!(
        tenants.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["zeta", "acme"]
    );
    match tenants[0].resolve().unwrap() {
        TenantDatabase::Sqlite(path) => assert_eq!(path, fixture.path("tenants/z.db")),
        other => panic!("{other:?}"),
    }
    match tenants[1].resolve().unwrap() {
        TenantDatabase::Sqlite(path) => assert_eq!(path.to_str(), Some("/abs/a.db")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn toml_file_has_the_same_shape() {
    let fixture = Fixture::new();
    let file = fixture.path("tenants.toml");
    std::fs::write(
        &file,
        "[[tenants]]\nname = \"acme\"\ndatabase = \"sqlite:tenants/acme.db\"\n",
    )
    .unwrap();
    let tenants = list(TenantSource::File(file)).await.unwrap();
    assert_eq!(
        tenants,
        [("acme".to_string(), "sqlite:tenants/acme.db".to_string())]
    );
}

#[tokio::test]
async fn bad_files_are_config_invalid() {
    let fixture = Fixture::new();
    let cases = [
        ("a.json", "{not json"),
        ("b.json", r#"{"tenant":[]}"#),
        ("c.json", r#"{"tenants":[{"name":"a"}]}"#),
        (
            "d.json",
            r#"{"tenants":[{"name":"a","database":"sqlite:a.db","extra":1}]}"#,
        ),
        (
            "e.json",
            r#"{"tenants":[{"name":"a","database":"sqlite:a.db"},{"name":"a","database":"sqlite:b.db"}]}"#,
        ),
        (
            "f.json",
            r#"{"tenants":[{"name":"","database":"sqlite:a.db"}]}"#,
        ),
        ("g.toml", "tenants = 3"),
    ];
    for (name, text) in cases {
        std::fs::write(fixture.path(name), text).unwrap();
        let err = list(TenantSource::File(fixture.path(name)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TenantConfigInvalid, "{name}: {err}");
    }
    let err = list(TenantSource::File(fixture.path("missing.json")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantConfigInvalid);
}

#[tokio::test]
async fn unresolvable_urls_fail_at_resolve() {
    let fixture = Fixture::new();
    let urls = [
        "",
        "  ",
        "mysql://x/y",
        "sqlite:",
        "sqlite::memory:",
        "duraq.db",
        "postgres://h/db?schema=bad-name",
        "postgres://h/db#a?schema=b",
    ];
    let entries: Vec<(String, String)> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (format!("t{i}"), u.to_string()))
        .collect();
    let refs: Vec<(&str, &str)> = entries
        .iter()
        .map(|(n, u)| (n.as_str(), u.as_str()))
        .collect();
    let tenants = TenantSource::File(fixture.tenants_file(&refs))
        .list()
        .await
        .unwrap();
    for tenant in tenants {
        let err = tenant.resolve().unwrap_err();
        assert_eq!(
            err.code(),
            ErrorCode::TenantUnresolved,
            "{:?}",
            tenant.database
        );
        assert_eq!(err.tenants(), [tenant.name.as_str()]);
    }
}

#[tokio::test]
async fn postgres_urls_carry_a_schema() {
    let fixture = Fixture::new();
    let file = fixture.tenants_file(&[
        (
            "q",
            "postgres://u@h:5433/db?schema=tenant_a&application_name=x",
        ),
        ("f", "postgresql://u@h/db#tenant_b"),
        ("n", "postgres://u@h/db"),
    ]);
    let tenants = TenantSource::File(file).list().await.unwrap();
    let schemas: Vec<Option<String>> = tenants
        .iter()
        .map(|t| match t.resolve().unwrap() {
            TenantDatabase::Postgres { config, schema } => {
                assert_eq!(config.get_dbname(), Some("db"));
                schema
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        schemas,
        [Some("tenant_a".into()), Some("tenant_b".into()), None]
    );
}

#[tokio::test]
async fn a_folder_lists_its_db_files_by_stem() {
    let fixture = Fixture::new();
    fixture.tenant_db("beta", None);
    fixture.tenant_db("alpha", None);
    std::fs::write(fixture.path("tenants/notes.txt"), "x").unwrap();
    let tenants = list(TenantSource::Directory(fixture.path("tenants")))
        .await
        .unwrap();
    let names: Vec<&str> = tenants.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    let err = list(TenantSource::Directory(fixture.path("nope")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantConfigInvalid);
}

#[tokio::test]
async fn a_query_on_a_sqlite_control_database() {
    let fixture = Fixture::new();
    let control = fixture.path("control.db");
    let conn = rusqlite::Connection::open(&control).unwrap();
    conn.execute_batch(
        "CREATE TABLE accounts (slug TEXT, db TEXT, active INTEGER);
         INSERT INTO accounts VALUES ('b', 'sqlite:tenants/b.db', 1), ('a', 'sqlite:tenants/a.db', 1), ('c', 'x', 0);",
    )
    .unwrap();
    let before = common::sqlite_master(&control);
    let query = |q: &str| TenantSource::Query {
        control: format!("sqlite:{}", control.display()),
        query: q.into(),
    };
    let tenants = query("SELECT slug, db FROM accounts WHERE active = 1")
        .list()
        .await
        .unwrap();
    assert_eq!(
        tenants.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    match tenants[0].resolve().unwrap() {
        TenantDatabase::Sqlite(path) => assert_eq!(path, fixture.path("tenants/a.db")),
        other => panic!("{other:?}"),
    }
    for bad in [
        "SELECT slug FROM accounts",
        "SELECT nope FROM accounts",
        "SELECT slug, active FROM accounts",
        "CREATE TABLE t (x)",
    ] {
        let err = query(bad).list().await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::TenantConfigInvalid, "{bad}: {err}");
    }
    assert_eq!(
        common::sqlite_master(&control),
        before,
        "the control query wrote nothing"
    );
    let missing = TenantSource::Query {
        control: format!("sqlite:{}", fixture.path("no.db").display()),
        query: "SELECT 1, 2".into(),
    };
    assert_eq!(
        missing.list().await.unwrap_err().code(),
        ErrorCode::TenantProviderUnreachable
    );
    assert!(!fixture.path("no.db").exists());
}
