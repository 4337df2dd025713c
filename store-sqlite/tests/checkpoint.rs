//! WAL checkpoints between batches: under bulk writes the WAL does not grow
//! without bound (the writer's backstop lets it restart) and a store that
//! started its checkpointer thread still closes cleanly; under small commits the
//! writer checkpoints itself every 1,000 frames, so the WAL restarts at about
//! that size, as with SQLite's own auto-checkpoint.

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

/// The most frames the WAL file has held: SQLite never truncates it here (no
/// `journal_size_limit`), it only restarts writing from its beginning.
fn wal_extent_frames(path: &std::path::Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let len = std::fs::metadata(wal).unwrap().len();
    (len.saturating_sub(32)) / (4096 + 24)
}

/// A store on a new file in a temporary directory (kept alive by the first value).
fn fresh_store() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wal.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    (dir, path, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steady_writes_keep_the_wal_bounded_and_close_cleanly() {
    let (_dir, path, store) = fresh_store();
    // About 2 KiB per job: some 1,100 WAL frames a batch, 19,000 in all, far
    // more than the writer's backstop (4,000 frames).
    let padding = "x".repeat(2048);
    for batch in 0..18 {
        let jobs = (0..1000)
            .map(|i| NewJob::new("pad", json!([batch, i, padding]), EnqueueOptions::new()))
            .collect::<duraq_core::Result<Vec<_>>>()
            .unwrap();
        store.enqueue_batch(jobs).await.unwrap();
    }
    let frames = wal_extent_frames(&path);
    assert!(
        frames < 8_000,
        "the WAL restarted on the way (it reached {frames} frames, some 19,000 written)"
    );
    assert_eq!(store.count_snapshot().await.unwrap().total, 18_000);
    store.close().await.unwrap();
    // Every job is there after close, read through a fresh connection.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM duraq_jobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 18_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_commits_restart_the_wal_every_thousand_frames() {
    let (_dir, path, store) = fresh_store();
    // One job per commit, a few frames each: several thousand frames in all.
    for i in 0..1500 {
        let job = NewJob::new("small", json!([i]), EnqueueOptions::new()).unwrap();
        store.enqueue(job).await.unwrap();
    }
    let frames = wal_extent_frames(&path);
    assert!(
        frames < 2_000,
        "the WAL grew to {frames} frames: small commits were not checkpointed at 1,000"
    );
    assert_eq!(store.count_snapshot().await.unwrap().total, 1500);
    store.close().await.unwrap();
}
