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
//! The same holds for the args digest itself (since schema version 8): only
//! this lookup reads it, so a row keeps it only while it has a dedupe key, and
//! others hold [`NO_DIGEST`]. It was a third of a small job's row, written by
//! every enqueue for a lookup most scopes never make. The backfill gives such
//! rows the digest of their stored args (the canonical JSON the digest is made
//! from) together with their key; rows of older files keep theirs.
//!
//! Whether a scope is registered is read once per write transaction and scope
//! ([`ScopeMemo`]): while the transaction holds the write lock, only this
//! transaction can register one. (A registration undone by a request's rollback
//! leaves the memo saying "registered": the jobs inserted meanwhile get a key
//! they did not need, which costs an index entry and changes no answer.)

use duraq_core::driver::digest_hex;
use duraq_core::{Error, NewJob, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::tx::Tx;

/// What `args_digest` holds on a row without a dedupe key (see the module docs).
pub(crate) const NO_DIGEST: &str = "";

/// Rows given their digest and key per round of [`key_scope`].
const BACKFILL_ROWS: i64 = 256;

/// The dedupe key of an args digest: its first 16 hex digits (the lookup checks
/// the full digest on the row, so a prefix collision costs one row read).
pub(crate) fn key_of(args_digest: &str) -> &str {
    args_digest.get(..16).unwrap_or(args_digest)
}

/// Whether the scope of job `name` in `queue` is registered, so that a new row
/// of it must carry its args digest and dedupe key.
pub(crate) fn scope_registered(tx: &mut Tx<'_>, name: &str, queue: &str) -> Result<bool> {
    if let Some(known) = tx.scopes.get(name, queue) {
        return Ok(known);
    }
    let found = tx
        .conn
        .prepare_cached("SELECT 1 FROM duraq_dedupe_scopes WHERE job_name = ?1 AND queue = ?2")
        .db()?
        .query_row(params![name, queue], |_| Ok(()))
        .optional()
        .db()?
        .is_some();
    tx.scopes.set(name, queue, found);
    Ok(found)
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
        key_scope(conn, name, queue)?;
    }
    Ok(())
}

/// Gives every job of a newly registered scope its dedupe key: rows that kept
/// their digest (older files) in one statement, then the others, digesting
/// their stored args, [`BACKFILL_ROWS`] at a time in rowid order (each round's
/// rows are read before any of them is written).
fn key_scope(conn: &Connection, name: &str, queue: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE duraq_jobs SET dedupe_key = substr(args_digest, 1, 16) \
         WHERE job_name = ?1 AND queue = ?2 AND dedupe_key IS NULL AND args_digest <> ''",
    )
    .db()?
    .execute(params![name, queue])
    .db()?;
    let mut after = i64::MIN;
    loop {
        let rows: Vec<(i64, String)> = conn
            .prepare_cached(
                "SELECT rowid, args FROM duraq_jobs WHERE job_name = ?1 AND queue = ?2 \
                 AND dedupe_key IS NULL AND rowid > ?3 ORDER BY rowid LIMIT ?4",
            )
            .db()?
            .query_map(params![name, queue, after, BACKFILL_ROWS], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .db()?
            .collect::<rusqlite::Result<_>>()
            .db()?;
        let Some(&(last, _)) = rows.last() else {
            return Ok(());
        };
        let mut update = conn
            .prepare_cached(
                "UPDATE duraq_jobs SET args_digest = ?2, dedupe_key = ?3 WHERE rowid = ?1",
            )
            .db()?;
        for (rowid, args) in &rows {
            let value: serde_json::Value = serde_json::from_str(args)
                .map_err(|e| Error::backend("reading a job's args", e))?;
            let digest = digest_hex("args", &value);
            update
                .execute(params![rowid, digest, key_of(&digest)])
                .db()?;
        }
        after = last;
    }
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
