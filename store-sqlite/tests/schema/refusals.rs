//! Files duraq must not touch: a duraq table whose columns differ from any
//! version's (one extra, one retyped, one missing) or a ledger newer than this
//! binary. Opening and `migrate` both refuse with `SchemaIncompatible`, and the
//! file is left exactly as it was.

use duraq_core::ErrorCode;
use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore};
use rusqlite::Connection;

use crate::support::{execute, schema_dump, temp_db};

fn assert_refused_and_untouched(setup: &str) {
    let (_dir, path) = temp_db("bad.db");
    execute(&path, setup);
    let before = schema_dump(&Connection::open(&path).unwrap());
    let err = SqliteStore::open(&path, SqliteOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SchemaIncompatible);
    assert_eq!(
        migrate(&path).unwrap_err().code(),
        ErrorCode::SchemaIncompatible
    );
    assert_eq!(
        schema_dump(&Connection::open(&path).unwrap()),
        before,
        "file left unchanged"
    );
}

#[test]
fn table_with_an_unexpected_column_is_refused() {
    assert_refused_and_untouched("CREATE TABLE duraq_workers (worker_id TEXT PRIMARY KEY, last_heartbeat_ms INTEGER, extra TEXT);");
}

#[test]
fn table_with_a_wrongly_typed_column_is_refused() {
    assert_refused_and_untouched(
        "CREATE TABLE duraq_counts (name TEXT PRIMARY KEY, value TEXT NOT NULL);",
    );
}

#[test]
fn table_missing_an_original_column_is_refused() {
    assert_refused_and_untouched("CREATE TABLE duraq_workers (worker_id TEXT PRIMARY KEY);");
}

#[test]
fn ledger_newer_than_the_binary_is_refused() {
    assert_refused_and_untouched(
        "CREATE TABLE duraq_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at_ms INTEGER NOT NULL, PRIMARY KEY (scope, version));
         INSERT INTO duraq_migrations VALUES ('duraq.jobs', 99, 1);",
    );
}
