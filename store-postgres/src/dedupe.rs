//! `deduplicateWhileQueued` (`docs/dedupe.md`) paid only by the scopes that use it.
//!
//! A dedupe request must find the earliest identical (job name, args, queue) job
//! that is still queued, whether or not that job asked for dedupe. Schema v1 kept
//! an index over every queued job's (name, queue, args digest) for it: about half
//! of what inserting a job cost, on queues that never dedupe. Since v2 (as in the
//! SQLite store) only jobs with a `dedupe_key` are indexed, and a job gets one when
//! its (job name, queue) scope is registered in `duraq_dedupe_scopes`: the insert
//! itself reads the registration (see [`crate::insert::insert_jobs_sql`]).
//!
//! The first dedupe request of a scope registers it and gives every existing job
//! of the scope its key, whatever its status (a running or failed job may come
//! back to `queued`). Registration first takes `SHARE ROW EXCLUSIVE` on
//! `duraq_jobs`, which waits for every transaction that is writing jobs and holds
//! new writers until it commits: an insert either committed before (and the
//! backfill sees it) or starts after (and sees the registration). So every job of
//! a registered scope has its key, and the lookup is exact. The mode conflicts
//! with itself, so two first registrations queue up instead of deadlocking (with
//! `SHARE` both would get the lock, then each backfill would wait for the other).
//! It happens once per scope, ever.

use duraq_core::{NewJob, Result};

use crate::tx::Tx;

/// The dedupe key of an args digest: its first 16 hex digits (the lookup checks
/// the full digest on the row, so a prefix collision costs one row read).
pub(crate) const KEY_OF_DIGEST: &str = "substr(args_digest, 1, 16)";

/// Registers the scope of `job` unless it is registered, keying its jobs.
async fn register_scope(tx: &Tx<'_>, job: &NewJob) -> Result<()> {
    let (name, queue) = (job.job_name().as_str(), job.queue().as_str());
    let known = tx
        .db
        .query_opt(
            "SELECT 1 FROM {s}.duraq_dedupe_scopes WHERE job_name = $1 AND queue = $2",
            &[&name, &queue],
        )
        .await?;
    if known.is_some() {
        return Ok(());
    }
    tx.db
        .batch(
            &tx.db
                .names
                .sql("LOCK TABLE {s}.duraq_jobs IN SHARE ROW EXCLUSIVE MODE"),
        )
        .await?;
    let added = tx
        .db
        .query(
            "INSERT INTO {s}.duraq_dedupe_scopes (job_name, queue, registered_at_ms) \
             VALUES ($1, $2, $3) ON CONFLICT (job_name, queue) DO NOTHING RETURNING 1",
            &[&name, &queue, &tx.now],
        )
        .await?;
    if !added.is_empty() {
        tx.db
            .execute(
                &format!(
                    "UPDATE {{s}}.duraq_jobs SET dedupe_key = {KEY_OF_DIGEST} \
                     WHERE job_name = $1 AND queue = $2 AND dedupe_key IS NULL"
                ),
                &[&name, &queue],
            )
            .await?;
    }
    Ok(())
}

/// The earliest identical queued job due no later than `job` would be, through
/// the `duraq_jobs_dedupe_key` index. Registers the scope first, so the answer
/// covers every job of it.
pub(crate) async fn find_duplicate(tx: &Tx<'_>, job: &NewJob) -> Result<Option<String>> {
    register_scope(tx, job).await?;
    let digest = job.args_digest();
    let row = tx
        .db
        .query_opt(
            "SELECT id FROM {s}.duraq_jobs WHERE dedupe_key = substr($3, 1, 16) \
             AND status = 'queued' AND job_name = $1 AND queue = $2 AND args_digest = $3 \
             AND scheduled_at_ms <= $4 \
             ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT 1",
            &[
                &job.job_name().as_str(),
                &job.queue().as_str(),
                &digest,
                &job.due_at_ms(tx.now),
            ],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}
