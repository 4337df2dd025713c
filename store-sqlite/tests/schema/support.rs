//! Setup the schema tests repeat, written once: a file in a temporary
//! directory, opening it, rewinding today's schema to an older one, and
//! reading back what SQLite holds (the ledger, the schema, rowids that show a
//! table was not rebuilt, query plans).

use std::path::{Path, PathBuf};

use duraq_core::driver::ClaimRequest;
use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, NewJob};
use duraq_store_sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;
use tempfile::TempDir;

/// A path named `name` in a new temporary directory; keep the directory
/// alive for as long as the file is used.
pub fn temp_db(name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

/// `SqliteStore::open` with the default options.
pub fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, SqliteOptions::default()).unwrap()
}

/// `SqliteStore::open_existing` with the default options.
pub fn open_existing(path: &Path) -> SqliteStore {
    SqliteStore::open_existing(path, SqliteOptions::default()).unwrap()
}

/// Runs `sql` on `path` outside the store: building an older schema by hand
/// or rewinding today's to an older one.
pub fn execute(path: &Path, sql: &str) {
    Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

/// Every schema version from `first` up to this binary's.
pub fn versions_from(first: i64) -> Vec<i64> {
    (first..=SCHEMA_VERSION).collect()
}

/// Enqueues one job and returns its id.
pub async fn enqueue(
    store: &SqliteStore,
    name: &str,
    args: serde_json::Value,
    opts: EnqueueOptions,
) -> String {
    let job = NewJob::new(name, args, opts).unwrap();
    store.enqueue(job).await.unwrap().job_id().to_owned()
}

/// A claim of at most `limit` jobs named `job_names`, from every queue.
pub fn claim_request(worker: &str, job_names: &[&str], limit: usize) -> ClaimRequest {
    ClaimRequest {
        worker_id: worker.into(),
        job_names: job_names.iter().map(|&n| n.into()).collect(),
        limit,
        ..ClaimRequest::default()
    }
}

/// Every object in the file (tables, indexes), by name, with its SQL.
pub fn schema_dump(conn: &Connection) -> Vec<(String, Option<String>)> {
    let mut stmt = conn
        .prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// The names of every object in the file.
pub fn schema_names(conn: &Connection) -> Vec<String> {
    schema_dump(conn).into_iter().map(|(n, _)| n).collect()
}

/// The versions the migration ledger records, in order.
pub fn ledger(conn: &Connection) -> Vec<i64> {
    let mut stmt = conn
        .prepare("SELECT version FROM duraq_migrations ORDER BY version")
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// SQLite's plan for `sql`, its steps joined by `; `.
pub fn query_plan(conn: &Connection, sql: &str) -> String {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
    rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ")
}

/// Every job row's rowid and id: unchanged across an upgrade when the table
/// was altered in place, not rebuilt.
pub fn job_rowids(conn: &Connection) -> Vec<(i64, String)> {
    let mut stmt = conn
        .prepare("SELECT rowid, id FROM duraq_jobs ORDER BY rowid")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// The rowid of job `id`.
pub fn job_rowid(conn: &Connection, id: &str) -> i64 {
    conn.query_row("SELECT rowid FROM duraq_jobs WHERE id = ?1", [id], |r| {
        r.get(0)
    })
    .unwrap()
}

/// The rowid of `queue`'s counter row.
pub fn queue_counts_rowid(conn: &Connection, queue: &str) -> i64 {
    conn.query_row(
        "SELECT rowid FROM duraq_queue_counts WHERE queue = ?1",
        [queue],
        |r| r.get(0),
    )
    .unwrap()
}

/// Takes a file back to the shape version 6 created: no priorities, rate limits
/// or worker registrations, `duraq_jobs_queued` in place of the claim index.
pub fn back_to_v6(conn: &Connection) {
    crate::common::back_to_v7(conn);
    conn.execute_batch(
        "ALTER TABLE duraq_workers DROP COLUMN host; ALTER TABLE duraq_workers DROP COLUMN pid; \
         ALTER TABLE duraq_workers DROP COLUMN queues; ALTER TABLE duraq_workers DROP COLUMN job_names; \
         ALTER TABLE duraq_workers DROP COLUMN slots; ALTER TABLE duraq_workers DROP COLUMN started_at_ms; \
         DROP INDEX duraq_jobs_claim_plain; DROP INDEX duraq_jobs_fair; \
         DROP INDEX duraq_rate_starts_key; \
         DROP TABLE duraq_rate_limits; DROP TABLE duraq_rate_starts; \
         ALTER TABLE duraq_jobs DROP COLUMN priority; ALTER TABLE duraq_jobs DROP COLUMN rate_key; \
         ALTER TABLE duraq_jobs DROP COLUMN rate_max; ALTER TABLE duraq_jobs DROP COLUMN rate_period_ms; \
         CREATE INDEX duraq_jobs_queued ON duraq_jobs (scheduled_at_ms, created_at_ms, id) \
         WHERE status = 'queued'; DELETE FROM duraq_migrations WHERE version = 7",
    )
    .unwrap();
}
