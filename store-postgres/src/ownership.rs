//! What a job holds besides its row, given back around its transitions: its
//! concurrency reservation (taken by the claim, given back whenever the job
//! leaves `handed_off`) and its schedule key's ownership
//! (`duraq_schedule_owners`, released only by the job the key points at), plus
//! the per-key advisory lock. The keyed calls ([`crate::schedule`]), reports
//! ([`crate::report`], [`crate::complete`]) and operator actions
//! ([`crate::admin`]) all need these primitives, kept apart so that those
//! modules depend on this one and not on each other.

use duraq_core::driver::rules::{give_back, GiveBack};
use duraq_core::driver::ChildNotice;
use duraq_core::{Job, JobStatus, Result};

use crate::backend::db::Db;
use crate::rows::save_jobs;
use crate::tx::Tx;

/// Serializes every mutation of `key` in this schema until the transaction ends.
pub(crate) async fn lock_key(db: &Db<'_>, key: &str) -> Result<()> {
    let class = format!("duraq.schedule:{}", db.names.schema);
    db.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))::text",
        &[&class, &key],
    )
    .await?;
    Ok(())
}

/// Drops `key`'s ownership if (and only if) it still points at `job_id`.
pub(crate) async fn release_owner(db: &Db<'_>, key: Option<&str>, job_id: &str) -> Result<()> {
    if let Some(key) = key {
        db.execute(
            "DELETE FROM {s}.duraq_schedule_owners WHERE schedule_key = $1 AND job_id = $2",
            &[&key, &job_id],
        )
        .await?;
    }
    Ok(())
}

/// [`release_owner`] for many (key, job) pairs at once.
pub(crate) async fn release_owners(db: &Db<'_>, keys: &[String], job_ids: &[String]) -> Result<()> {
    if !keys.is_empty() {
        db.execute(
            "DELETE FROM {s}.duraq_schedule_owners AS o USING unnest($1::text[], $2::text[]) AS v(k, j) \
             WHERE o.schedule_key = v.k AND o.job_id = v.j",
            &[&keys, &job_ids],
        )
        .await?;
    }
    Ok(())
}

/// Makes `job_id` the owner of `key` unless the key has one.
pub(crate) async fn claim_ownership_if_free(db: &Db<'_>, key: &str, job_id: &str) -> Result<()> {
    db.execute(
        "INSERT INTO {s}.duraq_schedule_owners (schedule_key, job_id) VALUES ($1, $2) \
         ON CONFLICT (schedule_key) DO NOTHING",
        &[&key, &job_id],
    )
    .await?;
    Ok(())
}

/// Gives back `units` reservations of `key` (a job's cost).
pub(crate) async fn release_reservation(db: &Db<'_>, key: Option<&str>, units: i64) -> Result<()> {
    if let Some(key) = key {
        db.execute(
            "UPDATE {s}.duraq_concurrency SET active = GREATEST(active - $2, 0) \
             WHERE concurrency_key = $1",
            &[&key, &units],
        )
        .await?;
    }
    Ok(())
}

/// Gives back each entry's units of its key (a key may repeat): one entry
/// per job, with the job's cost.
pub(crate) async fn release_reservations(db: &Db<'_>, held: &[(String, i64)]) -> Result<()> {
    match held {
        [] => Ok(()),
        [(key, units)] => release_reservation(db, Some(key), *units).await,
        _ => {
            let (keys, units): (Vec<&str>, Vec<i64>) =
                held.iter().map(|(k, n)| (k.as_str(), *n)).unzip();
            db.execute(
                "UPDATE {s}.duraq_concurrency AS c SET active = GREATEST(c.active - v.n, 0) \
                 FROM (SELECT k, sum(n)::int8 AS n FROM unnest($1::text[], $2::int8[]) AS t(k, n) \
                 GROUP BY k) AS v WHERE c.concurrency_key = v.k",
                &[&keys, &units],
            )
            .await?;
            Ok(())
        }
    }
}

/// Gives back what `job`, just moved out of `from`, held ([`give_back`]):
/// `reservation` and `has_dependents` are what its row held when loaded.
pub(crate) async fn give_back_held(
    tx: &mut Tx<'_>,
    from: JobStatus,
    job: &Job,
    reservation: Option<&str>,
    has_dependents: bool,
) -> Result<()> {
    let GiveBack {
        reservation: gives_reservation,
        schedule_key,
        dependents,
        wake_workers,
        parent,
    } = give_back(from, job);
    if dependents && has_dependents {
        tx.finished(&job.id, job.status);
    }
    if let (true, Some(notice)) = (parent, ChildNotice::of(job)) {
        tx.child_finished(notice);
    }
    if wake_workers {
        tx.work = true;
    }
    if gives_reservation {
        release_reservation(&tx.db, reservation, job.cost).await?;
    }
    if schedule_key {
        release_owner(&tx.db, job.schedule_key.as_deref(), &job.id).await?;
    }
    Ok(())
}

/// Writes rows just moved out of `queued` without being claimed (an expired
/// job cancelled by a claim or by the recovery pass): the counts, what each
/// gives back ([`give_back_held`]; a queued job holds no reservation), the
/// rows. `has_dependents` answers from the rows as they were loaded.
pub(crate) async fn write_moved_from_queued(
    tx: &mut Tx<'_>,
    moved: &[Job],
    has_dependents: impl Fn(&str) -> bool,
) -> Result<()> {
    for job in moved {
        tx.change.moved(&job.queue, JobStatus::Queued, job.status);
        give_back_held(tx, JobStatus::Queued, job, None, has_dependents(&job.id)).await?;
    }
    let rows: Vec<(&Job, Option<&str>)> = moved.iter().map(|j| (j, None)).collect();
    save_jobs(&tx.db, &rows).await
}
