//! Paused queues (`docs/queues.md`): one row per paused queue in
//! `duraq_paused_queues` (schema version 4). Pausing and resuming change no
//! count, so the revision stays; resuming sets the transaction's work flag, so
//! the notifier's NOTIFY wakes idle workers in every process, as an enqueue
//! does. The claim and the timer query exclude the table's queues with a
//! `NOT IN` over it, which PostgreSQL runs as one hashed subplan per statement
//! ([`crate::claim`]).

use duraq_core::Result;

use crate::backend::db::Db;
use crate::tx::Tx;

/// Pauses `queue`; `true` if it was running.
pub(crate) async fn pause(tx: &mut Tx<'_>, queue: &str) -> Result<bool> {
    let rows = tx
        .db
        .query(
            "INSERT INTO {s}.duraq_paused_queues (queue, paused_at_ms) VALUES ($1, $2) \
             ON CONFLICT (queue) DO NOTHING RETURNING 1",
            &[&queue, &tx.now],
        )
        .await?;
    Ok(!rows.is_empty())
}

/// Resumes `queue`; `true` if it was paused (and then wakes idle workers).
pub(crate) async fn resume(tx: &mut Tx<'_>, queue: &str) -> Result<bool> {
    let rows = tx
        .db
        .query(
            "DELETE FROM {s}.duraq_paused_queues WHERE queue = $1 RETURNING 1",
            &[&queue],
        )
        .await?;
    let resumed = !rows.is_empty();
    if resumed {
        tx.work = true;
    }
    Ok(resumed)
}

/// Every paused queue's name.
pub(crate) async fn paused(db: &Db<'_>) -> Result<Vec<String>> {
    let rows = db
        .query("SELECT queue FROM {s}.duraq_paused_queues", &[])
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
