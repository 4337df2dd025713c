//! Fresh job rows into `duraq_jobs` through `COPY … FROM STDIN (FORMAT binary)`.
//!
//! Why: a batch of fresh jobs inserted with `INSERT … SELECT FROM unnest(…)`
//! makes the server parse 21 arrays, project them row by row, and insert each
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

use duraq_core::{digest_of_canonical, Job, NewJob, Result};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};

use crate::backend::db::{Conn, Db};
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

/// The columns a fresh row gets (the others keep their defaults), in the
/// order [`copy_jobs`] writes them.
const COPY_SQL: &str = "COPY {s}.duraq_jobs (id, job_name, args, args_digest, queue, status, \
     attempts, max_retries, scheduled_at_ms, created_at_ms, schedule_key, schedule_order, \
     concurrency_key, max_concurrency, idempotency_key, timeout_ms, priority, rate_key, rate_max, \
     rate_period_ms, trace_parent, dedupe_key) FROM STDIN (FORMAT binary)";

/// The column types of [`COPY_SQL`], as the binary format needs them.
const TYPES: [Type; 22] = [
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
];

/// A fresh row's args as stored (canonical JSON text) and their digest, made
/// from the same bytes: the args are serialized once.
pub(crate) struct ArgsText {
    pub text: String,
    pub digest: String,
}

impl ArgsText {
    /// The canonical text and digest of `job`'s args.
    pub fn of(job: &NewJob) -> Self {
        let mut bytes = Vec::new();
        job.write_args(&mut bytes);
        let digest = digest_of_canonical("args", &bytes);
        let text = String::from_utf8(bytes).expect("canonical JSON is UTF-8");
        Self { text, digest }
    }
}

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
    for (row, args) in rows.iter().zip(args) {
        let scoped =
            !scopes.is_empty() && scopes.contains(&(row.job_name.clone(), row.queue.clone()));
        let dedupe_key = scoped.then(|| &args.digest[..16]);
        let values: [&(dyn ToSql + Sync); 22] = [
            &row.id,
            &row.job_name,
            &args.text,
            &args.digest,
            &row.queue,
            &row.status.as_str(),
            &row.attempts,
            &row.max_retries,
            &row.scheduled_at_ms,
            &row.created_at_ms,
            &row.schedule_key,
            &row.schedule_order,
            &row.concurrency_key,
            &row.max_concurrency,
            &row.idempotency_key,
            &row.timeout_ms,
            &row.priority,
            &row.rate_key,
            &row.rate_max,
            &row.rate_period_ms,
            &row.trace_parent,
            &dedupe_key,
        ];
        writer.as_mut().write(&values).await.map_err(map_pg_error)?;
    }
    writer.finish().await.map_err(map_pg_error)?;
    Ok(())
}

/// Starts the `COPY` on `db`'s connection (see the module docs on how it is
/// prepared).
async fn start(db: &Db<'_>) -> Result<BinaryCopyInWriter> {
    let sql = db.names.sql(COPY_SQL);
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
        Conn::Borrowed(tx) => tx.copy_in(sql.as_str()).await,
    };
    Ok(BinaryCopyInWriter::new(sink.map_err(map_pg_error)?, &TYPES))
}
