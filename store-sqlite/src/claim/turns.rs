//! The candidates of one claim walk (a queue-priority level and one job
//! priority), read in the claim's write transaction: the jobs without a
//! fairness key from the plain claim index, a page at a time with a keyset
//! cursor, and each key's from `duraq_jobs_fair`, led by
//! `(priority, queue, fairness_key)`, so a key's due jobs are one seek and
//! the next key after another is one more (core's `take_turns` decides the
//! order). A key's backlog is never walked to reach another key's jobs.

use duraq_core::driver::rules::QueueSet;
use duraq_core::driver::steps::{Turn, TurnReads};
use duraq_core::{Job, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::columns::JOB_COLUMNS;
use crate::error::SqlResult;
use crate::rows::query_jobs;

/// One walk of a claim.
pub(crate) struct Walk<'a> {
    pub conn: &'a Connection,
    pub now: i64,
    /// The worker's job names, as JSON text.
    pub names: &'a str,
    /// `IN` or `NOT IN` the level's queues.
    pub op: &'static str,
    /// The level's queues, as JSON text.
    pub queues: &'a str,
    pub level: &'a QueueSet,
    pub priority: i64,
}

/// `(scheduledAtMs, createdAtMs, id)` after `job`, or before every job.
fn cursor(after: Option<&Job>) -> (i64, i64, String) {
    after.map_or((i64::MIN, i64::MIN, String::new()), |j| {
        (j.scheduled_at_ms, j.created_at_ms, j.id.clone())
    })
}

impl Walk<'_> {
    /// Up to `n` due jobs without a fairness key after `after`, in claim
    /// order. Pinned to the plain claim index: without statistics, a claim
    /// naming its queues would otherwise pick the per-queue index of queue
    /// latency (`duraq_jobs_queue_due`) and sort every due job of them.
    pub fn plain_page(&self, after: Option<&Job>, n: i64) -> Result<Vec<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
             WHERE status = 'queued' AND fairness_key IS NULL \
             AND priority = ?8 AND scheduled_at_ms <= ?1 \
             AND job_name IN (SELECT value FROM json_each(?2)) \
             AND queue {} (SELECT value FROM json_each(?3)) \
             AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
             AND (scheduled_at_ms, created_at_ms, id) > (?4, ?5, ?6) \
             ORDER BY scheduled_at_ms, created_at_ms, id LIMIT ?7",
            self.op
        );
        let (at, created, id) = cursor(after);
        query_jobs(
            self.conn,
            &sql,
            params![
                self.now,
                self.names,
                self.queues,
                at,
                created,
                id,
                n,
                self.priority
            ],
        )
    }

    /// Up to `n` due jobs of fairness key `key` in `queue` after `after`.
    fn keyed_page(&self, queue: &str, key: &str, after: Option<&Job>, n: i64) -> Result<Vec<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM duraq_jobs INDEXED BY duraq_jobs_fair \
             WHERE status = 'queued' AND fairness_key = ?9 AND queue = ?3 \
             AND priority = ?8 AND scheduled_at_ms <= ?1 \
             AND job_name IN (SELECT value FROM json_each(?2)) \
             AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
             AND (scheduled_at_ms, created_at_ms, id) > (?4, ?5, ?6) \
             ORDER BY scheduled_at_ms, created_at_ms, id LIMIT ?7"
        );
        let (at, created, id) = cursor(after);
        query_jobs(
            self.conn,
            &sql,
            params![
                self.now,
                self.names,
                queue,
                at,
                created,
                id,
                n,
                self.priority,
                key
            ],
        )
    }

    /// The first key after `key` in `queue` at this walk's priority: one
    /// seek. (A row-value range `(queue, fairness_key) > (?, ?)` reads every
    /// index entry of the lane it starts after: 258 ms behind a million jobs
    /// of one key, measured.)
    fn key_after(&self, queue: &str, key: &str) -> Result<Option<(String, String)>> {
        self.conn
            .prepare_cached(
                "SELECT queue, fairness_key FROM duraq_jobs INDEXED BY duraq_jobs_fair \
                 WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = ?1 \
                 AND queue = ?2 AND fairness_key > ?3 ORDER BY fairness_key LIMIT 1",
            )
            .db()?
            .query_row(params![self.priority, queue, key], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .db()
    }

    /// The first queue after `queue` holding keyed jobs at this priority.
    fn queue_after(&self, queue: &str) -> Result<Option<(String, String)>> {
        self.conn
            .prepare_cached(
                "SELECT queue, fairness_key FROM duraq_jobs INDEXED BY duraq_jobs_fair \
                 WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority = ?1 \
                 AND queue > ?2 ORDER BY queue, fairness_key LIMIT 1",
            )
            .db()?
            .query_row(params![self.priority, queue], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .db()
    }
}

impl TurnReads for Walk<'_> {
    async fn next_lane(&mut self, after: Option<(&str, &str)>) -> Result<Option<(String, String)>> {
        // Queue names and keys are never empty: ("", "") is before every lane.
        let (queue, key) = after.unwrap_or(("", ""));
        let mut next = match self.key_after(queue, key)? {
            Some(lane) => Some(lane),
            None => self.queue_after(queue)?,
        };
        // A queue outside the level is passed by whole, one seek.
        while let Some((queue, _)) = &next {
            if self.level.contains(queue) {
                break;
            }
            next = self.queue_after(queue)?;
        }
        Ok(next)
    }

    async fn candidates(&mut self, lane: &Turn, after: Option<&Job>, n: usize) -> Result<Vec<Job>> {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        match lane {
            Turn::Unkeyed => self.plain_page(after, n),
            Turn::Key { queue, key } => self.keyed_page(queue, key, after, n),
        }
    }
}
