//! Migration catalogs: selection by identifier and phase, and refusal of anything
//! malformed (`migration-catalog-invalid`, naming the file).

mod common;

use common::{Fixture, ID, STANDARD};
use duraq_tenants::{Catalog, Error, ErrorCode, Ledger};

fn load(files: &[(&str, &str)]) -> Result<Catalog, Error> {
    let fixture = Fixture::new();
    Catalog::load_dir(&fixture.migrations(files))
}

fn refused(files: &[(&str, &str)], file: &str) {
    let err = load(files).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::MigrationCatalogInvalid,
        "{files:?}: {err}"
    );
    match err {
        Error::CatalogInvalid { file: path, .. } => {
            assert_eq!(path.file_name().unwrap(), file, "the error names the file")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn selects_by_identifier_and_defaults_to_default() {
    let catalog = load(STANDARD).unwrap();
    assert_eq!(catalog.ledger(), Ledger::Tenant);
    assert_eq!(catalog.select(ID, None).versions(), vec![1, 2]);
    assert_eq!(catalog.select("other", None).versions(), vec![2]);
    assert_eq!(catalog.select("default", None).versions(), vec![3]);
    assert!(catalog.select("nobody", None).is_empty());
    let selected = catalog.select(ID, None);
    let tags = &selected.migrations()[1];
    assert_eq!(tags.name, "add_tags");
    assert_eq!(
        tags.databases,
        vec!["projectTenant".to_string(), "other".to_string()]
    );
    assert_eq!(tags.phase.as_deref(), Some("post-publication"));
}

#[test]
fn phase_filter_keeps_only_that_phase() {
    let catalog = load(STANDARD).unwrap();
    assert_eq!(
        catalog.select(ID, Some("post-publication")).versions(),
        vec![2]
    );
    assert!(catalog.select(ID, Some("pre-publication")).is_empty());
    // Selection never forgets what the folder holds: every version stays known.
    let selected = catalog.select(ID, Some("post-publication"));
    assert!(selected.knows(1) && selected.knows(3) && !selected.knows(4));
}

#[test]
fn ignores_non_sql_files_and_dotfiles() {
    let catalog = load(&[
        ("README.md", "notes"),
        (".1_hidden.sql", "x"),
        ("7_ok.sql", "SELECT 1;"),
    ])
    .unwrap();
    assert_eq!(catalog.versions(), vec![7]);
}

#[test]
fn duplicate_versions_are_refused() {
    let err = load(&[("1_a.sql", "SELECT 1;"), ("001_b.sql", "SELECT 1;")]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::MigrationCatalogInvalid);
    let message = err.to_string();
    assert!(
        message.contains("1_a.sql") && message.contains("001_b.sql"),
        "{message}"
    );
}

#[test]
fn bad_file_names_are_refused() {
    for name in [
        "abc_x.sql",
        "12.sql",
        "12_.sql",
        "_x.sql",
        "1a_x.sql",
        "99999999999999999999_x.sql",
    ] {
        refused(&[(name, "SELECT 1;")], name);
    }
}

#[test]
fn malformed_headers_are_refused() {
    let cases = [
        "-- duraq:database: projectTenant\nSELECT 1;",
        "-- duraq:databases:\nSELECT 1;",
        "-- duraq:databases: a,,b\nSELECT 1;",
        "-- duraq:databases a\nSELECT 1;",
        "-- duraq:phase:\nSELECT 1;",
        "-- duraq:phase: two words\nSELECT 1;",
        "-- duraq:databases: a\n-- duraq:databases: b\nSELECT 1;",
        "SELECT 1;\n-- duraq:databases: a\n",
    ];
    for text in cases {
        refused(&[("5_bad.sql", text)], "5_bad.sql");
    }
}

#[test]
fn a_missing_folder_is_refused() {
    let fixture = Fixture::new();
    let err = Catalog::load_dir(&fixture.path("nope")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::MigrationCatalogInvalid);
}

#[test]
fn the_job_store_schema_is_a_catalog() {
    let catalog = Catalog::job_store();
    assert_eq!(catalog.ledger(), Ledger::JobStore);
    let expected: Vec<i64> = duraq_store_sqlite::SCHEMA_VERSIONS
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(catalog.select("anything", None).versions(), expected);
    assert!(catalog
        .select("anything", Some("post-publication"))
        .is_empty());
}
