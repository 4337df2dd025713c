//! The versioned, additive schema and its migration ledger (`docs/operating.md`).
//!
//! Opening a store, inside one transaction that first takes a transaction-scoped
//! advisory lock for the schema (so processes starting at once serialize instead
//! of racing on `CREATE TABLE`):
//! 1. decides what a schema without duraq's ledger means ([`OpenMode`]): a
//!    reading open (`connect_existing`) refuses it with `database-not-found`
//!    before anything is written (`SECURITY.md`), a writing one creates the schema if
//!    missing;
//! 2. refuses (`schema-incompatible`) a ledger recording a version newer than
//!    [`SCHEMA_VERSION`];
//! 3. refuses any existing duraq table whose columns (from `information_schema`)
//!    miss one of ours or have another type — before anything is written;
//! 4. creates missing tables and indexes and records the missing versions.
//!
//! No column or row is ever dropped, and one table was rebuilt once: version 11
//! partitions the job table (`partition_jobs`), moving its rows in the
//! migration's transaction. Indexes a later version replaced are dropped, and
//! columns a later version added may be missing from a table whose ledger
//! predates them; they are added with `ALTER TABLE … ADD COLUMN` (nullable, or
//! with a constant default such as `errors`' `'[]'`: no table rewrite). What
//! each version changed is [`SCHEMA_VERSIONS`]. Tables carry a `duraq_`
//! prefix so that an application can share its schema with the queue
//! (transactional enqueue).

use duraq_core::{Error, Result};

use crate::backend::db::Db;
use crate::counts::SHARDS;
use crate::error::Target;
use crate::schema_def::{Table, JOBS_PARTITION_BY, JOB_PARTITIONS, QUEUE_COUNTS_TABLE, TABLES};
pub use crate::schema_def::{LEDGER_TABLE, MIGRATION_SCOPE};
use crate::versions::{added_columns, indexes, retired_indexes};
use crate::versions::{SCHEMA_VERSION, SCHEMA_VERSIONS};

/// Whether opening may create the schema and its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// Create what is missing (`connect`, `migrate`).
    Create,
    /// Only open a schema that already holds duraq's ledger (`connect_existing`);
    /// an older schema version is still upgraded.
    Existing,
}

/// Brings the schema to [`SCHEMA_VERSION`]; returns the versions it applied.
/// Runs inside the caller's transaction, which must commit afterwards. In
/// [`OpenMode::Existing`], a schema that is missing or has no ledger is
/// `database-not-found` (naming `target` and the schema) and nothing is written.
pub(crate) async fn migrate(
    db: &Db<'_>,
    now: i64,
    mode: OpenMode,
    target: &Target,
) -> Result<Vec<i64>> {
    let lock_key = format!("duraq.migrate:{}", db.names.schema);
    db.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))::text",
        &[&lock_key],
    )
    .await?;
    let exists = db
        .query_opt(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1",
            &[&db.names.schema],
        )
        .await?;
    let has_ledger = exists.is_some() && table_exists(db, LEDGER_TABLE).await?;
    if mode == OpenMode::Existing && !has_ledger {
        let what = if exists.is_some() {
            format!("holds no duraq schema (no {LEDGER_TABLE} table)")
        } else {
            "does not exist".to_owned()
        };
        return Err(Error::database_not_found(format!(
            "schema {:?} in PostgreSQL database {target} {what}; \
             run `duraq migrate` to create it (nothing was created)",
            db.names.schema
        )));
    }
    if exists.is_none() {
        // Only when missing: CREATE SCHEMA needs the CREATE privilege on the
        // database even with IF NOT EXISTS, which an application role may lack.
        db.batch(&db.names.sql("CREATE SCHEMA IF NOT EXISTS {s}"))
            .await?;
    }
    let mut newest = None;
    if has_ledger {
        let sql = format!("SELECT max(version) FROM {{s}}.{LEDGER_TABLE} WHERE scope = $1");
        newest = db.query_one(&sql, &[&MIGRATION_SCOPE]).await?.get(0);
        if let Some(v) = newest.filter(|v| *v > SCHEMA_VERSION) {
            return Err(Error::schema(format!(
                "schema {:?} is at version {v}; this binary knows up to {SCHEMA_VERSION}",
                db.names.schema
            )));
        }
    }
    check_columns(db, newest.unwrap_or(0)).await?;
    if newest == Some(SCHEMA_VERSION) {
        // Current, and its tables were checked above: nothing to create.
        return Ok(Vec::new());
    }
    let backfill = !table_exists(db, QUEUE_COUNTS_TABLE).await?;
    for table in TABLES {
        let ddl = format!("CREATE TABLE IF NOT EXISTS {}", create_table_body(table));
        db.batch(&db.names.sql(&ddl)).await?;
    }
    for (table, column, _) in added_columns() {
        let ddl = TABLES
            .iter()
            .find(|t| t.name == table)
            .and_then(|t| t.columns.iter().find(|c| c.0 == column))
            .map(|c| c.2)
            .expect("an added column is declared in TABLES");
        let sql = format!("ALTER TABLE {{s}}.{table} ADD COLUMN IF NOT EXISTS {column} {ddl}");
        db.batch(&db.names.sql(&sql)).await?;
    }
    partition_jobs(db).await?;
    for index in indexes().flat_map(|i| i.ddl()) {
        db.batch(&db.names.sql(&format!("CREATE INDEX IF NOT EXISTS {index}")))
            .await?;
    }
    for index in retired_indexes() {
        db.batch(&db.names.sql(&format!("DROP INDEX IF EXISTS {{s}}.{index}")))
            .await?;
    }
    if backfill {
        backfill_queue_counts(db).await?;
    }
    if newest.is_some_and(|v| (20..22).contains(&v)) {
        mark_ephemeral_durable_rows(db).await?;
    }
    db.execute(
        "INSERT INTO {s}.duraq_count_shards (shard, revision, queued, handed_off, completed, failed, \
         cancelled, orphaned) SELECT g, 0, 0, 0, 0, 0, 0, 0 FROM generate_series(0, $1 - 1) AS g \
         ON CONFLICT (shard) DO NOTHING",
        &[&SHARDS],
    )
    .await?;
    let sql = format!(
        "INSERT INTO {{s}}.{LEDGER_TABLE} (scope, version, applied_at_ms) \
         SELECT $1, v, $2 FROM unnest($3::int8[]) AS v \
         ON CONFLICT (scope, version) DO NOTHING RETURNING version"
    );
    let versions: Vec<i64> = SCHEMA_VERSIONS.iter().map(|v| v.version).collect();
    let rows = db.query(&sql, &[&MIGRATION_SCOPE, &now, &versions]).await?;
    let mut applied: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    applied.sort_unstable();
    Ok(applied)
}

/// `{s}.name (columns, constraints)`, and the job table's partitioning.
fn create_table_body(table: &Table) -> String {
    let mut defs: Vec<String> = (table.columns.iter())
        .map(|(n, _, ddl)| format!("{n} {ddl}"))
        .collect();
    if !table.constraints.is_empty() {
        defs.push(table.constraints.to_owned());
    }
    let partitioned = if table.name == JOBS_TABLE {
        JOBS_PARTITION_BY
    } else {
        ""
    };
    format!("{{s}}.{} ({}) {partitioned}", table.name, defs.join(", "))
}

const JOBS_TABLE: &str = "duraq_jobs";

/// Creates the job table's partitions (version 11). A job table from an older
/// version is a plain table: it is renamed, the partitioned one created in its
/// place, its rows moved over once and the old table dropped with its indexes,
/// all in the migration's transaction (which holds its lock until commit, so
/// writers wait rather than write to the old table). Its columns are complete
/// by then: the columns loop ran first.
async fn partition_jobs(db: &Db<'_>) -> Result<()> {
    let kind: String = db
        .query_one(
            "SELECT c.relkind::text FROM pg_class AS c JOIN pg_namespace AS n \
             ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
            &[&db.names.schema, &JOBS_TABLE],
        )
        .await?
        .get(0);
    let upgrade = kind == "r";
    let jobs = TABLES
        .iter()
        .find(|t| t.name == JOBS_TABLE)
        .expect("the job table is declared");
    if upgrade {
        db.batch(
            &db.names
                .sql("ALTER TABLE {s}.duraq_jobs RENAME TO duraq_jobs_unpartitioned"),
        )
        .await?;
        let ddl = format!("CREATE TABLE {}", create_table_body(jobs));
        db.batch(&db.names.sql(&ddl)).await?;
    }
    for part in &JOB_PARTITIONS {
        let statuses: Vec<String> = part.statuses.iter().map(|s| format!("'{s}'")).collect();
        let with = match part.with {
            "" => String::new(),
            with => format!(" WITH ({with})"),
        };
        let ddl = format!(
            "CREATE TABLE IF NOT EXISTS {{s}}.{} PARTITION OF {{s}}.{JOBS_TABLE} (PRIMARY KEY (id)) \
             FOR VALUES IN ({}){with}",
            part.name,
            statuses.join(", ")
        );
        db.batch(&db.names.sql(&ddl)).await?;
    }
    if upgrade {
        let columns: Vec<&str> = jobs.columns.iter().map(|c| c.0).collect();
        let columns = columns.join(", ");
        let sql = format!(
            "INSERT INTO {{s}}.{JOBS_TABLE} ({columns}) SELECT {columns} \
             FROM {{s}}.duraq_jobs_unpartitioned; DROP TABLE {{s}}.duraq_jobs_unpartitioned"
        );
        db.batch(&db.names.sql(&sql)).await?;
    }
    Ok(())
}

/// Fills the per-queue counters from the jobs table, once, in the transaction
/// that created their table (under the migration lock). `SHARE` mode keeps writers
/// that predate version 3 (which do not maintain these counters) out until commit,
/// so the backfill is exact; new writers wait for the migration lock anyway.
async fn backfill_queue_counts(db: &Db<'_>) -> Result<()> {
    db.batch(&db.names.sql("LOCK TABLE {s}.duraq_jobs IN SHARE MODE"))
        .await?;
    db.execute(
        "INSERT INTO {s}.duraq_queue_count_shards (queue, shard, queued, handed_off, completed, \
         failed, cancelled, orphaned, pending) SELECT queue, 0, \
         count(*) FILTER (WHERE status = 'queued'), \
         count(*) FILTER (WHERE status = 'handed_off'), count(*) FILTER (WHERE status = 'completed'), \
         count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'cancelled'), \
         count(*) FILTER (WHERE status = 'orphaned'), count(*) FILTER (WHERE status = 'pending') \
         FROM {s}.duraq_jobs GROUP BY queue",
        &[],
    )
    .await?;
    Ok(())
}

/// Sets `has_durable_rows` (version 22) on the unfinished ephemeral jobs
/// that already have steps or signals, once, under the migration lock. `SHARE`
/// mode keeps writers of version 21, which add such rows without the mark, out
/// until commit; newer writers wait for the migration lock anyway.
async fn mark_ephemeral_durable_rows(db: &Db<'_>) -> Result<()> {
    db.batch(
        &db.names
            .sql("LOCK TABLE {s}.duraq_job_steps, {s}.duraq_job_signals IN SHARE MODE"),
    )
    .await?;
    db.execute(
        "UPDATE {s}.duraq_jobs SET has_durable_rows = true WHERE NOT keep_completed \
         AND id IN (SELECT job_id FROM {s}.duraq_job_steps \
         UNION SELECT job_id FROM {s}.duraq_job_signals)",
        &[],
    )
    .await?;
    Ok(())
}

async fn table_exists(db: &Db<'_>, table: &str) -> Result<bool> {
    let row = db
        .query_opt(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
            &[&db.names.schema, &table],
        )
        .await?;
    Ok(row.is_some())
}

/// Refuses existing duraq tables whose columns differ from ours. A column added
/// after `recorded` (the ledger's version) may be missing: it will be added.
async fn check_columns(db: &Db<'_>, recorded: i64) -> Result<()> {
    let names: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
    let rows = db
        .query(
            "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = ANY($2)",
            &[&db.names.schema, &names],
        )
        .await?;
    for table in TABLES {
        let found: Vec<(String, String)> = rows
            .iter()
            .filter(|r| r.get::<_, String>(0) == table.name)
            .map(|r| (r.get(1), r.get(2)))
            .collect();
        if found.is_empty() {
            continue;
        }
        for (column, ty, _) in table.columns {
            match found.iter().find(|(name, _)| name == column) {
                Some((_, actual)) if actual == ty => {}
                Some((_, actual)) => {
                    return Err(Error::schema(format!(
                        "{}.{}.{column} is {actual}, expected {ty}",
                        db.names.schema, table.name
                    )))
                }
                None if added_columns()
                    .any(|(t, c, v)| t == table.name && c == *column && v > recorded) => {}
                None => {
                    return Err(Error::schema(format!(
                        "{}.{} has no column {column}",
                        db.names.schema, table.name
                    )))
                }
            }
        }
    }
    Ok(())
}

/// The newest schema version the ledger records (0 for none).
pub(crate) async fn current_version(db: &Db<'_>) -> Result<i64> {
    let sql = format!(
        "SELECT max(version) FROM {{s}}.{} WHERE scope = $1",
        crate::LEDGER_TABLE
    );
    let version: Option<i64> = db.query_one(&sql, &[&crate::MIGRATION_SCOPE]).await?.get(0);
    Ok(version.unwrap_or(0))
}
