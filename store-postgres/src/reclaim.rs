//! Reclaiming the live jobs' dead row versions (`core::rules::reclaim`): the
//! server's own count of them in `duraq_jobs_live`, and the VACUUM that
//! removes them (that partition only: the finished jobs are not read).
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

use duraq_core::rules::DeadRows;
use duraq_core::Result;

use crate::backend::db::{pooled, Conn, Db};
use crate::Shared;

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
