//! Reading opens never create (`SECURITY.md`), and every open failure names its file
//! and SQLite's cause.
//!
//! Why these cases: reading commands (`duraq counts`, `jobs list`, …) used to open
//! with `SQLITE_OPEN_CREATE`, so a typo in `--database` left an empty duraq file
//! behind, and opening another application's database switched it to WAL and
//! added duraq's tables. And a text file, a directory and a corrupt file all
//! printed `backend error: sqlite`. Each case checks the error code, the
//! substrings of [`error_chain`] that carry the path and the cause, and the
//! bytes on disk afterwards — never whole message text.

use std::path::Path;

use duraq_core::inspect::error_chain;
use duraq_core::prelude::*;
use duraq_core::{Error, ErrorCode};
use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore};
use rusqlite::Connection;

fn open_existing(path: &Path) -> Result<SqliteStore, Error> {
    SqliteStore::open_existing(path, SqliteOptions::default())
}

/// The names in `dir`, sorted: proves no `-wal`/`-shm` or database file appeared.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_missing_file_is_database_not_found_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let err = open_existing(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
    assert!(error_chain(&err).contains("typo.db"), "{err}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[test]
fn an_empty_file_is_not_a_duraq_database_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let err = open_existing(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
    assert!(error_chain(&err).contains("empty.db"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    assert_eq!(listing(dir.path()), vec!["empty.db"]);
}

#[test]
fn another_applications_database_is_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();

    let err = open_existing(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
    assert!(error_chain(&err).contains("app.db"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "not one byte changed"
    );
    assert_eq!(listing(dir.path()), vec!["app.db"], "no -wal or -shm");
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "no switch to WAL");
}

#[tokio::test]
async fn a_duraq_database_opens_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    migrate(&path).unwrap();
    let store = open_existing(&path).unwrap();
    assert!(store.migration().applied.is_empty());
    assert_eq!(store.count_snapshot().await.unwrap().total, 0);
    assert!(store
        .search_jobs(&Default::default())
        .await
        .unwrap()
        .jobs
        .is_empty());
}

#[test]
fn a_text_file_names_the_file_and_the_cause_in_both_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    for err in [
        open_existing(&path).unwrap_err(),
        SqliteStore::open(&path, SqliteOptions::default()).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::Backend);
        let chain = error_chain(&err);
        assert!(chain.contains("opening SQLite database"), "{chain}");
        assert!(chain.contains("notes.txt"), "{chain}");
        assert!(chain.contains("file is not a database"), "{chain}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(listing(dir.path()), vec!["notes.txt"]);
}

#[test]
fn a_directory_says_it_is_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("data");
    std::fs::create_dir(&sub).unwrap();
    for err in [
        open_existing(&sub).unwrap_err(),
        SqliteStore::open(&sub, SqliteOptions::default()).unwrap_err(),
        migrate(&sub).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::Backend);
        let chain = error_chain(&err);
        assert!(chain.contains("data"), "{chain}");
        assert!(chain.contains("directory"), "{chain}");
    }
}

#[test]
fn a_corrupt_page_is_reported_with_sqlites_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    migrate(&path).unwrap();
    // Checkpoint everything into the main file, then scribble over the schema
    // table's page (page 1, after the 100-byte file header).
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    for byte in &mut bytes[100..4096] {
        *byte = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    for err in [
        open_existing(&path).unwrap_err(),
        SqliteStore::open(&path, SqliteOptions::default()).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::Backend);
        let chain = error_chain(&err);
        assert!(chain.contains("corrupt.db"), "{chain}");
        assert!(chain.contains("malformed"), "{chain}");
    }
}
