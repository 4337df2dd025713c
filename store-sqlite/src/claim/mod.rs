//! Claiming (`docs/jobs.md`) in one write transaction.
//!
//! Queue priority is resolved into *levels* before any SQL runs (core's
//! `claim_levels`): each level is a set of queues (or "every queue not given
//! another priority"), visited from the highest priority down. Within a level,
//! each job priority that queued jobs hold (found by one index seek per
//! priority, highest first) is walked on the
//! `(priority, scheduled_at_ms, created_at_ms, id)` claim index of the jobs
//! without a fairness key: equality on the priority, a range on the due time,
//! in claim order, a page at a time with a keyset cursor, so a large backlog is
//! never sorted and future jobs of a high priority never stand in the way of
//! due jobs of a lower one. Once some queued job has a fairness key, each walk
//! takes fair turns between keys instead ([`crate::claim::turns`]). A job whose rate
//! key is saturated stays queued with a later `scheduledAtMs` (see
//! [`crate::rate`]). A job
//! whose concurrency key is at its cap (counting reservations taken earlier in
//! this same claim) is skipped, never blocking the jobs behind it; so is every
//! job of a paused queue (`NOT IN` the small `duraq_paused_queues` table, read
//! once per statement inside the claim's own write transaction, so a pause
//! committed before the claim began is always seen).

use duraq_core::driver::rules::{claim_levels, QueueSet, SequenceHead};
use duraq_core::driver::steps::{run_ready, take_turns, AdmissionReads, Claim, ClaimPlan, Taken};
use duraq_core::driver::{ClaimRequest, RateWindow};
use duraq_core::{Job, JobStatus, RateLimit, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::ownership::{persist_transition, take_reservation, Reservation};
use crate::rate;
use crate::report::heartbeat;
use crate::rows::{json_text, save_job};
use crate::tx::Tx;
use turns::Walk;

mod turns;

/// The distinct priorities of queued jobs, highest first: one index seek each
/// (at most 201) in the index of the jobs without a fairness key and in that
/// of the jobs with one, so a claim visits only priorities that hold jobs.
pub(crate) fn queued_priorities(conn: &rusqlite::Connection) -> Result<Vec<i64>> {
    let mut priorities = Vec::new();
    for sql in [
        "SELECT priority FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
         WHERE status = 'queued' AND fairness_key IS NULL AND priority < ?1 \
         ORDER BY priority DESC LIMIT 1",
        "SELECT priority FROM duraq_jobs INDEXED BY duraq_jobs_fair \
         WHERE status = 'queued' AND fairness_key IS NOT NULL AND priority < ?1 \
         ORDER BY priority DESC LIMIT 1",
    ] {
        let mut stmt = conn.prepare_cached(sql).db()?;
        let mut below = i64::MAX;
        while let Some(p) = stmt
            .query_row([below], |r| r.get::<_, i64>(0))
            .optional()
            .db()?
        {
            priorities.push(p);
            below = p;
        }
    }
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    Ok(priorities)
}

/// Whether any queued job has a fairness key: without one, a claim walks the
/// plain claim index in pages, as it did before keys existed.
fn any_keyed(conn: &Connection) -> Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM duraq_jobs INDEXED BY duraq_jobs_fair_due \
         WHERE status = 'queued' AND fairness_key IS NOT NULL)",
    )
    .db()?
    .query_row([], |r| r.get(0))
    .db()
}

/// Claims up to `req.limit` due jobs and records the worker's heartbeat.
pub(crate) fn claim(tx: &mut Tx<'_>, req: &ClaimRequest) -> Result<Vec<Job>> {
    heartbeat(tx, &req.worker_id)?;
    if req.limit == 0 || req.job_names.is_empty() {
        return Ok(Vec::new());
    }
    let names = json_text(&req.job_names)?;
    let page_size = (req.limit.saturating_mul(2)).clamp(32, 1_000) as i64;
    let priorities = queued_priorities(tx.conn)?;
    let keyed = any_keyed(tx.conn)?;
    let mut claim = Claim::new(req, tx.now);
    'levels: for level in claim_levels(req) {
        let (op, queues) = match &level {
            QueueSet::In(qs) => ("IN", qs),
            QueueSet::NotIn(qs) => ("NOT IN", qs),
        };
        let queues = json_text(queues)?;
        for priority in &priorities {
            let walk = Walk {
                conn: tx.conn,
                now: tx.now,
                names: &names,
                op,
                queues: &queues,
                level: &level,
                priority: *priority,
            };
            if keyed {
                let mut lanes = walk;
                let mut reads = Reads(tx.conn);
                run_ready(take_turns(&mut claim, &req.turns, &mut lanes, &mut reads))?;
            } else {
                let mut cursor: Option<Job> = None;
                loop {
                    let page = walk.plain_page(cursor.as_ref(), page_size)?;
                    let full = page.len() as i64 == page_size;
                    for job in page {
                        cursor = Some(job.clone());
                        if claim.is_full() {
                            break 'levels;
                        }
                        run_ready(claim.consider(job, &mut Reads(tx.conn)))?;
                    }
                    if claim.is_full() || !full {
                        break;
                    }
                }
            }
            if claim.is_full() {
                break 'levels;
            }
        }
    }
    write(tx, claim.finish())
}

/// The admission's reads, in the claim's write transaction: the one write lock
/// keeps them exact until it commits.
pub(crate) struct Reads<'c>(pub(crate) &'c Connection);

impl AdmissionReads for Reads<'_> {
    async fn active_reservations(&mut self, key: &str, _max: i64) -> Result<i64> {
        let active = self
            .0
            .prepare_cached("SELECT active_count FROM duraq_concurrency WHERE key = ?1")
            .db()?
            .query_row([key], |r| r.get(0))
            .optional()
            .db()?;
        Ok(active.unwrap_or(0))
    }

    async fn rate_window(&mut self, limit: &RateLimit) -> Result<Option<RateWindow>> {
        rate::load_window(self.0, limit).map(Some)
    }

    async fn sequence_head(&mut self, key: &str) -> Result<SequenceHead> {
        let first = self
            .0
            .prepare_cached(
                "SELECT created_at_ms, id FROM duraq_jobs INDEXED BY duraq_jobs_sequence \
                 WHERE sequence_key = ?1 \
                 AND status IN ('queued', 'handed_off', 'failed', 'orphaned') \
                 AND (status IN ('queued', 'handed_off') OR sequence_continues = 0) \
                 ORDER BY created_at_ms, id LIMIT 1",
            )
            .db()?
            .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .db()?;
        let running = self
            .0
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM duraq_jobs INDEXED BY duraq_jobs_sequence \
                 WHERE sequence_key = ?1 \
                 AND status IN ('queued', 'handed_off', 'failed', 'orphaned') \
                 AND status = 'handed_off')",
            )
            .db()?
            .query_row([key], |r| r.get(0))
            .db()?;
        Ok(SequenceHead { first, running })
    }
}

/// Writes what the claim decided: postponed rows, rate starts, rows moved out
/// of `queued` (as any transition), then each claimed row with its reservation.
fn write(tx: &mut Tx<'_>, plan: ClaimPlan) -> Result<Vec<Job>> {
    for job in &plan.postponed {
        save_job(tx.conn, job)?;
    }
    for limit in &plan.rate_starts {
        rate::log_start(tx.conn, limit, tx.now)?;
    }
    for job in &plan.moved {
        persist_transition(tx, JobStatus::Queued, job, Reservation::Known(None))?;
    }
    let mut claimed = Vec::with_capacity(plan.taken.len());
    for Taken { job, reservation } in plan.taken {
        save_job(tx.conn, &job)?;
        if let Some((key, max)) = reservation {
            take_reservation(tx.conn, &job, &key, max)?;
        }
        tx.moved(&job.queue, JobStatus::Queued, JobStatus::HandedOff);
        claimed.push(job);
    }
    Ok(claimed)
}

/// The earliest `scheduledAtMs` among matching queued jobs (an index walk in
/// `scheduled_at_ms` order that stops at the first match).
pub(crate) fn next_scheduled_at(
    conn: &Connection,
    job_names: &[String],
    queues: Option<&[String]>,
) -> Result<Option<i64>> {
    let queues = queues.map(json_text).transpose()?;
    let names = json_text(&job_names)?;
    // One plain claim-index range per priority that queued jobs hold, and
    // the front of the keyed jobs' index by due time.
    let mut stmt = conn
        .prepare_cached(
            "SELECT scheduled_at_ms FROM duraq_jobs INDEXED BY duraq_jobs_claim_plain \
             WHERE status = 'queued' AND fairness_key IS NULL AND priority = ?3 \
             AND job_name IN (SELECT value FROM json_each(?1)) \
             AND (?2 IS NULL OR queue IN (SELECT value FROM json_each(?2))) \
             AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
             ORDER BY scheduled_at_ms LIMIT 1",
        )
        .db()?;
    let mut earliest: Option<i64> = conn
        .prepare_cached(
            "SELECT scheduled_at_ms FROM duraq_jobs INDEXED BY duraq_jobs_fair_due \
             WHERE status = 'queued' AND fairness_key IS NOT NULL \
             AND job_name IN (SELECT value FROM json_each(?1)) \
             AND (?2 IS NULL OR queue IN (SELECT value FROM json_each(?2))) \
             AND queue NOT IN (SELECT queue FROM duraq_paused_queues) \
             ORDER BY scheduled_at_ms LIMIT 1",
        )
        .db()?
        .query_row(params![names, queues], |r| r.get(0))
        .optional()
        .db()?;
    for priority in queued_priorities(conn)? {
        let next: Option<i64> = stmt
            .query_row(params![names, queues, priority], |r| r.get(0))
            .optional()
            .db()?;
        earliest = match (earliest, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    Ok(earliest)
}
