//! Completions, the report almost every attempt makes, in one statement.
//!
//! A general report ([`crate::report::report_many`]) locks and loads each row,
//! applies the outcome in Rust and writes every mutable column back: three
//! statements and a row lock per job. A completion needs none of that: the
//! transition (`duraq_core::driver::transitions::apply_outcome` with
//! `Outcome::Completed`) sets `status` and `completed_at_ms` and nothing else
//! (core declares and tests this shortcut:
//! [`duraq_core::driver::transitions::COMPLETION_CHANGES`]), and the lease check is a
//! comparison. So a batch of completions is one
//! `UPDATE … RETURNING`, fenced in its `WHERE` (still `handed_off`, same
//! handoff id); under READ COMMITTED a row changed by a concurrent cancel or
//! recovery is re-checked against that `WHERE` after the other transaction
//! commits, so a lost lease changes nothing, exactly as in the general path. The
//! rows' reservations and schedule keys are given back from what the statement
//! returns, and so is `has_dependents`: only a completed job some job depends
//! on has its dependents settled ([`crate::release`], same transaction), so a
//! batch of jobs nobody waits for pays nothing for dependencies. The
//! conformance and model suites hold both paths to the same rows.

use duraq_core::driver::{ChildNotice, Lease};
use duraq_core::{JobStatus, Outcome, Result};

use crate::backend::db::Db;
use crate::backend::row::Row;
use crate::ownership::{release_owners, release_reservations};
use crate::tx::Tx;

/// Whether `reports` may take [`complete_many`]: every outcome a completion,
/// each job reported once.
pub(crate) fn all_completions(reports: &[(Lease, Outcome)]) -> bool {
    if !reports.iter().all(|(_, o)| matches!(o, Outcome::Completed)) {
        return false;
    }
    let mut ids: Vec<&str> = reports.iter().map(|(l, _)| l.job_id.as_str()).collect();
    ids.sort_unstable();
    ids.windows(2).all(|w| w[0] != w[1])
}

/// Completes the leased jobs of `reports` (see [`all_completions`]); one entry
/// per report, `false` (nothing changed) where the lease is no longer current.
pub(crate) async fn complete_many(
    tx: &mut Tx<'_>,
    reports: &[(Lease, Outcome)],
) -> Result<Vec<bool>> {
    let rows = update_completed(&tx.db, reports, tx.now).await?;
    apply_completed(tx, reports, rows).await
}

/// The statement of [`complete_many`], which a claim's first round trip may
/// follow in the same pipeline (see `report_and_claim`): the rows completed.
/// No reports, no statement.
pub(crate) async fn update_completed(
    db: &Db<'_>,
    reports: &[(Lease, Outcome)],
    now: i64,
) -> Result<Vec<Row>> {
    if reports.is_empty() {
        return Ok(Vec::new());
    }
    // In id order, so concurrent statements lock rows in the same order.
    let mut leases: Vec<&Lease> = reports.iter().map(|(l, _)| l).collect();
    leases.sort_unstable_by(|a, b| a.job_id.cmp(&b.job_id));
    let ids: Vec<&str> = leases.iter().map(|l| l.job_id.as_str()).collect();
    let handoffs: Vec<&str> = leases.iter().map(|l| l.handoff_id.as_str()).collect();
    // The fence's status is a parameter, not a literal: a plan made for any
    // parameters (see `BY_KEY_ONLY`) cannot then prove the predicate of the
    // partial indexes on `status = 'handed_off'`, so it reaches each row by
    // primary key. With the literal, a plan made while few jobs ran read every
    // running job's index entry (live and dead) and hash-joined them against
    // the batch: measured with auto_explain, up to 5,000 entries per 55-job
    // batch, a cost growing with the running jobs rather than with the batch.
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&ids, &handoffs, &now, &JobStatus::HandedOff.as_str()];
    // The planner settings go in the same round trip, ahead of the update
    // (`biased`: polled in this order, so the setting is sent first even when
    // both statements are prepared anew).
    let (_, rows) = tokio::try_join!(
        biased;
        db.by_key_only(),
        db.query(
            // The row keeps its `reservation_key` (see `rows::Loaded`), so
            // the statement returns it without reading the row beforehand.
            "UPDATE {s}.duraq_jobs AS j SET status = 'completed', completed_at_ms = $3 \
             FROM unnest($1::text[], $2::text[]) AS v(id, handoff_id) \
             WHERE j.id = v.id AND j.status = $4::text AND j.handoff_id = v.handoff_id \
             RETURNING j.id, j.queue, j.schedule_key, j.reservation_key, j.has_dependents, j.cost, \
             j.keep_completed, j.parent_id",
            &params,
        )
    )?;
    Ok(rows)
}

/// Counts the rows [`update_completed`] completed, gives back their
/// reservations and schedule keys, and records those with dependents as
/// finished ([`Tx::finished`]).
pub(crate) async fn apply_completed(
    tx: &mut Tx<'_>,
    reports: &[(Lease, Outcome)],
    rows: Vec<Row>,
) -> Result<Vec<bool>> {
    let mut done: Vec<String> = Vec::with_capacity(rows.len());
    let mut released: Vec<(String, i64)> = Vec::new();
    let mut ephemeral: Vec<String> = Vec::new();
    let mut keys: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for row in &rows {
        let id: String = row.get(0);
        let queue: String = row.get(1);
        tx.change
            .moved(&queue, JobStatus::HandedOff, JobStatus::Completed);
        if let Some(key) = row.get::<_, Option<String>>(2) {
            keys.0.push(key);
            keys.1.push(id.clone());
        }
        if let Some(key) = row.get::<_, Option<String>>(3) {
            released.push((key, row.get(5)));
        }
        if let Some(parent) = row.get::<_, Option<String>>(7) {
            tx.child_finished(ChildNotice::completed(parent, &id));
        }
        if row.get::<_, bool>(4) {
            tx.finished(&id, JobStatus::Completed);
        } else if !row.get::<_, bool>(6) {
            ephemeral.push(id.clone());
        }
        done.push(id);
    }
    if !done.is_empty() {
        release_reservations(&tx.db, &released).await?;
        release_owners(&tx.db, &keys.0, &keys.1).await?;
        let ids: Vec<&str> = ephemeral.iter().map(String::as_str).collect();
        crate::ephemeral::delete_completed(tx, &ids).await?;
        tx.work = true;
    }
    done.sort_unstable();
    Ok(reports
        .iter()
        .map(|(l, _)| done.binary_search(&l.job_id).is_ok())
        .collect())
}
