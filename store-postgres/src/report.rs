//! Fenced reports, heartbeats, lease checks and lost-lease recovery
//! (`docs/jobs.md`).
//!
//! A report loads the row `FOR UPDATE`, checks its lease, applies the shared
//! transition from `duraq_core::driver::transitions`, and then gives back what the job
//! held ([`crate::ownership`]): its concurrency reservation when it leaves
//! `handed_off`, and its schedule key when it becomes terminal (only if the key
//! still points at it); a job made terminal that some job depends on has its
//! dependents settled in the same transaction ([`crate::release`], through
//! [`Tx::finished`]). A batch of completions takes the one-statement path of
//! [`crate::complete`].

use std::collections::HashMap;

use duraq_core::driver::rules::{give_back, GiveBack};
use duraq_core::driver::transitions::{apply_outcome, recover_lost};
use duraq_core::driver::ChildNotice;
use duraq_core::driver::{Lease, LeaseState};
use duraq_core::{Job, JobStatus, Outcome, Result};

use crate::backend::db::Db;
use crate::columns::REPORT_COLUMNS;
use crate::ownership::{give_back_held, release_owners, release_reservations};
use crate::rows::{loaded_from_row, save_jobs, Loaded, JOB_COLUMNS};
use crate::tx::Tx;

/// Records that `worker_id` is alive at `now`.
pub(crate) async fn heartbeat(db: &Db<'_>, worker_id: &str, now: i64) -> Result<()> {
    db.execute(HEARTBEAT, &[&worker_id, &now]).await?;
    Ok(())
}

pub(crate) const HEARTBEAT: &str =
    "INSERT INTO {s}.duraq_workers (worker_id, last_heartbeat_ms) VALUES ($1, $2) \
     ON CONFLICT (worker_id) DO UPDATE SET last_heartbeat_ms = $2";

/// Fenced reports, in order: each `false`, changing nothing, unless its lease
/// is current when its turn comes. All rows are locked in one statement (in id
/// order, so concurrent batches cannot deadlock on them), the transitions run in
/// memory, and reservations, schedule keys and rows are written back with one
/// statement each.
pub(crate) async fn report_many(
    tx: &mut Tx<'_>,
    reports: &[(Lease, Outcome)],
) -> Result<Vec<bool>> {
    if crate::complete::all_completions(reports) {
        return crate::complete::complete_many(tx, reports).await;
    }
    let mut ids: Vec<&str> = reports.iter().map(|(l, _)| l.job_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "SELECT {REPORT_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = ANY($1) \
             ORDER BY id COLLATE \"C\" FOR UPDATE"
        )
    });
    let mut loaded: HashMap<String, Loaded> = HashMap::with_capacity(ids.len());
    // Sent together (one round trip), the setting first (`biased`: polled in
    // this order), so it applies to the lookup.
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&ids];
    let (_, rows) = tokio::try_join!(
        biased;
        tx.db.by_key_only(),
        tx.db.query(sql, &params)
    )?;
    for row in rows {
        let l = loaded_from_row(&row)?;
        loaded.insert(l.job.id.clone(), l);
    }
    // Read with the rows locked: a signal delivered before now is seen here,
    // and one delivered after waits for this transaction and sees the wait.
    let waits: Vec<(&str, &str)> = (reports.iter())
        .filter_map(|(l, o)| Some((l.job_id.as_str(), o.awaited_signal()?)))
        .collect();
    let delivered = crate::signals::delivered(&tx.db, &waits).await?;
    let mut applied = Vec::with_capacity(reports.len());
    let mut changed: Vec<&str> = Vec::new();
    let mut released: Vec<(String, i64)> = Vec::new();
    let mut keys: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for (lease, outcome) in reports {
        let current = loaded
            .get_mut(&lease.job_id)
            .filter(|l| lease.holds(&l.job));
        let Some(Loaded {
            job,
            reservation,
            has_dependents,
        }) = current
        else {
            applied.push(false);
            continue;
        };
        let outcome = &outcome.clone().given_signals(delivered.contains(&job.id));
        apply_outcome(job, outcome, tx.now);
        tx.change.reported(&job.queue, outcome, job.status);
        // What `give_back_held` does for one row, gathered for one statement each.
        let GiveBack {
            reservation: gives_reservation,
            schedule_key,
            dependents,
            wake_workers,
            parent,
        } = give_back(JobStatus::HandedOff, job);
        if dependents && *has_dependents {
            tx.finished(&job.id, job.status);
        }
        if let (true, Some(notice)) = (parent, ChildNotice::of(job)) {
            tx.child_finished(notice);
        }
        tx.work |= wake_workers;
        if gives_reservation {
            released.extend(reservation.take().map(|key| (key, job.cost)));
        }
        if let (true, Some(key)) = (schedule_key, &job.schedule_key) {
            keys.0.push(key.clone());
            keys.1.push(job.id.clone());
        }
        changed.push(lease.job_id.as_str());
        applied.push(true);
    }
    if changed.is_empty() {
        return Ok(applied);
    }
    release_reservations(&tx.db, &released).await?;
    release_owners(&tx.db, &keys.0, &keys.1).await?;
    changed.sort_unstable();
    changed.dedup();
    let (deleted, kept): (Vec<&str>, Vec<&str>) = changed.iter().partition(|id| {
        let l = &loaded[**id];
        l.job.is_deleted_on_completion() && !l.has_dependents
    });
    let rows: Vec<(&Job, Option<&str>)> = kept.iter().map(|id| (&loaded[*id].job, None)).collect();
    save_jobs(&tx.db, &rows).await?;
    crate::ephemeral::delete_completed(tx, &deleted).await?;
    Ok(applied)
}

/// Recovers the leases of workers not heard from since `now - stale_after_ms`.
pub(crate) async fn recover_stale(tx: &mut Tx<'_>, stale_after_ms: i64) -> Result<Vec<String>> {
    let cutoff = tx.now.saturating_sub(stale_after_ms);
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs AS j WHERE j.status = 'handed_off' AND NOT EXISTS \
         (SELECT 1 FROM {{s}}.duraq_workers AS w WHERE w.worker_id = j.worker_id AND w.last_heartbeat_ms >= $1) \
         ORDER BY j.id COLLATE \"C\" FOR UPDATE OF j SKIP LOCKED"
    );
    let rows = tx.db.query(&sql, &[&cutoff]).await?;
    let mut lost = rows
        .iter()
        .map(loaded_from_row)
        .collect::<Result<Vec<_>>>()?;
    for Loaded {
        job,
        reservation,
        has_dependents,
    } in &mut lost
    {
        recover_lost(job, tx.now);
        tx.change.recovered(&job.queue, job.status);
        let (from, held) = (JobStatus::HandedOff, reservation.as_deref());
        give_back_held(tx, from, job, held, *has_dependents).await?;
    }
    let saved: Vec<(&Job, Option<&str>)> = lost.iter().map(|l| (&l.job, None)).collect();
    save_jobs(&tx.db, &saved).await?;
    let forget = duraq_core::driver::worker_forget_cutoff_ms(tx.now, stale_after_ms);
    tx.db
        .execute(
            "DELETE FROM {s}.duraq_workers WHERE last_heartbeat_ms < $1",
            &[&forget],
        )
        .await?;
    let mut ids: Vec<String> = lost.into_iter().map(|l| l.job.id).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The status and lease of each of `job_ids` that exists (the worker's lease
/// check).
pub(crate) async fn lease_states(db: &Db<'_>, job_ids: &[String]) -> Result<Vec<LeaseState>> {
    let rows = db
        .query(
            "SELECT id, status, handoff_id FROM {s}.duraq_jobs WHERE id = ANY($1)",
            &[&job_ids],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let status: String = r.get(1);
            Ok(LeaseState {
                job_id: r.get(0),
                status: status.parse()?,
                handoff_id: r.get(2),
            })
        })
        .collect()
}
