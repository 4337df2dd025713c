//! Raw limits: the same work as `enqueue-one`, `enqueue-batch`, the 8-producer
//! enqueues and `drain-*`, done with the bare database driver on duraq's own
//! schema, with no duraq code in between.
//!
//! Why: a figure like "N jobs/s" says little on its own, since the disk, the
//! fsync cost and the database engine set a ceiling no queue can pass. These
//! scenarios measure that ceiling on this machine, for duraq's table, indexes
//! and row values, so the report can state duraq's overhead as a ratio
//! (`enqueue_one / raw_one`, `enqueue_batch / raw_batch`,
//! `enqueue_8tasks / raw_8conn`, `drain / raw_drain`).
//!
//! - `raw-one`: `sizes.one_by_one` rows, one per transaction, from one connection.
//! - `raw-batch`: `sizes.batch_total` rows, `sizes.batch` per transaction.
//! - `raw-8conn`: `sizes.producers_total` rows, one per transaction, split over
//!   8 concurrent connections (PostgreSQL: 8 tasks with a client and a counter
//!   shard each; SQLite: 8 threads with a connection each, `BEGIN IMMEDIATE`
//!   per row and a 5 s busy timeout: what 8 writers get from SQLite without
//!   duraq's group commit). SQLite's busy handler polls, so the writer that
//!   just committed mostly takes the lock again and the others wait their
//!   turn; a `BEGIN` that times out is retried, as an application would, and
//!   counted in `raw_8conn_busy_retries`. The rate is rows over the time from
//!   the start to the last commit.
//! - `raw-drain`: `sizes.drain` rows inserted (untimed), then claimed and
//!   completed (SQLite: one connection; PostgreSQL: 4, like `drain-4w`).
//!
//! What raw writes is what duraq writes to the job rows and to the counter rows
//! (`duraq_counts` on SQLite, one `duraq_count_shards` row on PostgreSQL) in the
//! same transactions, and nothing else: no heartbeats, no lease fencing, no
//! concurrency reservations, no NOTIFY, no reading of whole rows into jobs.
//! SQLite also bumps the `work` epoch on enqueue, as duraq's writer does.
//! Durability is duraq's: SQLite in WAL with `synchronous` FULL or NORMAL per
//! store kind, PostgreSQL with the server's own settings. The PostgreSQL half
//! lives in `raw_pg.rs`.

use std::ops::Range;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use duraq_core::driver::new_job_id;
use duraq_core::limits::DEFAULT_MAX_RETRIES;
use duraq_core::{Clock, QueueName, SystemClock};
use rusqlite::{params, Connection};

use super::raw_pg;
use super::raw_rows::{args_text, shares, CLAIM_LIMIT};
use super::{rate, Figure, Sizes};
use crate::target::{Kind, Target};
use crate::JOB;

/// Concurrent inserting connections in `raw-8conn` (like `enqueue-8tasks`).
const PRODUCERS: usize = 8;

/// `raw-one`: `sizes.one_by_one` rows, one autocommit transaction each.
pub async fn one(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    drop(target.open().await?);
    let (elapsed, _) = single_rows(target, sizes.one_by_one, 1).await?;
    Ok(vec![Figure::new(
        "raw_one",
        rate(sizes.one_by_one, elapsed),
        "jobs/s",
    )])
}

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

/// `raw-8conn`: `sizes.producers_total` rows, one per transaction, from
/// [`PRODUCERS`] concurrent connections.
pub async fn eight_conns(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    drop(target.open().await?);
    let (elapsed, retries) = single_rows(target, sizes.producers_total, PRODUCERS).await?;
    let mut figures = vec![Figure::new(
        "raw_8conn",
        rate(sizes.producers_total, elapsed),
        "jobs/s",
    )];
    if target.kind.is_sqlite() {
        figures.push(Figure::new(
            "raw_8conn_busy_retries",
            retries as f64,
            "retries",
        ));
    }
    Ok(figures)
}

/// `raw-drain`: `sizes.drain` rows inserted (untimed), then claimed and completed.
pub async fn drain(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    drop(target.open().await?);
    fill(target, sizes.drain, 1_000).await?;
    let (drained, elapsed) = match target.kind {
        Kind::Postgres => raw_pg::drain(target).await?,
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
        return raw_pg::fill(target, total, batch).await;
    }
    let target = target.clone();
    tokio::task::spawn_blocking(move || {
        let conn = sqlite_open(&target)?;
        let started = Instant::now();
        sqlite_insert(&conn, 0..total, batch)?;
        Ok(started.elapsed())
    })
    .await?
}

/// Inserts `total` queued rows one per transaction from `conns` concurrent
/// connections (opened before the clock starts); returns the time from the
/// start to the last commit and the busy `BEGIN` retries (SQLite only).
async fn single_rows(target: &Target, total: usize, conns: usize) -> Result<(Duration, u64)> {
    if target.kind == Kind::Postgres {
        return Ok((raw_pg::single_rows(target, total, conns).await?, 0));
    }
    let target = target.clone();
    tokio::task::spawn_blocking(move || sqlite_single_rows(&target, total, conns)).await?
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

/// Inserts rows `rows` (their index sets the args) in `BEGIN IMMEDIATE`
/// transactions of `batch`, each with its count update; returns how many
/// `BEGIN`s timed out on another connection's write lock and were retried.
fn sqlite_insert(conn: &Connection, rows: Range<usize>, batch: usize) -> Result<u64> {
    const INSERT: &str = "INSERT INTO duraq_jobs (id, job_name, args, queue, status, attempts, \
        max_retries, scheduled_at_ms, created_at_ms, handed_off_at_ms, completed_at_ms, failed_at_ms, \
        cancelled_at_ms, orphaned_at_ms, last_error, worker_id, handoff_id, schedule_key, \
        schedule_order, concurrency_key, max_concurrency, idempotency_key, timeout_ms, args_digest, \
        dedupe_key) VALUES (?1, ?2, ?3, ?4, 'queued', 0, ?5, ?6, ?7, NULL, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?8, NULL)";
    let mut retries = 0;
    let mut done = rows.start;
    while done < rows.end {
        let n = batch.min(rows.end - done);
        retries += sqlite_begin(conn)?;
        let now = SystemClock.now_ms();
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
                    "",
                ])
                .context("inserting a job row")?;
        }
        sqlite_counts(conn, &[("queued", n as i64)], true)?;
        conn.execute_batch("COMMIT").context("committing a batch")?;
        done += n;
    }
    Ok(retries)
}

/// Times out `BEGIN IMMEDIATE` may hit in a row before the writer gives up.
const BUSY_RETRIES: u64 = 12;

/// `BEGIN IMMEDIATE`, retried when it timed out (`busy_timeout`) waiting for
/// another connection's write lock, as an application would retry; returns the
/// retries. SQLite's busy handler polls, so a writer can lose the lock to the
/// connection that just committed many times over.
fn sqlite_begin(conn: &Connection) -> Result<u64> {
    let mut retries = 0;
    loop {
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => return Ok(retries),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && retries < BUSY_RETRIES =>
            {
                retries += 1;
            }
            Err(e) => return Err(e).context("beginning a transaction"),
        }
    }
}

/// `conns` threads, each with its own connection, inserting their share of
/// `total` one row per transaction; returns the time to the last commit and
/// the busy `BEGIN` retries.
fn sqlite_single_rows(target: &Target, total: usize, conns: usize) -> Result<(Duration, u64)> {
    let writers = shares(total, conns)
        .into_iter()
        .map(|rows| Ok((sqlite_open(target)?, rows)))
        .collect::<Result<Vec<_>>>()?;
    let started = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = writers
            .into_iter()
            .map(|(conn, rows)| {
                scope.spawn(move || {
                    let retries = sqlite_insert(&conn, rows, 1)?;
                    anyhow::Ok((Instant::now(), retries))
                })
            })
            .collect();
        let (mut last, mut retries) = (started, 0);
        for thread in threads {
            let (done, busy) = thread
                .join()
                .map_err(|_| anyhow::anyhow!("an inserting thread panicked"))?
                .context("inserting rows")?;
            last = last.max(done);
            retries += busy;
        }
        Ok((last - started, retries))
    })
}

/// One claim transaction and one completion transaction per `CLAIM_LIMIT` jobs.
fn sqlite_drain(conn: &Connection) -> Result<(usize, Duration)> {
    const DUE: &str =
        "SELECT id FROM duraq_jobs WHERE status = 'queued' AND priority = 0 AND scheduled_at_ms <= ?1 \
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
