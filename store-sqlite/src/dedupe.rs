//! `deduplicateWhileQueued` (`docs/dedupe.md`) without taxing everyone else.
//!
//! A dedupe request must find the earliest identical (job name, args, queue) job
//! that is still queued — any such job, whether or not it asked for dedupe. An
//! index over every queued job's args digest would serve that, but its keys are
//! random, so every enqueue and every claim would dirty a random index page: on a
//! queue that never dedupes, that page write was most of what an enqueue or a
//! claim cost.
//!
//! So the index is partial: only jobs with a `dedupe_key` are in it, and a job gets
//! one when its (job name, queue) *scope* is registered in `duraq_dedupe_scopes`.
//! The first dedupe request of a scope registers it and, in the same transaction,
//! gives every existing job of the scope its key (whatever its status, since a
//! failed or running job may come back to `queued`); from then on every insert in
//! the scope sets the key. Every job of a registered scope therefore has its key,
//! and the lookup is exact. The one-time backfill reads the whole table once per
//! scope, ever.
//!
//! Whether a scope is registered is read once per write transaction and scope
//! ([`ScopeMemo`]): while the transaction holds the write lock, only this
//! transaction can register one. (A registration undone by a request's rollback
//! leaves the memo saying "registered": the jobs inserted meanwhile get a key
//! they did not need, which costs an index entry and changes no answer.)

use duraq_core::{NewJob, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error_map::SqlResult;
use crate::tx::Tx;

/// The dedupe key of an args digest: its first 16 hex digits (the lookup checks
/// the full digest on the row, so a prefix collision costs one row read).
pub(crate) fn key_of(args_digest: &str) -> &str {
    args_digest.get(..16).unwrap_or(args_digest)
}

/// Which (job name, queue) scopes one write transaction found registered.
#[derive(Default)]
pub(crate) struct ScopeMemo(Vec<(String, String, bool)>);

impl ScopeMemo {
    fn get(&self, name: &str, queue: &str) -> Option<bool> {
        self.0
            .iter()
            .find(|(n, q, _)| n == name && q == queue)
            .map(|e| e.2)
    }

    fn set(&mut self, name: &str, queue: &str, registered: bool) {
        match self.0.iter_mut().find(|(n, q, _)| n == name && q == queue) {
            Some(entry) => entry.2 = registered,
            None => self.0.push((name.to_owned(), queue.to_owned(), registered)),
        }
    }
}

/// The key a new row of job `name` in `queue` must carry: `Some` when its
/// scope is registered.
pub(crate) fn key_for_insert<'d>(
    tx: &mut Tx<'_>,
    name: &str,
    queue: &str,
    args_digest: &'d str,
) -> Result<Option<&'d str>> {
    let registered = match tx.scopes.get(name, queue) {
        Some(known) => known,
        None => {
            let found = tx
                .conn
                .prepare_cached(
                    "SELECT 1 FROM duraq_dedupe_scopes WHERE job_name = ?1 AND queue = ?2",
                )
                .db()?
                .query_row(params![name, queue], |_| Ok(()))
                .optional()
                .db()?
                .is_some();
            tx.scopes.set(name, queue, found);
            found
        }
    };
    Ok(registered.then(|| key_of(args_digest)))
}

/// Registers the scope of `job` if it is new, keying every existing job of it.
fn register_scope(conn: &Connection, job: &NewJob, now: i64) -> Result<()> {
    let (name, queue) = (job.job_name().as_str(), job.queue().as_str());
    let added = conn
        .prepare_cached(
            "INSERT INTO duraq_dedupe_scopes (job_name, queue, registered_at_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (job_name, queue) DO NOTHING",
        )
        .db()?
        .execute(params![name, queue, now])
        .db()?;
    if added > 0 {
        conn.prepare_cached(
            "UPDATE duraq_jobs SET dedupe_key = substr(args_digest, 1, 16) \
             WHERE job_name = ?1 AND queue = ?2 AND dedupe_key IS NULL",
        )
        .db()?
        .execute(params![name, queue])
        .db()?;
    }
    Ok(())
}

/// The earliest identical queued job due no later than `job` would be, through
/// the `duraq_jobs_dedupe_key` index. Registers the scope first, so the answer
/// covers every job of it.
pub(crate) fn find_duplicate(tx: &mut Tx<'_>, job: &NewJob) -> Result<Option<String>> {
    let (conn, now) = (tx.conn, tx.now);
    register_scope(conn, job, now)?;
    tx.scopes
        .set(job.job_name().as_str(), job.queue().as_str(), true);
    let digest = job.args_digest();
    // Pinned: without statistics SQLite would rather walk the per-queue index of
    // queue latency (`duraq_jobs_queue_due`) and sort.
    conn.prepare_cached(
        "SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_dedupe_key \
         WHERE dedupe_key = ?5 AND status = 'queued' \
         AND job_name = ?1 AND queue = ?2 AND args_digest = ?3 AND scheduled_at_ms <= ?4 \
         ORDER BY scheduled_at_ms, created_at_ms, id LIMIT 1",
    )
    .db()?
    .query_row(
        params![
            job.job_name().as_str(),
            job.queue().as_str(),
            digest,
            job.due_at_ms(now),
            key_of(&digest),
        ],
        |r| r.get(0),
    )
    .optional()
    .db()
}
