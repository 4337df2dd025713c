//! Durable steps (`docs/durable.md`): a row per job and step name in
//! `duraq_job_steps`, a table of its own so that the jobs table and its hot
//! updates stay as they are. The output is JSON as text, as a job's is, so
//! it comes back exactly as the step returned it.
//!
//! A write is fenced by the lease like a report: the job row is read `FOR
//! SHARE` in the statement that inserts, so a report, cancel or recovery of
//! the same job waits for it or it sees theirs. The rows go when their job
//! is deleted ([`crate::progress::DELETE_WITH_JOBS`]). An ephemeral job's
//! first step also marks its row (`has_durable_rows`), so that the completion
//! that deletes it knows to delete its steps ([`crate::ephemeral`]); a kept
//! job's statement has no such part, which would cost every step.

use duraq_core::driver::StepWrite;
use duraq_core::inspect::StepRecord;
use duraq_core::Result;

use crate::backend::db::Db;
use crate::error::corrupt;

/// After a `held` part (the job's id when the lease holds): inserts the
/// step (a name already recorded keeps its first record), then reads what
/// the name holds; no row when the lease does not hold.
macro_rules! insert_and_read {
    () => {
        "added AS (INSERT INTO {s}.duraq_job_steps (job_id, name, output, at_ms, attempt) \
         SELECT id, $3, $4, $5, $6 FROM held ON CONFLICT (job_id, name) DO NOTHING \
         RETURNING name, output, at_ms, attempt) \
         SELECT name, output, at_ms, attempt FROM added \
         UNION ALL SELECT s.name, s.output, s.at_ms, s.attempt \
         FROM {s}.duraq_job_steps AS s, held \
         WHERE s.job_id = $1 AND s.name = $3 AND NOT EXISTS (SELECT 1 FROM added)"
    };
}

/// Records a kept job's step.
const RECORD: &str = concat!(
    "WITH held AS (SELECT id FROM {s}.duraq_jobs \
     WHERE id = $1 AND status = 'handed_off' AND handoff_id = $2 FOR SHARE), ",
    insert_and_read!()
);

/// Records an ephemeral job's step, marking the row held as having steps
/// (once: a marked row is not written again).
const RECORD_EPHEMERAL: &str = concat!(
    "WITH held AS (SELECT id, has_durable_rows FROM {s}.duraq_jobs \
     WHERE id = $1 AND status = 'handed_off' AND handoff_id = $2 FOR UPDATE), \
     marked AS (UPDATE {s}.duraq_jobs SET has_durable_rows = true \
     WHERE id = (SELECT id FROM held WHERE NOT has_durable_rows)), ",
    insert_and_read!()
);

/// Records one step under its lease, in one statement; `None` (nothing
/// written) when the lease is stale, else the record stored under the name.
pub(crate) async fn record(db: &Db<'_>, write: &StepWrite, now: i64) -> Result<Option<StepRecord>> {
    let output = serde_json::to_string(&write.output).expect("JSON values serialize");
    let row = db
        .query_opt(
            if write.keep_completed {
                RECORD
            } else {
                RECORD_EPHEMERAL
            },
            &[
                &write.lease.job_id,
                &write.lease.handoff_id,
                &write.name,
                &output,
                &now,
                &write.attempt,
            ],
        )
        .await?;
    row.map(|r| step_of(r.get(0), r.get(1), r.get(2), r.get(3)))
        .transpose()
}

/// A job's records, by time then name, in one statement.
pub(crate) async fn get(db: &Db<'_>, job_id: &str) -> Result<Vec<StepRecord>> {
    let rows = db
        .query(
            "SELECT name, output, at_ms, attempt FROM {s}.duraq_job_steps \
             WHERE job_id = $1 ORDER BY at_ms, name COLLATE \"C\"",
            &[&job_id],
        )
        .await?;
    rows.iter()
        .map(|r| step_of(r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

fn step_of(name: String, output: String, at_ms: i64, attempt: i64) -> Result<StepRecord> {
    let output = serde_json::from_str(&output)
        .map_err(|e| corrupt(format!("step {name:?} holds no JSON: {e}")))?;
    Ok(StepRecord {
        name,
        output,
        at_ms,
        attempt,
    })
}
