//! Stable schedule keys (`docs/schedule-keys.md`).
//!
//! Every mutation of a key first takes `pg_advisory_xact_lock(schema, key)`, so
//! replacements of one key from any number of processes run one after another and
//! exactly one owner remains. Lock order is always key → owner job row → owner
//! row; a report that releases a key (job row → owner row, deleting only if the
//! key still points at its job) therefore cannot deadlock with a replacement, and
//! a superseded job can never remove a newer owner. The high-water mark lives in
//! its own table, so it survives owner release and pruning.

use duraq_core::driver::rules::{
    check_replacement, owner_on_cancel, owner_on_replace, owner_on_wake, OwnerFate,
};
use duraq_core::driver::transitions::new_job_row;
use duraq_core::inspect::ScheduledJobs;
use duraq_core::{
    CancelOutcome, JobStatus, KeyedOutcome, NewJob, ReplaceOutcome, Result, RunningOwner,
    ScheduleKey, WakeOutcome,
};

use crate::backend::db::Db;
use crate::enqueue::register_limits;
use crate::insert::insert_jobs;
use crate::ownership::lock_key;
use crate::rows::{job_from_row, lock_job, Loaded, JOB_COLUMNS};
use crate::tx::Tx;

/// Takes `key`'s lock and, in the same round trip, the settings of
/// [`BY_KEY_ONLY`](crate::backend::plans::BY_KEY_ONLY) (`biased`: sent first). Every statement of a key's
/// transaction reaches its rows by key. Left to `plan_cache_mode = auto`,
/// the write-back of a replaced owner's row (`save_jobs`: arrays of unknown
/// length) was planned afresh on nearly every replace once the table had
/// statistics: 4,572 plans in 4,999 calls, 690 ms of planning against 411
/// ms of execution (`pg_stat_statements`, the `replace` scenario).
async fn lock_key_by_key_only(db: &Db<'_>, key: &str) -> Result<()> {
    tokio::try_join!(biased; db.by_key_only(), lock_key(db, key))?;
    Ok(())
}

/// The key's current owner, its row locked. Call with the key lock held.
async fn locked_owner(db: &Db<'_>, key: &str) -> Result<Option<Loaded>> {
    let owner_sql = "SELECT job_id FROM {s}.duraq_schedule_owners WHERE schedule_key = $1";
    let Some(row) = db.query_opt(owner_sql, &[&key]).await? else {
        return Ok(None);
    };
    let id: String = row.get(0);
    let job = lock_job(db, &id).await?;
    // Under the key lock the owner can only have been released meanwhile.
    let still: Option<String> = db.query_opt(owner_sql, &[&key]).await?.map(|r| r.get(0));
    Ok(job.filter(|_| still.as_deref() == Some(id.as_str())))
}

/// Persists what a replace or cancel decided for the key's (locked) owner: a
/// cancel as by an operator, which voids a running owner's lease and gives
/// back its reservation.
async fn cancel_owner(tx: &mut Tx<'_>, owner: Loaded, fate: OwnerFate) -> Result<()> {
    if fate.cancels() {
        crate::admin::cancel_loaded(tx, owner).await?;
    }
    Ok(())
}

pub(crate) async fn replace(
    tx: &mut Tx<'_>,
    key: &ScheduleKey,
    job: &NewJob,
    running: RunningOwner,
) -> Result<ReplaceOutcome> {
    check_replacement(job)?;
    let key = key.as_str();
    lock_key_by_key_only(&tx.db, key).await?;
    register_limits(tx, job).await?;
    let previous = locked_owner(&tx.db, key).await?;
    let mut previous_status = None;
    let mut previous_stopped = false;
    let previous_job_id = previous.as_ref().map(|p| p.job.id.clone());
    if let Some(loaded) = previous {
        previous_status = Some(loaded.job.status);
        let fate = owner_on_replace(loaded.job.status, running);
        cancel_owner(tx, loaded, fate).await?;
        previous_stopped = fate == OwnerFate::Stop;
    }
    let order: i64 = tx
        .db
        .query_one(
            "INSERT INTO {s}.duraq_schedule_orders (schedule_key, high_water) VALUES ($1, 1) \
             ON CONFLICT (schedule_key) DO UPDATE SET high_water = duraq_schedule_orders.high_water + 1 \
             RETURNING high_water",
            &[&key],
        )
        .await?
        .get(0);
    let mut row = new_job_row(job, tx.now);
    row.schedule_key = Some(key.to_owned());
    row.schedule_order = Some(order);
    insert_jobs(
        &tx.db,
        std::slice::from_ref(job),
        std::slice::from_ref(&row),
    )
    .await?;
    tx.db
        .execute(
            "INSERT INTO {s}.duraq_schedule_owners (schedule_key, job_id) VALUES ($1, $2) \
             ON CONFLICT (schedule_key) DO UPDATE SET job_id = excluded.job_id",
            &[&key, &row.id],
        )
        .await?;
    tx.change.added(&row.queue, JobStatus::Queued);
    tx.work = true;
    Ok(ReplaceOutcome {
        job_id: row.id,
        previous_job_id,
        previous_status,
        previous_stopped,
    })
}

pub(crate) async fn cancel(
    tx: &mut Tx<'_>,
    key: &ScheduleKey,
    running: RunningOwner,
) -> Result<KeyedOutcome<CancelOutcome>> {
    let key = key.as_str();
    lock_key_by_key_only(&tx.db, key).await?;
    let Some(loaded) = locked_owner(&tx.db, key).await? else {
        return Ok(KeyedOutcome {
            job_id: None,
            outcome: CancelOutcome::NotFound,
        });
    };
    tx.db
        .execute(
            "DELETE FROM {s}.duraq_schedule_owners WHERE schedule_key = $1",
            &[&key],
        )
        .await?;
    let owner_id = loaded.job.id.clone();
    let (fate, outcome) = owner_on_cancel(loaded.job.status, running);
    cancel_owner(tx, loaded, fate).await?;
    Ok(KeyedOutcome {
        job_id: Some(owner_id),
        outcome,
    })
}

pub(crate) async fn wake(tx: &mut Tx<'_>, key: &ScheduleKey) -> Result<KeyedOutcome<WakeOutcome>> {
    let key = key.as_str();
    lock_key_by_key_only(&tx.db, key).await?;
    let Some(Loaded { job: owner, .. }) = locked_owner(&tx.db, key).await? else {
        return Ok(KeyedOutcome {
            job_id: None,
            outcome: WakeOutcome::NotFound,
        });
    };
    let outcome = owner_on_wake(&owner, tx.now);
    if outcome == WakeOutcome::Woken {
        tx.db
            .execute(
                "UPDATE {s}.duraq_jobs SET scheduled_at_ms = $2 WHERE id = $1",
                &[&owner.id, &tx.now],
            )
            .await?;
        tx.work = true;
    }
    Ok(KeyedOutcome {
        job_id: Some(owner.id),
        outcome,
    })
}

/// The owner and (when asked) the newest terminal job carrying the key.
pub(crate) async fn get(
    db: &Db<'_>,
    key: &ScheduleKey,
    include_latest_terminal: bool,
) -> Result<ScheduledJobs> {
    let key = key.as_str();
    let current = db
        .query_opt(
            &format!(
                "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE id = \
                 (SELECT job_id FROM {{s}}.duraq_schedule_owners WHERE schedule_key = $1)"
            ),
            &[&key],
        )
        .await?;
    let latest = if include_latest_terminal {
        db.query_opt(
            &format!(
                "SELECT {JOB_COLUMNS} FROM {{s}}.duraq_jobs WHERE schedule_key = $1 \
                 AND status IN ('completed', 'failed', 'cancelled', 'orphaned') \
                 ORDER BY schedule_order DESC NULLS LAST, created_at_ms DESC, id COLLATE \"C\" DESC LIMIT 1"
            ),
            &[&key],
        )
        .await?
    } else {
        None
    };
    Ok(ScheduledJobs {
        current_job: current.as_ref().map(job_from_row).transpose()?,
        latest_terminal_job: latest.as_ref().map(job_from_row).transpose()?,
    })
}
