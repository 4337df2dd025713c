//! When a worker asks its store to reclaim the dead row versions that finished
//! work leaves among the live jobs.
//!
//! Why: on PostgreSQL a claim and a completion each write a new version of a
//! job's row, and the claim index (`status = 'queued'`) keeps an entry for
//! every job that was ever queued until VACUUM removes it. A scan marks such
//! entries dead, but B-tree pages only drop dead entries when an insert would
//! split them, and the dead ones sit on old pages in front of every live job:
//! each claim walks them all. Measured on PostgreSQL 15 with a drained backlog
//! of 1,000,000 jobs, a 10-job claim read 11,700 index pages (91 ms); after one
//! VACUUM it read 23 (0.1 ms). Autovacuum looks at a database once a minute
//! at most, so a lived-in queue pays this for up to a minute after every burst.
//! The worker's maintenance therefore looks at start and every two seconds,
//! and reclaims once enough dead rows wait, never more often than its own cost
//! allows ([`reclaim_due`]); the store decides how (PostgreSQL: `VACUUM
//! (ANALYZE)` of the live jobs' partition, which holds no history, so the
//! VACUUM is short and the space it frees is where new jobs go anyway), and a
//! store without dead row versions (SQLite updates in place) reports none.
//!
//! (A first version vacuumed the whole job table, history included, and was
//! taken out: freeing space in every old page scattered new rows over the
//! history, and batch enqueue behind 1,000,000 kept jobs fell from 72,519 to
//! 6,206 jobs/s. Keeping finished jobs in a partition of their own is what
//! makes the reclaim cheap.)

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
/// use duraq_core::rules::{reclaim_due, DeadRows};
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
