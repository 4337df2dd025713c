//! What a scenario runs against: a store kind plus one fresh database.
//!
//! Every scenario run gets its own database so runs cannot warm or bloat each
//! other: a new SQLite file (under `target/bench/`, on the real disk: a tmpfs
//! would make fsync free) or a new PostgreSQL schema, dropped afterwards. A
//! [`Target`] also knows how to name itself to a child process, so worker and
//! producer processes open exactly the same database.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use duraq_core::Store;
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use serde_json::{json, Value};

use crate::args::Args;

/// The store configurations the bench reports as separate rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SQLite, WAL, `synchronous=FULL` (the default).
    SqliteFull,
    /// SQLite, WAL, `synchronous=NORMAL` (the named opt-in).
    SqliteNormal,
    /// PostgreSQL with the server's own durability settings.
    Postgres,
}

impl Kind {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "sqlite-full" => Self::SqliteFull,
            "sqlite-normal" => Self::SqliteNormal,
            "postgres" => Self::Postgres,
            other => bail!("unknown store {other:?} (sqlite-full, sqlite-normal, postgres)"),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::SqliteFull => "sqlite-full",
            Self::SqliteNormal => "sqlite-normal",
            Self::Postgres => "postgres",
        }
    }

    pub fn is_sqlite(self) -> bool {
        self != Self::Postgres
    }
}

/// One database of one store kind.
#[derive(Clone, Debug)]
pub struct Target {
    pub kind: Kind,
    /// The SQLite file, or the PostgreSQL URL.
    pub location: String,
    /// The PostgreSQL schema holding this run's tables.
    pub schema: Option<String>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{}_{seq}_{nanos}", std::process::id())
}

impl Target {
    /// A fresh database: a new file in directory `database` (SQLite) or a new
    /// schema on the server at URL `database` (PostgreSQL).
    pub fn fresh(kind: Kind, database: &str) -> Result<Self> {
        Ok(match kind {
            Kind::Postgres => Self {
                kind,
                location: database.to_owned(),
                schema: Some(format!("bench_{}", unique_suffix())),
            },
            _ => {
                std::fs::create_dir_all(database)
                    .with_context(|| format!("creating {database}"))?;
                let file = Path::new(database).join(format!("bench-{}.db", unique_suffix()));
                Self {
                    kind,
                    location: file.display().to_string(),
                    schema: None,
                }
            }
        })
    }

    /// Another fresh database of the same kind, next to this one (the same
    /// folder or server): a second store measured in the same run.
    pub fn sibling(&self) -> Result<Self> {
        let database = match self.kind {
            Kind::Postgres => self.location.clone(),
            _ => Path::new(&self.location)
                .parent()
                .context("sqlite target without a folder")?
                .display()
                .to_string(),
        };
        Self::fresh(self.kind, &database)
    }

    /// The target named by a child's `--store/--database/--schema` arguments.
    pub fn from_args(args: &Args) -> Result<Self> {
        Ok(Self {
            kind: Kind::parse(args.required("store")?)?,
            location: args.required("database")?.to_owned(),
            schema: args.get("schema").map(str::to_owned),
        })
    }

    /// The arguments that make a child open this same database.
    pub fn child_args(&self) -> Vec<String> {
        let mut out = vec![
            "--store".into(),
            self.kind.name().into(),
            "--database".into(),
            self.location.clone(),
        ];
        if let Some(schema) = &self.schema {
            out.extend(["--schema".into(), schema.clone()]);
        }
        out
    }

    /// Opens the store with its default options (durability as documented).
    pub async fn open(&self) -> Result<Arc<dyn Store>> {
        self.open_as(true).await
    }

    /// Opens the store for a process that only enqueues: on PostgreSQL without
    /// the LISTEN connection (`PostgresOptions::listen`), as a web server would.
    pub async fn open_producer(&self) -> Result<Arc<dyn Store>> {
        self.open_as(false).await
    }

    async fn open_as(&self, listen: bool) -> Result<Arc<dyn Store>> {
        Ok(match self.kind {
            Kind::Postgres => {
                let options = PostgresOptions {
                    schema: self.schema.clone(),
                    listen,
                    ..PostgresOptions::default()
                };
                Arc::new(PostgresStore::connect(&self.location, options).await?)
            }
            kind => {
                let sync = match kind {
                    Kind::SqliteNormal => Synchronous::Normal,
                    _ => Synchronous::Full,
                };
                let opts = SqliteOptions::default().synchronous(sync);
                Arc::new(SqliteStore::open(&self.location, opts)?)
            }
        })
    }

    /// The settings that decide durability, as the database reports them.
    pub async fn settings(&self) -> Result<Value> {
        if self.kind.is_sqlite() {
            let store = SqliteStore::open(
                &self.location,
                SqliteOptions::default().synchronous(match self.kind {
                    Kind::SqliteNormal => Synchronous::Normal,
                    _ => Synchronous::Full,
                }),
            )?;
            let p = store.pragmas();
            return Ok(json!({
                "sqlite_version": rusqlite::version(),
                "journal_mode": p.journal_mode,
                "synchronous": if p.synchronous == 2 { "FULL" } else { "NORMAL" },
            }));
        }
        let client = self.pg_client().await?;
        let mut out = serde_json::Map::new();
        for name in [
            "server_version",
            "fsync",
            "synchronous_commit",
            "full_page_writes",
            "shared_buffers",
        ] {
            let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
            out.insert(name.into(), Value::String(row.get(0)));
        }
        Ok(Value::Object(out))
    }

    /// Deletes this run's database (the file and its WAL, or the schema).
    pub async fn cleanup(&self) -> Result<()> {
        if self.kind.is_sqlite() {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", self.location));
            }
            return Ok(());
        }
        let schema = self
            .schema
            .as_deref()
            .context("postgres target without schema")?;
        let client = self.pg_client().await?;
        // The schema name is ours (bench_<digits>), never user input.
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await?;
        Ok(())
    }

    pub(crate) async fn pg_client(&self) -> Result<tokio_postgres::Client> {
        let (client, conn) = tokio_postgres::connect(&self.location, tokio_postgres::NoTls)
            .await
            .context("connecting to PostgreSQL")?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }
}
