//! How big a run's database is, for the `soak` scenario's samples: whether the
//! tables level off under retention is the point of a soak, and each store
//! answers differently. PostgreSQL: every table of the run's schema, with
//! `pg_total_relation_size` (heap, TOAST and indexes), `pg_indexes_size`, the
//! dead tuples and the autovacuum runs the statistics collector reports.
//! SQLite: the file plus its WAL on disk, the pages in use
//! (`page_count - freelist_count`), and the index pages when the `dbstat`
//! virtual table is compiled in (`None` when it is not).

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};

use crate::target::Target;

/// One measurement of the database's size.
#[derive(Clone, Copy, Debug, Default)]
pub struct DbSize {
    /// Everything on disk: tables with their indexes (PostgreSQL), the file
    /// and its WAL (SQLite).
    pub total_bytes: u64,
    /// The indexes alone, when the store can say.
    pub index_bytes: Option<u64>,
    /// SQLite: the pages in use, in bytes (the rest of the file is free pages).
    pub used_bytes: Option<u64>,
    /// PostgreSQL: dead tuples across the schema's tables.
    pub dead_tuples: Option<i64>,
    /// PostgreSQL: autovacuum runs across the schema's tables so far.
    pub autovacuums: Option<i64>,
}

/// Measures one target's database, with a connection of its own.
pub enum Sizer {
    Postgres {
        client: tokio_postgres::Client,
        schema: String,
    },
    Sqlite {
        path: String,
    },
}

const PG_SIZES: &str = "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint, \
     coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint, \
     coalesce(sum(s.n_dead_tup), 0)::bigint, \
     coalesce(sum(s.autovacuum_count), 0)::bigint \
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
     LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid \
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')";

const SQLITE_INDEX_PAGES: &str = "SELECT coalesce(sum(pgsize), 0) FROM dbstat \
     WHERE name IN (SELECT name FROM sqlite_schema WHERE type = 'index')";

impl Sizer {
    pub async fn new(target: &Target) -> Result<Self> {
        if target.kind.is_sqlite() {
            return Ok(Self::Sqlite {
                path: target.location.clone(),
            });
        }
        Ok(Self::Postgres {
            client: target.pg_client().await?,
            schema: target
                .schema
                .clone()
                .context("postgres target without schema")?,
        })
    }

    pub async fn measure(&self) -> Result<DbSize> {
        match self {
            Self::Postgres { client, schema } => {
                let row = client.query_one(PG_SIZES, &[schema]).await?;
                Ok(DbSize {
                    total_bytes: row.get::<_, i64>(0) as u64,
                    index_bytes: Some(row.get::<_, i64>(1) as u64),
                    used_bytes: None,
                    dead_tuples: Some(row.get(2)),
                    autovacuums: Some(row.get(3)),
                })
            }
            Self::Sqlite { path } => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || sqlite_size(&path)).await?
            }
        }
    }
}

fn sqlite_size(path: &str) -> Result<DbSize> {
    let file = |suffix: &str| {
        std::fs::metadata(format!("{path}{suffix}"))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {path} read-only"))?;
    let pragma = |name: &str| -> Result<u64> {
        Ok(conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))? as u64)
    };
    let used = (pragma("page_count")? - pragma("freelist_count")?) * pragma("page_size")?;
    let index_bytes = conn
        .query_row(SQLITE_INDEX_PAGES, [], |r| r.get::<_, i64>(0))
        .ok()
        .map(|b| b as u64);
    Ok(DbSize {
        total_bytes: file("") + file("-wal"),
        index_bytes,
        used_bytes: Some(used),
        dead_tuples: None,
        autovacuums: None,
    })
}
