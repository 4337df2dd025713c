//! Priority aging passes (`duraq_core::PriorityAging`): one statement raises
//! the queue's due jobs to the priority their wait has earned, walking the
//! queue's due-time index (`duraq_jobs_queue_due`) from the oldest due time
//! the pass must visit. The arithmetic is `PriorityAging::raise`'s, in SQL:
//! the job's own priority is `priority - aged_steps`, its earned steps
//! `MIN(max_steps, waited / every_ms)`, the result never above 100 nor below
//! the priority it has.

use duraq_core::driver::AgingPass;
use duraq_core::{Result, MAX_PRIORITY};
use rusqlite::named_params;

use crate::error::SqlResult;
use crate::tx::Tx;

/// The priority a row's wait has earned at `:now`.
const EARNED: &str = "MAX(priority, MIN(:top, priority - aged_steps \
     + MIN(:max_steps, (:now - scheduled_at_ms) / :every)))";

/// Raises up to `pass.limit` of the queue's due jobs; how many changed.
pub(crate) fn age_priorities(tx: &mut Tx<'_>, pass: &AgingPass) -> Result<u64> {
    let sql = format!(
        "UPDATE duraq_jobs SET aged_steps = aged_steps + {EARNED} - priority, priority = {EARNED} \
         WHERE id IN (SELECT id FROM duraq_jobs INDEXED BY duraq_jobs_queue_due \
         WHERE status = 'queued' AND queue = :queue AND scheduled_at_ms >= :oldest \
         AND scheduled_at_ms <= :now - :every AND priority < {EARNED} LIMIT :limit)"
    );
    let changed = tx
        .conn
        .prepare_cached(&sql)
        .db()?
        .execute(named_params! {
            ":top": MAX_PRIORITY,
            ":max_steps": pass.aging.max_steps,
            ":now": tx.now,
            ":every": pass.aging.every_ms,
            ":queue": pass.queue,
            ":oldest": pass.oldest_due_ms.unwrap_or(i64::MIN),
            ":limit": i64::try_from(pass.limit).unwrap_or(i64::MAX),
        })
        .db()?;
    Ok(changed as u64)
}
