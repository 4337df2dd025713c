//! Schema versions, upgrades and refusals on real files.

use duraq_core::prelude::*;
use duraq_core::{ErrorCode, JobStatus};
use duraq_store_sqlite::{migrate, SqliteOptions, SqliteStore, SCHEMA_VERSION};
use rusqlite::Connection;

mod common;

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

fn schema_dump(conn: &Connection) -> Vec<(String, Option<String>)> {
    let mut stmt = conn
        .prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn ledger(conn: &Connection) -> Vec<i64> {
    let mut stmt = conn
        .prepare("SELECT version FROM duraq_migrations ORDER BY version")
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn fresh_file_records_every_version_and_reopen_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let report = migrate(&path).unwrap();
    assert_eq!(report.applied, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    assert_eq!(report.version, SCHEMA_VERSION);
    let again = migrate(&path).unwrap();
    assert!(again.applied.is_empty());
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(store.migration().applied.is_empty());
    assert_eq!(
        ledger(&Connection::open(&path).unwrap()),
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn upgrade_from_v1_keeps_rows_and_gains_columns_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V1_SQL)
        .unwrap();

    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (2..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
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
    assert_eq!(ledger(&conn), (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    let tables: Vec<String> = schema_dump(&conn).into_iter().map(|(n, _)| n).collect();
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

/// The indexes versions 1–2 created (version 3 replaced four of them).
const V2_INDEXES: &str = "
CREATE INDEX duraq_jobs_due ON duraq_jobs (status, scheduled_at_ms, created_at_ms, id);
CREATE INDEX duraq_jobs_dedupe ON duraq_jobs (job_name, queue, args_digest, status, scheduled_at_ms, created_at_ms, id);
CREATE INDEX duraq_jobs_list ON duraq_jobs (created_at_ms, id);
CREATE INDEX duraq_jobs_terminal ON duraq_jobs (status, COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id);
";

#[tokio::test]
async fn upgrade_to_v3_swaps_status_led_indexes_for_partial_ones_and_keeps_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(V1_SQL).unwrap();
    conn.execute_batch(V2_INDEXES).unwrap();
    drop(conn);

    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (2..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let names: Vec<String> = schema_dump(&Connection::open(&path).unwrap())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for retired in [
        "duraq_jobs_due",
        "duraq_jobs_dedupe",
        "duraq_jobs_terminal",
        "duraq_jobs_queued",
    ] {
        assert!(!names.iter().any(|n| n == retired), "{retired} dropped");
    }
    for partial in [
        "duraq_jobs_claim",
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

/// The hot statements must read their partial index whatever the statistics say
/// (SQLite plans without ANALYZE data here; a plan change would turn a claim into
/// a table scan).
#[test]
fn hot_queries_use_the_partial_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    migrate(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ")
    };
    // Both claim shapes as the store runs them, paused queues excluded by a
    // `NOT IN` over the small paused table: evaluated once per statement (a list
    // subquery), never per job, and the due-order walk stays sort-free.
    let claim = plan(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_claim WHERE status = 'queued' \
         AND priority = 0 AND scheduled_at_ms <= 5 AND job_name IN (SELECT value FROM json_each('[\"a\"]')) \
         AND queue NOT IN (SELECT value FROM json_each('[]')) \
         AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
         AND (scheduled_at_ms, created_at_ms, id) > (0, 0, '') \
         ORDER BY scheduled_at_ms, created_at_ms, id LIMIT 10",
    );
    assert!(
        claim.contains("duraq_jobs_claim") && !claim.contains("TEMP B-TREE"),
        "claim plan: {claim}"
    );
    assert!(
        claim.contains("LIST SUBQUERY") && !claim.contains("CORRELATED"),
        "the paused check is one list subquery per statement: {claim}"
    );
    assert!(
        !claim.contains("SCAN duraq_jobs "),
        "claim plan scans the table: {claim}"
    );
    // A claim naming its queues, as the store runs it: still in due order.
    let claim_in = plan(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_claim WHERE status = 'queued' \
         AND priority = 0 AND scheduled_at_ms <= 5 AND job_name IN (SELECT value FROM json_each('[\"a\"]')) \
         AND queue IN (SELECT value FROM json_each('[\"q\"]')) \
         AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
         AND (scheduled_at_ms, created_at_ms, id) > (0, 0, '') \
         ORDER BY scheduled_at_ms, created_at_ms, id LIMIT 10",
    );
    assert!(
        claim_in.contains("duraq_jobs_claim") && !claim_in.contains("TEMP B-TREE"),
        "claim plan: {claim_in}"
    );
    assert!(!claim_in.contains("CORRELATED"), "claim plan: {claim_in}");
    // The worker's timer query skips paused queues the same way.
    let timer = plan(
        "SELECT scheduled_at_ms FROM duraq_jobs INDEXED BY duraq_jobs_claim \
         WHERE status = 'queued' AND priority = 0 AND job_name IN (SELECT value FROM json_each('[\"a\"]')) \
         AND (NULL IS NULL OR queue IN (SELECT value FROM json_each(NULL))) \
         AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
         ORDER BY scheduled_at_ms LIMIT 1",
    );
    assert!(
        timer.contains("duraq_jobs_claim") && !timer.contains("CORRELATED"),
        "timer plan: {timer}"
    );
    // Queue latency: one index entry per queue.
    let latency = plan(
        "SELECT j.scheduled_at_ms FROM duraq_jobs AS j INDEXED BY duraq_jobs_queue_due \
         WHERE j.status = 'queued' AND j.queue = 'q' ORDER BY j.scheduled_at_ms LIMIT 1",
    );
    assert!(
        latency.contains("duraq_jobs_queue_due") && !latency.contains("TEMP B-TREE"),
        "latency plan: {latency}"
    );
    let dedupe = plan(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_dedupe_key \
         WHERE dedupe_key = 'abc' AND status = 'queued' \
         AND job_name = 'a' AND queue = 'q' AND args_digest = 'abc' AND scheduled_at_ms <= 5 \
         ORDER BY scheduled_at_ms, created_at_ms, id LIMIT 1",
    );
    assert!(
        dedupe.contains("duraq_jobs_dedupe_key"),
        "dedupe plan: {dedupe}"
    );
    let prune = plan(
        "SELECT id FROM duraq_jobs WHERE status = 'completed' AND \
         COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms) < 5 \
         ORDER BY COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id LIMIT 10",
    );
    assert!(
        prune.contains("duraq_jobs_completed"),
        "prune plan: {prune}"
    );
    let stale = plan(
        "SELECT id FROM duraq_jobs AS j WHERE status = 'handed_off' AND NOT EXISTS \
         (SELECT 1 FROM duraq_workers AS w WHERE w.worker_id = j.worker_id AND w.last_heartbeat_ms >= 5)",
    );
    assert!(
        stale.contains("duraq_jobs_running"),
        "recovery plan: {stale}"
    );
}

fn assert_refused_and_untouched(setup: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(setup)
        .unwrap();
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

#[test]
fn application_tables_in_the_same_file_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY);")
        .unwrap();
    SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let conn = Connection::open(&path).unwrap();
    assert!(schema_dump(&conn).iter().any(|(n, _)| n == "orders"));
}

#[test]
fn concurrent_openers_of_a_new_file_apply_each_version_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
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
    assert_eq!(applied, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    assert_eq!(
        ledger(&Connection::open(&path).unwrap()),
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn open_existing_upgrades_an_older_duraq_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V1_SQL)
        .unwrap();
    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (2..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert!(store.get_job("old-1").await.unwrap().is_some());
}

/// A version-3 file (today's schema before counts per queue) with jobs in several
/// queues and statuses is upgraded in place: the per-queue counters are filled
/// from the jobs once, and later mutations keep them exact.
#[tokio::test]
async fn upgrade_to_v4_backfills_counts_per_queue() {
    use duraq_core::{ClaimRequest, EnqueueOptions, NewJob, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let enqueue = |queue: &'static str| {
        let store = store.clone();
        async move {
            let opts = EnqueueOptions::new().queue(queue);
            store
                .enqueue(NewJob::new("j", serde_json::json!([queue]), opts).unwrap())
                .await
                .unwrap();
        }
    };
    for queue in ["mail", "mail", "mail", "video"] {
        enqueue(queue).await;
    }
    let claim = ClaimRequest {
        worker_id: "w".into(),
        job_names: vec!["j".into()],
        queues: Some(vec!["mail".into()]),
        limit: 2,
        ..ClaimRequest::default()
    };
    let claimed = store.claim(&claim).await.unwrap();
    assert_eq!(claimed.len(), 2);
    assert_eq!(
        store
            .report_batch(vec![(claimed[0].lease().unwrap(), Outcome::Completed)])
            .await
            .unwrap(),
        [true]
    );
    let before = store.queue_snapshot().await.unwrap();
    drop(store);
    // Back to the shape version 3 created.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE duraq_queue_counts; DROP INDEX duraq_jobs_queue_due; \
             DELETE FROM duraq_migrations WHERE version = 4",
        )
        .unwrap();

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![4]);
    let after = store.queue_snapshot().await.unwrap();
    assert_eq!(
        (after.revision, &after.counts, counts_of(&after)),
        (before.revision, &before.counts, counts_of(&before)),
        "backfilled counts equal the ones kept live (latency moves with the clock)"
    );
    let mail = after.queue("mail").unwrap().counts;
    assert_eq!(
        (mail.queued, mail.handed_off, mail.completed, mail.all),
        (1, 1, 1, 3)
    );
    assert_eq!(after.queue("video").unwrap().counts.queued, 1);
    // Kept in step from here on.
    store
        .report_batch(vec![(claimed[1].lease().unwrap(), Outcome::Completed)])
        .await
        .unwrap();
    let mail = store
        .queue_snapshot()
        .await
        .unwrap()
        .queue("mail")
        .unwrap()
        .counts;
    assert_eq!((mail.handed_off, mail.completed), (0, 2));
}

fn counts_of(snap: &duraq_core::QueueSnapshot) -> Vec<(String, duraq_core::StatusCounts)> {
    snap.queues
        .iter()
        .map(|q| (q.queue.clone(), q.counts))
        .collect()
}

/// A version-4 file (counts per queue, no paused queues) with queued jobs is
/// upgraded in place: the paused-queue table is created empty, every job stays
/// claimable, and pausing then works and survives reopening.
#[tokio::test]
async fn upgrade_to_v5_adds_paused_queues() {
    use duraq_core::{ClaimRequest, EnqueueOptions, NewJob, QueueName};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    for queue in ["mail", "video"] {
        let opts = EnqueueOptions::new().queue(queue);
        store
            .enqueue(NewJob::new("j", serde_json::json!([queue]), opts).unwrap())
            .await
            .unwrap();
    }
    drop(store);
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE duraq_paused_queues; ALTER TABLE duraq_jobs DROP COLUMN errors; \
             DELETE FROM duraq_migrations WHERE version >= 5",
        )
        .unwrap();

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.migration().applied,
        (5..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(store.health().await.unwrap().schema_version, SCHEMA_VERSION);
    let snap = store.queue_snapshot().await.unwrap();
    assert!(snap.queues.iter().all(|q| !q.paused), "{snap:?}");
    let mail = QueueName::new("mail").unwrap();
    assert!(store.pause_queue(&mail).await.unwrap());
    drop(store);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert!(store.migration().applied.is_empty());
    assert!(
        store
            .queue_snapshot()
            .await
            .unwrap()
            .queue("mail")
            .unwrap()
            .paused
    );
    let claim = ClaimRequest {
        worker_id: "w".into(),
        job_names: vec!["j".into()],
        limit: 10,
        ..ClaimRequest::default()
    };
    let claimed = store.claim(&claim).await.unwrap();
    assert_eq!(
        claimed.iter().map(|j| j.queue.as_str()).collect::<Vec<_>>(),
        ["video"],
        "the pause survived reopening"
    );
}

/// A version-5 file (today's before the error history) with a failed job and a
/// queued one is upgraded in place: `errors` is added with its default (no table
/// rebuild: the table's other columns and rows are untouched), old rows read an
/// empty history, and new failures append to it.
#[tokio::test]
async fn upgrade_to_v6_adds_the_error_history_in_place() {
    use duraq_core::{ClaimRequest, EnqueueOptions, NewJob, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let mut ids = Vec::new();
    for n in 0..2 {
        let opts = EnqueueOptions::new().max_retries(0);
        let job = NewJob::new("j", serde_json::json!([n]), opts).unwrap();
        ids.push(store.enqueue(job).await.unwrap().job_id().to_owned());
    }
    let claim = |worker: &str| ClaimRequest {
        worker_id: worker.into(),
        job_names: vec!["j".into()],
        limit: 1,
        ..ClaimRequest::default()
    };
    let first = store.claim(&claim("w1")).await.unwrap().remove(0);
    assert_eq!(
        store
            .report_batch(vec![(first.lease().unwrap(), Outcome::failed("before"))])
            .await
            .unwrap(),
        [true]
    );
    drop(store);
    // Back to the shape version 5 created.
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    conn.execute_batch(
        "ALTER TABLE duraq_jobs DROP COLUMN errors; DELETE FROM duraq_migrations WHERE version = 6",
    )
    .unwrap();
    let rowids = |conn: &Connection| -> Vec<(i64, String)> {
        let mut stmt = conn
            .prepare("SELECT rowid, id FROM duraq_jobs ORDER BY rowid")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let before = rowids(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![6, 7, 8]);
    let old = store.get_job(&ids[0]).await.unwrap().unwrap();
    assert_eq!(
        (old.status, old.last_error.as_deref(), old.errors.len()),
        (JobStatus::Failed, Some("before"), 0),
        "an old failed row keeps lastError and reads an empty history"
    );
    let conn = Connection::open(&path).unwrap();
    assert_eq!(rowids(&conn), before, "rows kept in place, not rebuilt");
    let (ty, notnull, default): (String, bool, String) = conn
        .query_row(
            "SELECT type, \"notnull\", dflt_value FROM pragma_table_info('duraq_jobs') WHERE name = 'errors'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (ty.as_str(), notnull, default.as_str()),
        ("TEXT", true, "'[]'")
    );

    let second = store.claim(&claim("w2")).await.unwrap().remove(0);
    assert_eq!(second.id, ids[1]);
    assert_eq!(
        store
            .report_batch(vec![(second.lease().unwrap(), Outcome::failed("after"))])
            .await
            .unwrap(),
        [true]
    );
    let failed = store.get_job(&ids[1]).await.unwrap().unwrap();
    assert_eq!(failed.errors.len(), 1);
    assert_eq!(
        (
            failed.errors[0].attempt,
            failed.errors[0].error.as_str(),
            failed.errors[0].worker_id.as_deref()
        ),
        (1, "after", Some("w2"))
    );
    store.retry_job(&ids[0]).await.unwrap();
    let again = store.claim(&claim("w3")).await.unwrap().remove(0);
    assert_eq!(
        store
            .report_batch(vec![(again.lease().unwrap(), Outcome::failed("later"))])
            .await
            .unwrap(),
        [true]
    );
    let old = store.get_job(&ids[0]).await.unwrap().unwrap();
    assert_eq!(
        old.errors
            .iter()
            .map(|e| e.error.as_str())
            .collect::<Vec<_>>(),
        ["later"],
        "an old row's history starts at the upgrade"
    );
    drop(store);
    assert!(SqliteStore::open_existing(&path, SqliteOptions::default())
        .unwrap()
        .migration()
        .applied
        .is_empty());
}

/// Takes a file back to the shape version 6 created: no priorities, rate limits
/// or worker registrations, `duraq_jobs_queued` in place of the claim index.
fn back_to_v6(conn: &Connection) {
    common::back_to_v7(conn);
    conn.execute_batch(
        "ALTER TABLE duraq_workers DROP COLUMN host; ALTER TABLE duraq_workers DROP COLUMN pid; \
         ALTER TABLE duraq_workers DROP COLUMN queues; ALTER TABLE duraq_workers DROP COLUMN job_names; \
         ALTER TABLE duraq_workers DROP COLUMN slots; ALTER TABLE duraq_workers DROP COLUMN started_at_ms; \
         DROP INDEX duraq_jobs_claim; DROP INDEX duraq_rate_starts_key; \
         DROP TABLE duraq_rate_limits; DROP TABLE duraq_rate_starts; \
         ALTER TABLE duraq_jobs DROP COLUMN priority; ALTER TABLE duraq_jobs DROP COLUMN rate_key; \
         ALTER TABLE duraq_jobs DROP COLUMN rate_max; ALTER TABLE duraq_jobs DROP COLUMN rate_period_ms; \
         CREATE INDEX duraq_jobs_queued ON duraq_jobs (scheduled_at_ms, created_at_ms, id) \
         WHERE status = 'queued'; DELETE FROM duraq_migrations WHERE version = 7",
    )
    .unwrap();
}

/// A version-6 file with a queued job is upgraded in place: `priority` (default
/// 0) and the rate columns are added without rebuilding the table, the claim
/// index replaces `duraq_jobs_queued`, the old row reads priority 0 and no rate
/// limit and is claimed after a new higher-priority, rate-limited job.
#[tokio::test]
async fn upgrade_to_v7_adds_priorities_and_rate_limits_in_place() {
    use duraq_core::{ClaimRequest, EnqueueOptions, NewJob};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let old = NewJob::new("j", serde_json::json!([]), EnqueueOptions::new()).unwrap();
    let old = store.enqueue(old).await.unwrap().job_id().to_owned();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    let rowids = |conn: &Connection| -> Vec<(i64, String)> {
        let mut stmt = conn
            .prepare("SELECT rowid, id FROM duraq_jobs ORDER BY rowid")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let before = rowids(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![7, 8]);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(rowids(&conn), before, "rows kept in place, not rebuilt");
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'duraq_jobs'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        indexes.contains(&"duraq_jobs_claim".to_owned()),
        "{indexes:?}"
    );
    assert!(
        !indexes.contains(&"duraq_jobs_queued".to_owned()),
        "{indexes:?}"
    );
    let row = store.get_job(&old).await.unwrap().unwrap();
    assert_eq!((row.priority, row.rate_key), (0, None));
    let opts =
        EnqueueOptions::new()
            .priority(9)
            .rate_limit("api", 1, std::time::Duration::from_secs(60));
    let high = NewJob::new("j", serde_json::json!([1]), opts).unwrap();
    let high = store.enqueue(high).await.unwrap().job_id().to_owned();
    let claim = ClaimRequest {
        worker_id: "w".into(),
        job_names: vec!["j".into()],
        limit: 5,
        ..ClaimRequest::default()
    };
    let claimed: Vec<String> = store
        .claim(&claim)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(claimed, [high, old]);
}

/// A version-6 file (today's before visible workers) with a worker's heartbeat
/// row is upgraded in place: `duraq_workers` gains the registration columns
/// (nullable), the old row keeps its heartbeat and is not listed (it never
/// registered), and a worker registers and is listed after the upgrade.
#[tokio::test]
async fn upgrade_to_v7_adds_worker_registrations_in_place() {
    use duraq_core::{WorkerInfo, WorkerState};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    store.heartbeat("old").await.unwrap();
    drop(store);
    let conn = Connection::open(&path).unwrap();
    back_to_v6(&conn);
    let beat = |conn: &Connection| -> i64 {
        conn.query_row(
            "SELECT last_heartbeat_ms FROM duraq_workers WHERE worker_id = 'old'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = beat(&conn);
    drop(conn);

    let store = SqliteStore::open_existing(&path, SqliteOptions::default()).unwrap();
    assert_eq!(store.migration().applied, vec![7, 8]);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(beat(&conn), before, "the old row kept in place");
    let columns: Vec<(String, bool)> = {
        let mut stmt = conn
            .prepare(
                "SELECT name, \"notnull\" FROM pragma_table_info('duraq_workers') ORDER BY cid",
            )
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let added: Vec<_> = columns[2..]
        .iter()
        .map(|(n, nn)| (n.as_str(), *nn))
        .collect();
    assert_eq!(
        added,
        [
            ("host", false),
            ("pid", false),
            ("queues", false),
            ("job_names", false),
            ("slots", false),
            ("started_at_ms", false)
        ]
    );
    assert!(
        store.list_workers(60_000).await.unwrap().is_empty(),
        "a heartbeat-only row is not a registered worker"
    );
    let info = WorkerInfo {
        worker_id: "new".into(),
        host: "h".into(),
        pid: 7,
        queues: None,
        job_names: vec!["j".into()],
        slots: 3,
    };
    store.register_worker(&info).await.unwrap();
    let listed = store.list_workers(60_000).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0].info, listed[0].state),
        (&info, WorkerState::Alive)
    );
    drop(store);
    assert!(SqliteStore::open_existing(&path, SqliteOptions::default())
        .unwrap()
        .migration()
        .applied
        .is_empty());
}
