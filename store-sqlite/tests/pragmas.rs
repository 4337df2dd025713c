//! Durability settings are applied and verified on open.

use duraq_core::prelude::*;
use duraq_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use rusqlite::Connection;

#[tokio::test]
async fn default_is_wal_with_synchronous_full() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("q.db"), SqliteOptions::default()).unwrap();
    assert_eq!(store.pragmas().journal_mode, "wal");
    assert_eq!(store.pragmas().synchronous, 2);
    let health = store.health().await.unwrap();
    assert_eq!(health.backend, "sqlite");
    assert!(health.detail.contains("synchronous=FULL"));
    // WAL is a property of the file: a plain connection sees it too.
    let conn = Connection::open(store.path()).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn normal_is_an_explicit_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions::default().synchronous(Synchronous::Normal);
    let store = SqliteStore::open(dir.path().join("q.db"), opts).unwrap();
    assert_eq!(store.pragmas().journal_mode, "wal");
    assert_eq!(store.pragmas().synchronous, 1);
}

#[test]
fn in_memory_path_is_refused_because_wal_cannot_apply() {
    let err = SqliteStore::open(":memory:", SqliteOptions::default()).unwrap_err();
    assert_eq!(err.code(), duraq_core::ErrorCode::Backend);
}

#[test]
fn temporary_store_removes_its_file() {
    let store =
        SqliteStore::open_temporary(SqliteOptions::default(), duraq_core::driver::system_clock())
            .unwrap();
    let path = store.path().to_path_buf();
    assert!(path.exists());
    drop(store);
    assert!(!path.exists());
}
