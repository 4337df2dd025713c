//! Fresh job rows into `duraq_jobs` through `COPY … FROM STDIN (FORMAT binary)`.
//!
//! Why: a batch of fresh jobs inserted with `INSERT … SELECT FROM unnest(…)`
//! makes the server parse one array per column, project them row by row, and insert each
//! row on its own (one heap WAL record per row). `COPY` sends the rows as binary
//! tuples and the server inserts them in multi-row groups (one heap WAL record
//! per page), so the server's share of a large batch shrinks (see the commit
//! that brought this module for the profile). It costs more round trips than the
//! one statement of [`crate::enqueue_plain`] (the scopes read, the COPY, the
//! counts, the commit), which is why a small batch keeps that statement.
//!
//! The rows' dedupe keys ([`crate::dedupe`]) are decided here, in Rust, from the
//! registered scopes, read in the same transaction *after* taking the lock every
//! job insert takes (`ROW EXCLUSIVE` on `duraq_jobs`): a scope registration
//! holds `SHARE ROW EXCLUSIVE` until it commits, so the read sees every scope
//! registered before these rows and none can be registered before they commit
//! (what [`crate::insert::insert_jobs_sql`] gets from reading the scopes inside its
//! statement).
//!
//! `COPY` takes no parameters and runs through the extended protocol: on a
//! pooled connection as a cached prepared statement; with prepared statements
//! off ([`crate::PostgresOptions::prepared_statements`]) or on an application's
//! transaction it is prepared inside the transaction and closed again before
//! the transaction ends, so a transaction-mode pooler sees it on one server
//! connection only.

use std::collections::HashSet;
use std::pin::pin;
use std::sync::OnceLock;

use duraq_core::{Job, Result};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::ToSql;

use crate::backend::db::{Conn, Db};
use crate::columns::statements::{copy_sql, copy_types, fresh, FRESH};
use crate::columns::{ArgsText, Source, Value};
use crate::error::map_pg_error;
use crate::insert::taken_ids_guard_sql;

/// Refuses the ids finished jobs hold (see [`taken_ids_guard_sql`]).
fn guard_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| format!("WITH {} SELECT 1", taken_ids_guard_sql(1)))
}

/// The smallest run of fresh rows sent through `COPY`. The `COPY` path takes
/// five round trips more than one `INSERT` ([`crate::insert`]: `BEGIN`, the
/// lock with the scopes, the `COPY` and its end, the counts and `COMMIT`,
/// against one statement) and saved about 5 µs a row at 1,000 rows (see the
/// commit that brought it): with 0.1–0.2 ms round trips on one machine it
/// pays from about 100–200 rows, over a network later.
pub(crate) const COPY_MIN_ROWS: usize = 256;

/// The registered dedupe scopes (see the module docs).
const SCOPES_SQL: &str = "SELECT job_name, queue FROM {s}.duraq_dedupe_scopes";

/// Inserts fresh `rows` (with `args[i]` the args of `rows[i]`) with one
/// `COPY`, inside the transaction `db` runs on; `chosen` are the ids callers
/// chose, checked against finished jobs ([`crate::insert::chosen_ids`]).
pub(crate) async fn copy_jobs(
    db: &Db<'_>,
    rows: &[Job],
    args: &[ArgsText],
    chosen: &[&str],
) -> Result<()> {
    // One round trip: the lock first (`biased`: the first polled is the first sent).
    db.prepare(&[SCOPES_SQL, guard_sql()]).await?;
    let lock = db
        .names
        .sql("LOCK TABLE {s}.duraq_jobs IN ROW EXCLUSIVE MODE");
    let guard: [&(dyn ToSql + Sync); 1] = [&chosen];
    let check_chosen = async {
        if chosen.is_empty() {
            return Ok(0);
        }
        db.execute(guard_sql(), &guard).await
    };
    let ((), scopes, _) = tokio::try_join!(
        biased;
        db.batch(&lock),
        db.query(SCOPES_SQL, &[]),
        check_chosen
    )?;
    let scopes: HashSet<(String, String)> = scopes.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mut writer = pin!(start(db).await?);
    // One buffer for every row's fields, in the order of `copy_sql`.
    let mut values: Vec<Value> = Vec::with_capacity(FRESH);
    for (row, args) in rows.iter().zip(args) {
        let scoped =
            !scopes.is_empty() && scopes.contains(&(row.job_name.clone(), row.queue.clone()));
        let dedupe_key = scoped.then(|| &args.digest[..16]);
        values.clear();
        let source = Source::fresh(row, args, dedupe_key);
        values.extend(fresh().map(|c| (c.write)(&source)));
        let fields: [&(dyn ToSql + Sync); FRESH] = std::array::from_fn(|i| values[i].as_sql());
        writer.as_mut().write(&fields).await.map_err(map_pg_error)?;
    }
    writer.finish().await.map_err(map_pg_error)?;
    Ok(())
}

/// Starts the `COPY` on `db`'s connection (see the module docs on how it is
/// prepared).
async fn start(db: &Db<'_>) -> Result<BinaryCopyInWriter> {
    let sql = db.names.sql(copy_sql());
    let cached = db.names.unnamed.is_none();
    let sink = match &db.conn {
        Conn::Pooled(tx) if cached => {
            let stmt = tx.prepare_cached(&sql).await.map_err(map_pg_error)?;
            tx.copy_in(&stmt).await
        }
        Conn::Client(client) if cached => {
            let stmt = client.prepare_cached(&sql).await.map_err(map_pg_error)?;
            client.copy_in(&stmt).await
        }
        Conn::Pooled(tx) => tx.copy_in(sql.as_str()).await,
        Conn::Client(client) => client.copy_in(sql.as_str()).await,
        Conn::Borrowed(client) => client.copy_in(sql.as_str()).await,
        Conn::External(_) => {
            return Err(duraq_core::Error::backend(
                "COPY on an application's client",
                "callers check Db::can_copy first",
            ))
        }
    };
    Ok(BinaryCopyInWriter::new(
        sink.map_err(map_pg_error)?,
        copy_types(),
    ))
}
