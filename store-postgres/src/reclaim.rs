//! Reclaiming the live jobs' dead row versions: this store's upkeep
//! ([`duraq_core::WorkerStore::upkeep`]), which every worker runs for it.
//!
//! Why: a claim and a completion each write a new version of a job's row,
//! and the claim index (`status = 'queued'`) keeps an entry for every job that
//! was ever queued until VACUUM removes it. A scan marks such entries dead, but
//! B-tree pages only drop dead entries when an insert would split them, and the
//! dead ones sit on old pages in front of every live job: each claim walks them
//! all. Measured on PostgreSQL 15 with a drained backlog of 1,000,000 jobs, a
//! 10-job claim read 11,700 index pages (91 ms); after one VACUUM it read 23
//! (0.1 ms). Autovacuum looks at a database once a minute at most, so a
//! lived-in queue pays this for up to a minute after every burst. Workers
//! therefore run the upkeep at start (before their first claim) and every two
//! seconds, and it reclaims once enough dead rows wait, never more often than
//! its own cost allows ([`reclaim_due`]).
//!
//! (A first version vacuumed the whole job table, history included, and was
//! taken out: freeing space in every old page scattered new rows over the
//! history, and batch enqueue behind 1,000,000 kept jobs fell from 72,519 to
//! 6,206 jobs/s. Keeping finished jobs in a partition of their own is what
//! makes the reclaim cheap.)
//!
//! The server's own count of dead rows in `duraq_jobs_live` decides, and the
//! VACUUM removes them from that partition only (the finished jobs are not
//! read).
//!
//! `pg_stat_user_tables` is read for the count (kept by the server as
//! transactions end, so a few hundred milliseconds behind) and for when anyone,
//! autovacuum included, last vacuumed the table: a fleet of workers then
//! reclaims about as often as one would. `VACUUM (ANALYZE)` runs outside a
//! transaction on a pooled connection (in autocommit, so also behind a
//! transaction-mode pooler); it takes no lock that claims, reports or
//! enqueues wait for, and it refreshes the planner's statistics of a table
//! that grew from empty. Only the table's owner (or a member of its role, or a
//! superuser) may VACUUM it; for any other role [`dead_rows`] reports none, so
//! its workers never try and autovacuum remains the only reclaimer.

use std::sync::atomic::Ordering;
use std::time::Instant;

use duraq_core::driver::Upkeep;
use duraq_core::Result;

use crate::backend::db::{pooled, Conn, Db};
use crate::Shared;

/// What a store reports about the job table's dead row versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadRows {
    /// Dead row versions waiting (the server's estimate).
    pub dead: u64,
    /// Milliseconds since the table was last vacuumed by anyone (this worker,
    /// another, or autovacuum); `None` if never.
    pub since_reclaim_ms: Option<i64>,
}

/// Dead row versions below this are left to autovacuum: a claim walks a few
/// dozen index pages at most.
pub const RECLAIM_MIN_DEAD: u64 = 10_000;

/// The shortest time between two reclaims, whoever ran the last one.
pub const RECLAIM_MIN_INTERVAL_MS: i64 = 2_000;

/// A reclaim may take at most this share of the time between two (1/50: 2%),
/// so a table whose VACUUM takes long (a very large retained history) is
/// reclaimed less often.
pub const RECLAIM_DUTY_DIVISOR: i64 = 50;

/// Whether to reclaim now, given what the store reports and how long this
/// worker's last reclaim took (`None` before its first).
///
/// ```
/// use duraq_store_postgres::{reclaim_due, DeadRows};
/// let waiting = DeadRows { dead: 250_000, since_reclaim_ms: Some(60_000) };
/// assert!(reclaim_due(&waiting, None));
/// // A VACUUM that took 2 s is repeated at most every 100 s.
/// assert!(!reclaim_due(&waiting, Some(2_000)));
/// assert!(!reclaim_due(&DeadRows { dead: 500, since_reclaim_ms: None }, None));
/// ```
pub fn reclaim_due(rows: &DeadRows, last_took_ms: Option<i64>) -> bool {
    let interval = last_took_ms
        .unwrap_or(0)
        .saturating_mul(RECLAIM_DUTY_DIVISOR)
        .max(RECLAIM_MIN_INTERVAL_MS);
    rows.dead >= RECLAIM_MIN_DEAD && rows.since_reclaim_ms.is_none_or(|ms| ms >= interval)
}

/// One upkeep pass: reads the dead rows and reclaims them when
/// [`reclaim_due`] says so, spacing reclaims by how long this store's last one
/// took. A role that may not vacuum needs no upkeep: its workers stop asking.
pub(crate) async fn upkeep(shared: &Shared) -> Result<Upkeep> {
    let Some(rows) = dead_rows(shared).await? else {
        return Ok(Upkeep::Unneeded);
    };
    let last = shared.last_reclaim_ms.load(Ordering::Relaxed);
    if !reclaim_due(&rows, (last >= 0).then_some(last)) {
        return Ok(Upkeep::Again);
    }
    let started = Instant::now();
    reclaim(shared).await?;
    let took = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    shared.last_reclaim_ms.store(took, Ordering::Relaxed);
    tracing::debug!(
        dead = rows.dead,
        took_ms = took,
        "reclaimed the live jobs' dead rows"
    );
    Ok(Upkeep::Again)
}

/// The live partition's dead row versions and the time since its last vacuum;
/// `None` when this role may not vacuum it.
pub(crate) async fn dead_rows(shared: &Shared) -> Result<Option<DeadRows>> {
    let client = pooled(&shared.pool).await?;
    let db = Db {
        conn: Conn::Client(&client),
        names: &shared.names,
    };
    let row = db
        .query_opt(
            "SELECT s.n_dead_tup, \
             (extract(epoch FROM now() - greatest(s.last_vacuum, s.last_autovacuum)) * 1000)::int8, \
             pg_has_role(c.relowner, 'USAGE') \
             FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid \
             WHERE s.schemaname = $1 AND s.relname = 'duraq_jobs_live'",
            &[&shared.names.schema],
        )
        .await?;
    // A role that may not VACUUM the table reports none: the worker then
    // never tries (the server would log a warning each time).
    Ok(row.filter(|row| row.get::<_, bool>(2)).map(|row| DeadRows {
        dead: row.get::<_, i64>(0).max(0) as u64,
        since_reclaim_ms: row.get::<_, Option<i64>>(1),
    }))
}

/// `VACUUM (ANALYZE)` of the live partition.
pub(crate) async fn reclaim(shared: &Shared) -> Result<()> {
    let client = pooled(&shared.pool).await?;
    let db = Db {
        conn: Conn::Client(&client),
        names: &shared.names,
    };
    db.batch(&shared.names.sql("VACUUM (ANALYZE) {s}.duraq_jobs_live"))
        .await
}

impl crate::PostgresStore {
    /// The dead row versions waiting in the live jobs' partition and the time
    /// since anyone last vacuumed it; `None` when this role may not vacuum it
    /// (its workers then leave the table to autovacuum). What the workers'
    /// upkeep reads before it decides.
    pub async fn dead_rows(&self) -> Result<Option<DeadRows>> {
        dead_rows(self.shared()).await
    }

    /// `VACUUM (ANALYZE)` of the live jobs' partition now, whatever
    /// [`reclaim_due`] says. Live jobs are neither read differently nor blocked.
    pub async fn reclaim_dead_rows(&self) -> Result<()> {
        reclaim(self.shared()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(dead: u64, since: Option<i64>) -> DeadRows {
        DeadRows {
            dead,
            since_reclaim_ms: since,
        }
    }

    #[test]
    fn reclaims_only_with_enough_dead_rows() {
        assert!(!reclaim_due(&rows(RECLAIM_MIN_DEAD - 1, None), None));
        assert!(reclaim_due(&rows(RECLAIM_MIN_DEAD, None), None));
    }

    #[test]
    fn waits_the_minimum_interval_after_anyone_reclaimed() {
        let just = rows(1_000_000, Some(RECLAIM_MIN_INTERVAL_MS - 1));
        assert!(!reclaim_due(&just, None));
        assert!(reclaim_due(
            &rows(1_000_000, Some(RECLAIM_MIN_INTERVAL_MS)),
            None
        ));
    }

    #[test]
    fn a_slow_reclaim_spaces_the_next_by_its_duty_cycle() {
        let took = 1_000; // 1 s, so at most every 50 s
        assert!(!reclaim_due(&rows(1_000_000, Some(49_999)), Some(took)));
        assert!(reclaim_due(&rows(1_000_000, Some(50_000)), Some(took)));
        // A fast one keeps the minimum interval.
        assert!(reclaim_due(
            &rows(1_000_000, Some(RECLAIM_MIN_INTERVAL_MS)),
            Some(10)
        ));
        // Absurd durations do not overflow.
        assert!(!reclaim_due(&rows(1, Some(i64::MAX)), Some(i64::MAX)));
        assert!(reclaim_due(
            &rows(RECLAIM_MIN_DEAD, Some(i64::MAX)),
            Some(i64::MAX / 100)
        ));
    }
}
