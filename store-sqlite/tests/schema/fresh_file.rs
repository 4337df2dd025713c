//! A new file: opening or `migrate` applies every version once and records
//! each in the ledger (also when several processes race to create it), a
//! second open applies nothing, and tables of the application sharing the
//! file are left alone.

use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

use crate::support::{execute, ledger, open, schema_dump, temp_db, versions_from};

#[test]
fn fresh_file_records_every_version_and_reopen_applies_nothing() {
    let (_dir, path) = temp_db("q.db");
    let report = migrate(&path).unwrap();
    assert_eq!(report.applied, versions_from(1));
    assert_eq!(report.version, SCHEMA_VERSION);
    let again = migrate(&path).unwrap();
    assert!(again.applied.is_empty());
    let store = open(&path);
    assert!(store.migration().applied.is_empty());
    assert_eq!(ledger(&Connection::open(&path).unwrap()), versions_from(1));
}

#[test]
fn application_tables_in_the_same_file_are_left_alone() {
    let (_dir, path) = temp_db("app.db");
    execute(&path, "CREATE TABLE orders (id INTEGER PRIMARY KEY);");
    open(&path);
    let conn = Connection::open(&path).unwrap();
    assert!(schema_dump(&conn).iter().any(|(n, _)| n == "orders"));
}

#[test]
fn concurrent_openers_of_a_new_file_apply_each_version_once() {
    let (_dir, path) = temp_db("race.db");
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                SqliteStore::open(&path, SqliteOptions::default())
                    .map(|s| s.migration().applied.clone())
            })
        })
        .collect();
    let mut applied: Vec<i64> = Vec::new();
    for thread in threads {
        applied.extend(thread.join().unwrap().expect("every opener succeeds"));
    }
    applied.sort();
    assert_eq!(applied, versions_from(1));
    assert_eq!(ledger(&Connection::open(&path).unwrap()), versions_from(1));
}
