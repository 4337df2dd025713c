//! Which index each hot statement reads, on a freshly migrated file: the
//! claim and timer walks, queue latency, dedupe, pruning, recovery, and the
//! dependency edges (by the edge table's primary key). These pin the plans the
//! indexes were designed for, so a schema change that loses one fails here
//! rather than in a benchmark.
use duraq_store_sqlite::migrate;
use rusqlite::Connection;

use crate::support::{query_plan, temp_db};

/// A file with today's schema, opened outside the store.
fn migrated() -> (tempfile::TempDir, Connection) {
    let (dir, path) = temp_db("plan.db");
    migrate(&path).unwrap();
    (dir, Connection::open(&path).unwrap())
}

/// The hot statements must read their partial index whatever the statistics say
/// (SQLite plans without ANALYZE data here; a plan change would turn a claim into
/// a table scan).
#[test]
fn hot_queries_use_the_partial_indexes() {
    let (_dir, conn) = migrated();
    let plan = |sql: &str| query_plan(&conn, sql);
    // Both claim shapes as the store runs them, paused queues excluded by a
    // `NOT IN` over the small paused table: evaluated once per statement (a list
    // subquery), never per job, and the due-order walk stays sort-free.
    let claim = plan(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
         WHERE status = 'queued' AND fairness_key IS NULL \
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
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
         WHERE status = 'queued' AND fairness_key IS NULL \
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
        "SELECT scheduled_at_ms FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
         WHERE status = 'queued' AND fairness_key IS NULL AND priority = 0 AND job_name IN (SELECT value FROM json_each('[\"a\"]')) \
         AND (NULL IS NULL OR queue IN (SELECT value FROM json_each(NULL))) \
         AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
         ORDER BY scheduled_at_ms LIMIT 1",
    );
    assert!(
        timer.contains("duraq_jobs_claim") && !timer.contains("CORRELATED"),
        "timer plan: {timer}"
    );
    // Fair turns: the next lane is one seek, a lane's due jobs one range.
    let next_lane = plan(
        "SELECT queue, fairness_key FROM duraq_jobs INDEXED BY duraq_jobs_fair \
         WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = 0 \
         AND queue = 'q' AND fairness_key > 'a' ORDER BY fairness_key LIMIT 1",
    );
    assert!(
        next_lane.contains(
            "SEARCH duraq_jobs USING COVERING INDEX duraq_jobs_fair (priority=? AND queue=? AND fairness_key>?)"
        ) && !next_lane.contains("TEMP B-TREE"),
        "next lane plan: {next_lane}"
    );
    let lane = plan(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_fair \
         WHERE status = 'queued' AND fairness_key = 'a' AND queue = 'q' \
         AND priority = 0 AND scheduled_at_ms <= 5 \
         AND job_name IN (SELECT value FROM json_each('[\"a\"]')) \
         AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
         AND (scheduled_at_ms, created_at_ms, id) > (0, 0, '') \
         ORDER BY scheduled_at_ms, created_at_ms, id LIMIT 10",
    );
    assert!(
        lane.contains("duraq_jobs_fair (priority=? AND queue=? AND fairness_key=? AND (scheduled_at_ms,created_at_ms,id)>(?,?,?)")
            || lane.contains("duraq_jobs_fair (priority=? AND queue=? AND fairness_key=? AND scheduled_at_ms"),
        "lane plan: {lane}"
    );
    assert!(!lane.contains("TEMP B-TREE"), "lane plan: {lane}");
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

/// The dependents of a finished job are one range of the edge table's primary
/// key, and so are a deleted dependent's own edges.
#[test]
fn edge_statements_read_the_primary_key() {
    let (_dir, conn) = migrated();
    let edges = query_plan(
        &conn,
        "SELECT job_id, on_failure FROM duraq_job_dependents WHERE dep_id = 'a'",
    );
    assert!(
        edges.contains("USING INDEX sqlite_autoindex_duraq_job_dependents_1 (dep_id=?)"),
        "edges plan: {edges}"
    );
    let delete = query_plan(
        &conn,
        "DELETE FROM duraq_job_dependents WHERE job_id = 'b' AND dep_id IN \
         (SELECT json_extract(value, '$.jobId') FROM json_each('[{\"jobId\":\"a\"}]'))",
    );
    assert!(
        delete.contains("(dep_id=? AND job_id=?)"),
        "delete plan: {delete}"
    );
}

/// A bounded step of the release backlog reads its edges through the primary
/// key, in its order.
#[test]
fn a_bounded_step_reads_the_primary_key_in_order() {
    let (_dir, conn) = migrated();
    let plan = query_plan(
        &conn,
        "SELECT job_id, on_failure FROM duraq_job_dependents \
         WHERE dep_id = 'a' AND job_id > 'b' ORDER BY job_id LIMIT 1001",
    );
    assert!(
        plan.contains(
            "USING INDEX sqlite_autoindex_duraq_job_dependents_1 (dep_id=? AND job_id>?)"
        ),
        "plan: {plan}"
    );
    assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
}
