//! Priority aging passes (`duraq_core::PriorityAging`): one statement raises
//! the queue's due jobs to the priority their wait has earned, walking the
//! queue's due-time index (`duraq_jobs_queue_due`) from the oldest due time
//! the pass must visit and skipping rows another transaction holds (a claim
//! deciding on them). The arithmetic is `PriorityAging::raise`'s, in SQL: the
//! job's own priority is `priority - aged_steps`, its earned steps
//! `LEAST(max_steps, waited / every_ms)`, the result never above 100 nor below
//! the priority it has.

use duraq_core::driver::AgingPass;
use duraq_core::{Result, MAX_PRIORITY};

use crate::tx::Tx;

/// The priority the wait of the row named `row` has earned at `$3` (`$5`:
/// the top priority, `$6`: the most steps, `$4`: the interval).
fn earned(row: &str) -> String {
    format!(
        "GREATEST({row}.priority, LEAST($5::int8, {row}.priority - {row}.aged_steps \
         + LEAST($6::int8, ($3::int8 - {row}.scheduled_at_ms) / $4::int8)))"
    )
}

/// Raises up to `pass.limit` of the queue's due jobs; how many changed.
pub(crate) async fn age_priorities(tx: &mut Tx<'_>, pass: &AgingPass) -> Result<u64> {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH due AS (SELECT c.id FROM {{s}}.duraq_jobs AS c WHERE c.status = 'queued' \
             AND c.queue = $1::text AND c.scheduled_at_ms >= $2::int8 \
             AND c.scheduled_at_ms <= $3::int8 - $4::int8 \
             AND c.priority < {c} LIMIT $7::int8 FOR UPDATE SKIP LOCKED) \
             UPDATE {{s}}.duraq_jobs AS j SET aged_steps = j.aged_steps + {j} - j.priority, \
             priority = {j} FROM due WHERE j.id = due.id",
            c = earned("c"),
            j = earned("j"),
        )
    });
    let limit = i64::try_from(pass.limit).unwrap_or(i64::MAX);
    let oldest = pass.oldest_due_ms.unwrap_or(i64::MIN);
    let changed = tx
        .db
        .execute(
            sql,
            &[
                &pass.queue,
                &oldest,
                &tx.now,
                &pass.aging.every_ms,
                &MAX_PRIORITY,
                &pass.aging.max_steps,
                &limit,
            ],
        )
        .await?;
    Ok(changed)
}
