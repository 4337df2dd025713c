//! Raw limits: the same work as `enqueue-batch` and `drain-*`, done with the bare
//! database driver on duraq's own schema, with no duraq code in between.
//!
//! Why: a figure like "N jobs/s" says little on its own, since the disk, the
//! fsync cost and the database engine set a ceiling no queue can pass. These
//! scenarios measure that ceiling on this machine, for duraq's table, indexes
//! and row values, so the report can state duraq's overhead as a ratio
//! (`enqueue_batch / raw_batch`, `drain / raw_drain`).
//!
//! What raw writes is what duraq writes to the job rows and to the counter rows
//! (`duraq_counts` on SQLite, one `duraq_count_shards` row on PostgreSQL) in the
//! same transactions, and nothing else: no heartbeats, no lease fencing, no
//! concurrency reservations, no NOTIFY, no reading of whole rows into jobs.
//! SQLite also bumps the `work` epoch on enqueue, as duraq's writer does.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use duraq_core::{new_job_id, Clock, QueueName, SystemClock, DEFAULT_MAX_RETRIES};
use rusqlite::{params, Connection};
use tokio_postgres::Client;

use super::{rate, Figure, Sizes};
use crate::target::{Kind, Target};
use crate::JOB;

/// Jobs per claim (one worker's slots) and per completion batch.
const CLAIM_LIMIT: usize = 64;
/// Concurrent claiming connections on PostgreSQL (like `drain-4w`).
const PG_DRAINERS: usize = 4;

/// `raw-batch`: `sizes.batch_total` rows, `sizes.batch` per transaction.
pub async fn batch(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    drop(target.open().await?);
    let elapsed = fill(target, sizes.batch_total, sizes.batch).await?;
    Ok(vec![Figure::new(
        "raw_batch",
        rate(sizes.batch_total, elapsed),
        "jobs/s",
    )])
}

/// `raw-drain`: `sizes.drain` rows inserted (untimed), then claimed and completed.
pub async fn drain(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    drop(target.open().await?);
    fill(target, sizes.drain, 1_000).await?;
    let (drained, elapsed) = match target.kind {
        Kind::Postgres => pg_drain(target).await?,
        _ => {
            let target = target.clone();
            tokio::task::spawn_blocking(move || sqlite_drain(&sqlite_open(&target)?)).await??
        }
    };
    ensure!(
        drained == sizes.drain,
        "drained {drained} of {} jobs",
        sizes.drain
    );
    Ok(vec![Figure::new(
        "raw_drain",
        rate(drained, elapsed),
        "jobs/s",
    )])
}

/// Inserts `total` queued rows in transactions of `batch`; returns the time spent.
async fn fill(target: &Target, total: usize, batch: usize) -> Result<Duration> {
    if target.kind == Kind::Postgres {
        return pg_insert(&target.pg_client().await?, &tables(target)?, total, batch).await;
    }
    let target = target.clone();
    tokio::task::spawn_blocking(move || sqlite_insert(&sqlite_open(&target)?, total, batch)).await?
}

/// The row values duraq's batch scenario produces for its `i`-th job: args
/// `[i]` as JSON text and a 64-hex-digit args digest (duraq's is a SHA-256).
fn args_text(i: usize) -> String {
    format!("[{i}]")
}

fn args_digest(i: usize) -> String {
    format!("{i:064x}")
}

// ---- SQLite -------------------------------------------------------------------

/// A connection with the pragmas duraq's writer connection uses.
fn sqlite_open(target: &Target) -> Result<Connection> {
    let conn = Connection::open(&target.location)
        .with_context(|| format!("opening {}", target.location))?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    ensure!(mode.eq_ignore_ascii_case("wal"), "journal_mode is {mode}");
    let sync = match target.kind {
        Kind::SqliteNormal => "NORMAL",
        _ => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = OFF; \
         PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16384;"
    ))
    .context("setting pragmas")?;
    Ok(conn)
}

/// Adds `moves` to `duraq_counts` and bumps the revision (and the `work`
/// epoch), as duraq does once per mutation.
fn sqlite_counts(conn: &Connection, moves: &[(&str, i64)], work: bool) -> Result<()> {
    let mut add =
        conn.prepare_cached("UPDATE duraq_counts SET value = value + ?2 WHERE name = ?1")?;
    for (name, delta) in moves {
        add.execute(params![name, delta])?;
    }
    add.execute(params!["revision", 1])?;
    if work {
        add.execute(params!["work", 1])?;
    }
    Ok(())
}

fn sqlite_insert(conn: &Connection, total: usize, batch: usize) -> Result<Duration> {
    const INSERT: &str = "INSERT INTO duraq_jobs (id, job_name, args, queue, status, attempts, \
        max_retries, scheduled_at_ms, created_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, \
        cancelled_at_ms, orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, \
        schedule_order, concurrency_key, max_concurrency, idempotency_key, timeout_ms, args_digest, \
        dedupe_key) VALUES (?1, ?2, ?3, ?4, 'queued', 0, ?5, ?6, ?7, NULL, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?8, NULL)";
    let started = Instant::now();
    let mut done = 0;
    while done < total {
        let n = batch.min(total - done);
        let now = SystemClock.now_ms();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut insert = conn.prepare_cached(INSERT)?;
        for i in done..done + n {
            insert
                .execute(params![
                    new_job_id(),
                    JOB,
                    args_text(i),
                    QueueName::DEFAULT,
                    DEFAULT_MAX_RETRIES,
                    now,
                    now,
                    args_digest(i),
                ])
                .context("inserting a job row")?;
        }
        sqlite_counts(conn, &[("queued", n as i64)], true)?;
        conn.execute_batch("COMMIT").context("committing a batch")?;
        done += n;
    }
    Ok(started.elapsed())
}

/// One claim transaction and one completion transaction per `CLAIM_LIMIT` jobs.
fn sqlite_drain(conn: &Connection) -> Result<(usize, Duration)> {
    const DUE: &str =
        "SELECT id FROM duraq_jobs WHERE status = 'queued' AND scheduled_at_ms <= ?1 \
        ORDER BY scheduled_at_ms, created_at_ms, id LIMIT ?2";
    const CLAIM: &str = "UPDATE duraq_jobs SET status = 'handed_off', attempts = attempts + 1, \
        worker_id = ?2, handoff_id = ?3, handed_off_at_ms = ?4 WHERE id = ?1";
    // Completion leaves worker_id and handoff_id as the claim set them.
    const COMPLETE: &str =
        "UPDATE duraq_jobs SET status = 'completed', completed_at_ms = ?2 WHERE id = ?1";
    let worker = "raw-worker";
    let started = Instant::now();
    let mut drained = 0;
    loop {
        let now = SystemClock.now_ms();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let ids = conn
            .prepare_cached(DUE)?
            .query_map(params![now, CLAIM_LIMIT as i64], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .context("selecting due jobs")?;
        if ids.is_empty() {
            conn.execute_batch("COMMIT")?;
            break;
        }
        let n = ids.len() as i64;
        let mut claim = conn.prepare_cached(CLAIM)?;
        for id in &ids {
            claim.execute(params![id, worker, new_job_id(), now])?;
        }
        sqlite_counts(conn, &[("queued", -n), ("handed_off", n)], false)?;
        conn.execute_batch("COMMIT").context("committing a claim")?;

        let now = SystemClock.now_ms();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut complete = conn.prepare_cached(COMPLETE)?;
        for id in &ids {
            complete.execute(params![id, now])?;
        }
        sqlite_counts(conn, &[("handed_off", -n), ("completed", n)], false)?;
        conn.execute_batch("COMMIT")
            .context("committing completions")?;
        drained += ids.len();
    }
    Ok((drained, started.elapsed()))
}

// ---- PostgreSQL ---------------------------------------------------------------

/// The quoted names of this run's job and count-shard tables.
struct Tables {
    jobs: String,
    shards: String,
}

fn tables(target: &Target) -> Result<Tables> {
    let schema = target
        .schema
        .as_deref()
        .context("postgres target without schema")?;
    // The schema name is ours (bench_<digits>), never user input.
    Ok(Tables {
        jobs: format!("\"{schema}\".duraq_jobs"),
        shards: format!("\"{schema}\".duraq_count_shards"),
    })
}

/// One autocommit `INSERT … SELECT FROM unnest(…)` per batch, like duraq's
/// batch insert without the dedupe-scope lookup (no scope is registered here).
async fn pg_insert(client: &Client, t: &Tables, total: usize, batch: usize) -> Result<Duration> {
    let sql = format!(
        "WITH ins AS (INSERT INTO {} (id, job_name, args, args_digest, queue, status, attempts, \
         max_retries, scheduled_at_ms, created_at_ms) SELECT * FROM unnest($1::text[], $2::text[], \
         $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[], $8::int8[], $9::int8[], \
         $10::int8[])) UPDATE {} SET revision = revision + 1, queued = queued + $11 WHERE shard = 0",
        t.jobs, t.shards
    );
    let insert = client.prepare(&sql).await.context("preparing the insert")?;
    let started = Instant::now();
    let mut done = 0;
    while done < total {
        let n = batch.min(total - done);
        let now = SystemClock.now_ms();
        let range = done..done + n;
        let ids: Vec<String> = range.clone().map(|_| new_job_id()).collect();
        let args: Vec<String> = range.clone().map(args_text).collect();
        let digests: Vec<String> = range.map(args_digest).collect();
        let (names, queues, statuses) =
            (vec![JOB; n], vec![QueueName::DEFAULT; n], vec!["queued"; n]);
        let (attempts, retries, times) =
            (vec![0i64; n], vec![DEFAULT_MAX_RETRIES; n], vec![now; n]);
        client
            .execute(
                &insert,
                &[
                    &ids,
                    &names,
                    &args,
                    &digests,
                    &queues,
                    &statuses,
                    &attempts,
                    &retries,
                    &times,
                    &times,
                    &(n as i64),
                ],
            )
            .await
            .context("inserting a batch")?;
        done += n;
    }
    Ok(started.elapsed())
}

/// `PG_DRAINERS` connections, each claiming with `FOR UPDATE SKIP LOCKED` and
/// completing what it claimed, one autocommit statement each, until a claim
/// comes back empty. Each connection keeps its own count shard, as duraq's
/// round-robin shards mostly do.
async fn pg_drain(target: &Target) -> Result<(usize, Duration)> {
    let t = tables(target)?;
    let claim_sql = format!(
        "WITH c AS (UPDATE {jobs} SET status = 'handed_off', attempts = attempts + 1, worker_id = $2, \
         handoff_id = gen_random_uuid()::text, handed_off_at_ms = $1 WHERE id IN (SELECT id FROM {jobs} \
         WHERE status = 'queued' AND scheduled_at_ms <= $1 ORDER BY scheduled_at_ms, created_at_ms, \
         id COLLATE \"C\" LIMIT {CLAIM_LIMIT} FOR UPDATE SKIP LOCKED) RETURNING id), \
         n AS (UPDATE {shards} SET revision = revision + 1, queued = queued - (SELECT count(*) FROM c), \
         handed_off = handed_off + (SELECT count(*) FROM c) WHERE shard = $3 AND EXISTS (SELECT 1 FROM c)) \
         SELECT id FROM c",
        jobs = t.jobs,
        shards = t.shards
    );
    // Completion leaves worker_id and handoff_id as the claim set them.
    let complete_sql = format!(
        "WITH d AS (UPDATE {} SET status = 'completed', completed_at_ms = $2 WHERE id = ANY($1)) \
         UPDATE {} SET revision = revision + 1, handed_off = handed_off - $3, completed = completed + $3 \
         WHERE shard = $4",
        t.jobs, t.shards
    );
    let mut drainers = Vec::with_capacity(PG_DRAINERS);
    for shard in 0..PG_DRAINERS as i32 {
        let client = target.pg_client().await?;
        // Before ANALYZE has seen the freshly filled table the planner would
        // read and sort every queued row per claim; duraq avoids that with the
        // same setting (per transaction, `WALK_DUE_INDEX`), raw once per session.
        client
            .batch_execute("SET enable_sort = off")
            .await
            .context("setting enable_sort")?;
        let claim = client
            .prepare(&claim_sql)
            .await
            .context("preparing the claim")?;
        let complete = client
            .prepare(&complete_sql)
            .await
            .context("preparing the completion")?;
        drainers.push((shard, client, claim, complete));
    }
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (shard, client, claim, complete) in drainers {
        set.spawn(async move {
            let worker = format!("raw-worker-{shard}");
            let mut drained = 0;
            loop {
                let now = SystemClock.now_ms();
                let rows = client.query(&claim, &[&now, &worker, &shard]).await?;
                if rows.is_empty() {
                    return anyhow::Ok(drained);
                }
                let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
                let n = ids.len() as i64;
                let now = SystemClock.now_ms();
                client.execute(&complete, &[&ids, &now, &n, &shard]).await?;
                drained += ids.len();
            }
        });
    }
    let mut drained = 0;
    while let Some(done) = set.join_next().await {
        drained += done?.context("draining")?;
    }
    Ok((drained, started.elapsed()))
}
