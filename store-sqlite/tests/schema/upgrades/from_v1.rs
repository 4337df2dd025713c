//! Files written by the first binaries, rebuilt here in their plain SQL:
//! version 1 gains every later column and table with its rows kept (by `open`
//! and by `open_existing`), and version 3 swaps the status-led indexes of
//! versions 1–2 for partial ones.

use duraq_core::prelude::*;
use duraq_core::JobStatus;
use duraq_store_sqlite::SCHEMA_VERSION;
use rusqlite::Connection;

use crate::support::{execute, ledger, open, open_existing, schema_names, temp_db, versions_from};

/// The version-1 schema exactly as an older binary created it, in plain SQL.
const V1_SQL: &str = "
CREATE TABLE duraq_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at_ms INTEGER NOT NULL, PRIMARY KEY (scope, version));
CREATE TABLE duraq_jobs (id TEXT NOT NULL PRIMARY KEY, job_name TEXT NOT NULL, args TEXT NOT NULL, queue TEXT NOT NULL,
  status TEXT NOT NULL, attempts INTEGER NOT NULL, max_retries INTEGER NOT NULL, scheduled_at_ms INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL, handed_off_at_ms INTEGER, completed_at_ms INTEGER, failed_at_ms INTEGER,
  cancelled_at_ms INTEGER, orphaned_at_ms INTEGER, last_error TEXT, worker_id TEXT, handoff_id TEXT,
  concurrency_key TEXT, max_concurrency INTEGER, idempotency_key TEXT, timeout_ms INTEGER,
  args_digest TEXT NOT NULL, reservation_key TEXT);
CREATE TABLE duraq_counts (name TEXT NOT NULL PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE duraq_idempotency (scope_digest TEXT NOT NULL PRIMARY KEY, request_digest TEXT NOT NULL, job_id TEXT NOT NULL, created_at_ms INTEGER NOT NULL);
CREATE TABLE duraq_concurrency (key TEXT NOT NULL PRIMARY KEY, max_concurrency INTEGER, active_count INTEGER NOT NULL);
CREATE TABLE duraq_workers (worker_id TEXT NOT NULL PRIMARY KEY, last_heartbeat_ms INTEGER NOT NULL);
INSERT INTO duraq_migrations VALUES ('duraq.jobs', 1, 1);
INSERT INTO duraq_jobs (id, job_name, args, queue, status, attempts, max_retries, scheduled_at_ms, created_at_ms, args_digest)
  VALUES ('old-1', 'legacy', '[1,2]', 'default', 'queued', 0, 10, 5, 5, 'x');
INSERT INTO duraq_counts VALUES ('queued', 1), ('handed_off', 0), ('completed', 0), ('failed', 0),
  ('cancelled', 0), ('orphaned', 0), ('revision', 1);
";

/// The indexes versions 1–2 created (version 3 replaced four of them).
const V2_INDEXES: &str = "
CREATE INDEX duraq_jobs_due ON duraq_jobs (status, scheduled_at_ms, created_at_ms, id);
CREATE INDEX duraq_jobs_dedupe ON duraq_jobs (job_name, queue, args_digest, status, scheduled_at_ms, created_at_ms, id);
CREATE INDEX duraq_jobs_list ON duraq_jobs (created_at_ms, id);
CREATE INDEX duraq_jobs_terminal ON duraq_jobs (status, COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id);
";

#[tokio::test]
async fn upgrade_from_v1_keeps_rows_and_gains_columns_and_tables() {
    let (_dir, path) = temp_db("v1.db");
    execute(&path, V1_SQL);

    let store = open(&path);
    assert_eq!(store.migration().applied, versions_from(2));
    let job = store.get_job("old-1").await.unwrap().expect("old row kept");
    assert_eq!(
        (job.job_name.as_str(), job.status, job.schedule_key),
        ("legacy", JobStatus::Queued, None)
    );
    assert_eq!(job.errors, [], "an old row reads an empty error history");
    let snapshot = store.count_snapshot().await.unwrap();
    assert_eq!((snapshot.counts.queued, snapshot.revision), (1, 1));
    let queues = store.queue_snapshot().await.unwrap();
    assert_eq!(queues.revision, 1);
    assert_eq!(queues.queues.len(), 1);
    assert_eq!(
        (
            queues.queues[0].queue.as_str(),
            queues.queues[0].counts.queued
        ),
        ("default", 1),
        "the per-queue counters were filled from the old rows"
    );
    assert_eq!(store.health().await.unwrap().schema_version, SCHEMA_VERSION);

    let conn = Connection::open(&path).unwrap();
    assert_eq!(ledger(&conn), versions_from(1));
    let tables = schema_names(&conn);
    for table in [
        "duraq_schedule_keys",
        "duraq_schedule_high_water",
        "duraq_operations",
        "duraq_paused_queues",
    ] {
        assert!(tables.iter().any(|t| t == table), "{table} created");
    }
    let has_column: bool = conn
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('duraq_jobs') WHERE name = 'schedule_order'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n == 1)
        .unwrap();
    assert!(has_column);
}

#[tokio::test]
async fn open_existing_upgrades_an_older_duraq_file() {
    let (_dir, path) = temp_db("v1.db");
    execute(&path, V1_SQL);
    let store = open_existing(&path);
    assert_eq!(store.migration().applied, versions_from(2));
    assert!(store.get_job("old-1").await.unwrap().is_some());
}

#[tokio::test]
async fn upgrade_to_v3_swaps_status_led_indexes_for_partial_ones_and_keeps_rows() {
    let (_dir, path) = temp_db("v2.db");
    execute(&path, V1_SQL);
    execute(&path, V2_INDEXES);

    let store = open(&path);
    assert_eq!(store.migration().applied, versions_from(2));
    let names = schema_names(&Connection::open(&path).unwrap());
    for retired in [
        "duraq_jobs_due",
        "duraq_jobs_dedupe",
        "duraq_jobs_terminal",
        "duraq_jobs_queued",
    ] {
        assert!(!names.iter().any(|n| n == retired), "{retired} dropped");
    }
    for partial in [
        "duraq_jobs_claim_plain",
        "duraq_jobs_dedupe_key",
        "duraq_jobs_running",
        "duraq_jobs_completed",
    ] {
        assert!(names.iter().any(|n| n == partial), "{partial} created");
    }
    assert!(
        names.iter().any(|n| n == "duraq_jobs_list"),
        "list index kept"
    );
    let job = store.get_job("old-1").await.unwrap().expect("old row kept");
    assert_eq!(job.status, JobStatus::Queued);
    assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
}
