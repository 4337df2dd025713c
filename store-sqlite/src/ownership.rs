//! What happens around a row's transition besides the row itself: concurrency
//! reservations (taken at claim, given back whenever a job leaves `handed_off`),
//! schedule-key ownership (released only by the job the key points at) and the
//! dependents a job settles when it becomes terminal ([`crate::release`]).
//! Every mutation (report, recovery, cancel, keyed cancel, retry) goes through here.

use duraq_core::driver::rules::{give_back, GiveBack};
use duraq_core::driver::ChildNotice;
use duraq_core::{Job, JobStatus, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::SqlResult;
use crate::rows::save_job;
use crate::tx::Tx;

/// Takes the claimed `job`'s reservation of `key` (cap `max`): as many
/// units as the job costs.
pub(crate) fn take_reservation(conn: &Connection, job: &Job, key: &str, max: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO duraq_concurrency (key, max_concurrency, active_count) VALUES (?1, ?2, ?3) \
         ON CONFLICT (key) DO UPDATE SET active_count = active_count + excluded.active_count, \
         max_concurrency = excluded.max_concurrency",
    )
    .db()?
    .execute(params![key, max, job.cost])
    .db()?;
    conn.prepare_cached("UPDATE duraq_jobs SET reservation_key = ?2 WHERE id = ?1")
        .db()?
        .execute(params![job.id, key])
        .db()?;
    Ok(())
}

/// What a caller already knows of a row's `reservation_key`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reservation<'a> {
    /// Not read with the row: [`release_reservation`] looks it up.
    Unknown,
    /// Read with the row (saves a lookup on the report path).
    Known(Option<&'a str>),
}

/// Gives back the reservation `job` holds, if any: as many units as it costs.
pub(crate) fn release_reservation(
    conn: &Connection,
    job: &Job,
    reservation: Reservation<'_>,
) -> Result<()> {
    let job_id = job.id.as_str();
    let looked_up;
    let key = match reservation {
        Reservation::Known(key) => key,
        Reservation::Unknown => {
            looked_up = conn
                .prepare_cached("SELECT reservation_key FROM duraq_jobs WHERE id = ?1")
                .db()?
                .query_row([job_id], |r| r.get::<_, Option<String>>(0))
                .optional()
                .db()?
                .flatten();
            looked_up.as_deref()
        }
    };
    if let Some(key) = key {
        conn.prepare_cached(
            "UPDATE duraq_concurrency SET active_count = MAX(active_count - ?2, 0) WHERE key = ?1",
        )
        .db()?
        .execute(params![key, job.cost])
        .db()?;
        conn.prepare_cached("UPDATE duraq_jobs SET reservation_key = NULL WHERE id = ?1")
            .db()?
            .execute([job_id])
            .db()?;
    }
    Ok(())
}

/// Drops the key's ownership if (and only if) it still points at `job`.
pub(crate) fn release_owner(conn: &Connection, job: &Job) -> Result<()> {
    if let Some(key) = &job.schedule_key {
        conn.prepare_cached("DELETE FROM duraq_schedule_keys WHERE key = ?1 AND job_id = ?2")
            .db()?
            .execute(params![key, job.id])
            .db()?;
    }
    Ok(())
}

/// Persists a transition of a row that was in `from`: saves it, counts the
/// move, and gives back what [`give_back`] says (the reservation, the schedule
/// key, the dependents; workers woken for a row queued again).
pub(crate) fn persist_transition(
    tx: &mut Tx<'_>,
    from: JobStatus,
    job: &Job,
    reservation: Reservation<'_>,
) -> Result<()> {
    save_job(tx.conn, job)?;
    count_and_give_back(tx, from, job, reservation)
}

/// [`persist_transition`] but the write of the row: the move counted and
/// what the job held given back (an ephemeral job's completion, which then
/// deletes the row instead of saving it).
pub(crate) fn count_and_give_back(
    tx: &mut Tx<'_>,
    from: JobStatus,
    job: &Job,
    reservation: Reservation<'_>,
) -> Result<()> {
    tx.moved(&job.queue, from, job.status);
    let GiveBack {
        reservation: gives_reservation,
        schedule_key,
        dependents,
        wake_workers,
        parent,
    } = give_back(from, job);
    if gives_reservation {
        release_reservation(tx.conn, job, reservation)?;
    }
    if schedule_key {
        release_owner(tx.conn, job)?;
    }
    if dependents {
        crate::release::release(tx, &job.id, job.status)?;
    }
    if wake_workers {
        tx.signal_work();
    }
    if let (true, Some(notice)) = (parent, ChildNotice::of(job)) {
        let delivered =
            crate::signals::signal(tx, &notice.parent_id, &notice.name, &notice.payload);
        ChildNotice::settle(delivered)?;
    }
    Ok(())
}
