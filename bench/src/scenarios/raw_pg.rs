//! The PostgreSQL half of the raw-limit scenarios (see `raw.rs`): the
//! bare `tokio_postgres` driver on duraq's schema in this run's schema, every
//! statement autocommit (an implicit transaction: rows and counter shard
//! together or not at all), durability as the server is configured.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use duraq_core::driver::new_job_id;
use duraq_core::limits::DEFAULT_MAX_RETRIES;
use duraq_core::{Clock, QueueName, SystemClock};
use tokio_postgres::error::SqlState;

use super::raw_rows::{args_digest, args_text, shares, CLAIM_LIMIT};
use crate::target::Target;
use crate::JOB;

/// Concurrent claiming connections (like `drain-4w`).
const PG_DRAINERS: usize = 4;

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

/// Inserts `total` queued rows in batches of `batch` on one connection, one
/// autocommit `INSERT … SELECT FROM unnest(…)` each with a count-shard update
/// (shard 0), like duraq's batch insert without the dedupe-scope lookup (no
/// scope is registered here); returns the time spent.
pub(super) async fn fill(target: &Target, total: usize, batch: usize) -> Result<Duration> {
    let client = target.pg_client().await?;
    let t = tables(target)?;
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

/// `conns` tasks, each with its own client and count shard (its index, as
/// duraq spreads its shards), inserting their share of `total` rows with one
/// autocommit single-row statement each; returns the time from the start
/// (all clients connected and prepared) to the last commit.
pub(super) async fn single_rows(target: &Target, total: usize, conns: usize) -> Result<Duration> {
    let t = tables(target)?;
    // A plain one-row VALUES insert: what a bare driver would send for one job.
    let sql = format!(
        "WITH ins AS (INSERT INTO {} (id, job_name, args, args_digest, queue, status, attempts, \
         max_retries, scheduled_at_ms, created_at_ms) VALUES ($1, $2, $3, $4, $5, 'queued', 0, $6, \
         $7, $7)) UPDATE {} SET revision = revision + 1, queued = queued + 1 WHERE shard = $8",
        t.jobs, t.shards
    );
    let mut writers = Vec::with_capacity(conns);
    for (shard, rows) in shares(total, conns).into_iter().enumerate() {
        let client = target.pg_client().await?;
        let insert = client.prepare(&sql).await.context("preparing the insert")?;
        let shard = i32::try_from(shard).context("shard index")?;
        writers.push((shard, rows, client, insert));
    }
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (shard, rows, client, insert) in writers {
        set.spawn(async move {
            for i in rows {
                let now = SystemClock.now_ms();
                client
                    .execute(
                        &insert,
                        &[
                            &new_job_id(),
                            &JOB,
                            &args_text(i),
                            &args_digest(i),
                            &QueueName::DEFAULT,
                            &DEFAULT_MAX_RETRIES,
                            &now,
                            &shard,
                        ],
                    )
                    .await
                    .context("inserting a job row")?;
            }
            anyhow::Ok(Instant::now())
        });
    }
    let mut last = started;
    while let Some(done) = set.join_next().await {
        last = last.max(done??);
    }
    Ok(last - started)
}

/// `PG_DRAINERS` connections, each claiming with `FOR UPDATE SKIP LOCKED` and
/// completing what it claimed, one autocommit statement each, until a claim
/// comes back empty. Each connection keeps its own count shard, as duraq's
/// round-robin shards mostly do.
pub(super) async fn drain(target: &Target) -> Result<(usize, Duration)> {
    let t = tables(target)?;
    let claim_sql = format!(
        "WITH c AS (UPDATE {jobs} SET status = 'handed_off', attempts = attempts + 1, worker_id = $2, \
         handoff_id = gen_random_uuid()::text, handed_off_at_ms = $1 WHERE id IN (SELECT id FROM {jobs} \
         WHERE status = 'queued' AND priority = 0 AND scheduled_at_ms <= $1 ORDER BY scheduled_at_ms, created_at_ms, \
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
        // read and sort every queued row per claim, and read the whole table
        // to find the ids a completion names; duraq avoids both with the same
        // settings (per transaction: `WALK_DUE_INDEX`, `BY_KEY_ONLY`), raw
        // once per session.
        client
            .batch_execute("SET enable_sort = off; SET enable_seqscan = off")
            .await
            .context("setting enable_sort and enable_seqscan")?;
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
                let rows = match client.query(&claim, &[&now, &worker, &shard]).await {
                    Ok(rows) => rows,
                    // A row this claim's snapshot saw queued was claimed and
                    // finished by another drainer, which moved it to the
                    // finished partition: PostgreSQL refuses the lock instead of
                    // skipping the row. The claim changed nothing; claim again
                    // (duraq's own transactions retry the same way).
                    Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => continue,
                    Err(e) => return Err(e.into()),
                };
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
