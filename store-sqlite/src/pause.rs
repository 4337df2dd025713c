//! Paused queues (`docs/queues.md`): one row per paused queue in
//! `duraq_paused_queues`. Pausing and resuming are not count mutations (the
//! revision stays); resuming signals work so that idle workers, in this process
//! and (through the work epoch) in others, claim the queue's due jobs at once.
//! The claim and the worker's timer query exclude the table's queues in their own
//! statements ([`crate::claim`], [`crate::claim::next_scheduled_at`]).

use duraq_core::Result;
use rusqlite::{params, Connection};

use crate::error::SqlResult;
use crate::tx::Tx;

/// Pauses `queue`; `true` if it was running.
pub(crate) fn pause(tx: &mut Tx<'_>, queue: &str) -> Result<bool> {
    let inserted = tx
        .conn
        .prepare_cached(
            "INSERT INTO duraq_paused_queues (queue, paused_at_ms) VALUES (?1, ?2) \
             ON CONFLICT (queue) DO NOTHING",
        )
        .db()?
        .execute(params![queue, tx.now])
        .db()?;
    Ok(inserted == 1)
}

/// Resumes `queue`; `true` if it was paused (and then wakes idle workers).
pub(crate) fn resume(tx: &mut Tx<'_>, queue: &str) -> Result<bool> {
    let deleted = tx
        .conn
        .prepare_cached("DELETE FROM duraq_paused_queues WHERE queue = ?1")
        .db()?
        .execute([queue])
        .db()?;
    if deleted == 1 {
        tx.signal_work();
    }
    Ok(deleted == 1)
}

/// Every paused queue's name.
pub(crate) fn paused(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT queue FROM duraq_paused_queues")
        .db()?;
    let rows = stmt.query_map([], |r| r.get(0)).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}
