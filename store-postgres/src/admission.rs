//! A claim's admission reads (core's `AdmissionReads`), in the claim's
//! transaction, each locking what it read until the claim commits, so that
//! the counts the admission decides on stay exact however many workers
//! claim at once. The plain walk and the walk in fair turns share them.

use duraq_core::driver::rules::SequenceHead;
use duraq_core::driver::steps::AdmissionReads;
use duraq_core::driver::RateWindow;
use duraq_core::{RateLimit, Result};

use crate::backend::db::Db;
use crate::rate;

/// The reservations `key` holds now, its row locked until the claim commits
/// (created with none when missing), so that the count the claim's admission
/// works from stays exact however many workers claim at once.
async fn lock_active(db: &Db<'_>, key: &str, max: i64) -> Result<i64> {
    let row = db
        .query_one(
            "INSERT INTO {s}.duraq_concurrency (concurrency_key, max_concurrency, active) \
             VALUES ($1, $2, 0) ON CONFLICT (concurrency_key) \
             DO UPDATE SET active = duraq_concurrency.active RETURNING active",
            &[&key, &max],
        )
        .await?;
    Ok(row.get(0))
}

/// The admission's reads, each locking what it read until the claim commits.
pub(crate) struct Reads<'d, 'n>(pub(crate) &'d Db<'n>);

impl AdmissionReads for Reads<'_, '_> {
    async fn active_reservations(&mut self, key: &str, max: i64) -> Result<i64> {
        lock_active(self.0, key, max).await
    }

    async fn rate_window(&mut self, limit: &RateLimit) -> Result<Option<RateWindow>> {
        rate::lock_window(self.0, limit).await
    }

    async fn sequence_head(&mut self, key: &str) -> Result<SequenceHead> {
        let row = self.0.query_one(SEQUENCE_HEAD, &[&key]).await?;
        let first = match (
            row.get::<_, Option<i64>>(0),
            row.get::<_, Option<String>>(1),
        ) {
            (Some(at), Some(id)) => Some((at, id)),
            _ => None,
        };
        Ok(SequenceHead {
            first,
            running: row.get(2),
        })
    }
}

/// Where a sequence stands: its earliest job in its way and whether one of
/// its jobs runs, both read through `duraq_jobs_sequence`. A plain read:
/// the only job a claim may take is that earliest one, whose row the claim
/// holds `FOR UPDATE`, so two claims never both start a job of one sequence.
const SEQUENCE_HEAD: &str = "WITH first AS (SELECT created_at_ms, id FROM {s}.duraq_jobs \
     WHERE sequence_key = $1 AND status IN ('queued', 'handed_off', 'failed', 'orphaned') \
     AND (status IN ('queued', 'handed_off') OR NOT sequence_continues) \
     ORDER BY created_at_ms, id COLLATE \"C\" LIMIT 1) \
     SELECT (SELECT created_at_ms FROM first), (SELECT id FROM first), \
     EXISTS (SELECT 1 FROM {s}.duraq_jobs WHERE sequence_key = $1 \
     AND status IN ('queued', 'handed_off', 'failed', 'orphaned') AND status = 'handed_off')";
