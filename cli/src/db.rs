//! `--database` URL → a `Store`. The URL is parsed up front (bad URLs fail with
//! `invalid-database-url` before anything is opened); the store itself is opened
//! only when a command has validated all of its other input, because opening
//! creates the file and its schema. Commands that only read or act on existing
//! jobs open with [`Database::open_existing`], which never creates anything: a
//! typo in `--database` is `database-not-found`, not a new empty database.
//! `sqlite::memory:` is a private temporary file deleted on exit (a true
//! in-memory database cannot be shared by SQLite's WAL connections);
//! `postgres://…` connects a pool and migrates the schema.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use duraq_core::driver::system_clock;
use duraq_core::Store;
use duraq_store_postgres::{PostgresOptions, PostgresStore};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

use crate::error::CliError;
use crate::output::print_json;

/// A parsed database URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Database {
    SqliteFile(PathBuf),
    SqliteMemory,
    /// A PostgreSQL URL (without duraq's own `schema` parameter) and the schema
    /// the store uses (`None`: the connection's current schema).
    Postgres {
        url: String,
        schema: Option<String>,
    },
}

impl Database {
    /// Parses `sqlite:<path>`, `sqlite://<path>`, `sqlite::memory:`, `postgres://…`.
    /// A PostgreSQL schema comes from `--schema` or the URL's `schema=` parameter
    /// (the flag wins); it does not apply to SQLite.
    pub fn parse(url: &str, schema: Option<&str>) -> Result<Self, CliError> {
        let parsed = Self::parse_url(url)?;
        match (parsed, schema) {
            (
                Self::Postgres {
                    url,
                    schema: in_url,
                },
                flag,
            ) => Ok(Self::Postgres {
                url,
                schema: flag.map(str::to_owned).or(in_url),
            }),
            (_, Some(_)) => Err(CliError::new(
                "invalid-database-url",
                "--schema applies only to a postgres:// database",
            )),
            (sqlite, None) => Ok(sqlite),
        }
    }

    fn parse_url(url: &str) -> Result<Self, CliError> {
        let bad = |why: &str| {
            CliError::new(
                "invalid-database-url",
                format!(
                    "{:?} {why}; expected sqlite:<path>, sqlite::memory: or postgres://…",
                    redact(url)
                ),
            )
        };
        if url == "sqlite::memory:" || url == "sqlite://:memory:" {
            return Ok(Self::SqliteMemory);
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(bad("names no file"));
            }
            return Ok(Self::SqliteFile(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (url, schema) = take_schema_param(url);
            url.parse::<tokio_postgres::Config>()
                .map_err(|e| bad(&format!("is not a valid PostgreSQL URL ({e})")))?;
            return Ok(Self::Postgres { url, schema });
        }
        Err(bad("is not a supported database URL"))
    }

    /// Opens the store (creating missing schema, `docs/operating.md`) for a one-shot
    /// command: other processes' changes are not followed (no PostgreSQL LISTEN).
    pub async fn open(&self) -> Result<Arc<dyn Store>> {
        Ok(self.open_migrating(false).await?.0)
    }

    /// Opens the store for a command that follows other processes' changes
    /// (`worker`).
    pub async fn open_listening(&self) -> Result<Arc<dyn Store>> {
        Ok(self.open_migrating(true).await?.0)
    }

    /// Opens an existing duraq database for a command that reads or acts on
    /// existing jobs (`counts`, `jobs …`, `schedule get|cancel|wake`): nothing is
    /// created; a missing file, database or schema is `database-not-found`, whose
    /// message says how to create it. `listen` follows other processes' changes
    /// (`counts --watch`).
    pub async fn open_existing(&self, listen: bool) -> Result<Arc<dyn Store>> {
        let store: Arc<dyn Store> = match self {
            Self::SqliteFile(path) => {
                let path = path.clone();
                let opened = tokio::task::spawn_blocking(move || {
                    SqliteStore::open_existing(path, SqliteOptions::default())
                })
                .await?;
                Arc::new(opened?)
            }
            // A private temporary file: there is nothing to find, and nothing
            // outlives the command.
            Self::SqliteMemory => return self.open().await,
            Self::Postgres { url, schema } => {
                let options = postgres_options(schema, listen);
                Arc::new(PostgresStore::connect_existing(url, options).await?)
            }
        };
        Ok(store)
    }

    /// Opens the store and reports the schema versions this open applied and the
    /// resulting schema version. The caller closes it ([`closing`]).
    async fn open_migrating(&self, listen: bool) -> Result<(Arc<dyn Store>, Vec<i64>, i64)> {
        match self {
            Self::SqliteFile(path) => sqlite_opened(open_sqlite(Some(path.clone())).await?),
            Self::SqliteMemory => sqlite_opened(open_sqlite(None).await?),
            Self::Postgres { url, schema } => {
                let store = PostgresStore::connect(url, postgres_options(schema, listen)).await?;
                let report = store.migration().clone();
                Ok((Arc::new(store), report.applied, report.version))
            }
        }
    }
}

/// The store options for `schema`, with what the environment says about a
/// pooler in front of the server (`docs/postgres.md`): `DURAQ_LISTEN_URL`, a
/// direct address for the LISTEN connection, and `DURAQ_PREPARED_STATEMENTS=off`
/// for a transaction-mode pooler that keeps no prepared statements.
fn postgres_options(schema: &Option<String>, listen: bool) -> PostgresOptions {
    let listen_url = std::env::var("DURAQ_LISTEN_URL")
        .ok()
        .filter(|url| !url.trim().is_empty());
    let prepared_statements = !std::env::var("DURAQ_PREPARED_STATEMENTS").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "false" | "0" | "no"
        )
    });
    PostgresOptions {
        listen,
        schema: schema.clone(),
        listen_url,
        prepared_statements,
        ..PostgresOptions::default()
    }
}

/// Splits duraq's own `schema=NAME` query parameter off a PostgreSQL URL (the
/// driver refuses parameters it does not know).
fn take_schema_param(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut schema = None;
    let rest: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("schema=") {
            Some(value) => {
                schema = Some(value.to_string());
                false
            }
            None => !pair.is_empty(),
        })
        .collect();
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    (url, schema)
}

/// How long closing a store may take before a command gives up on it.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// Runs a command's `work` on `store`, then closes the store whatever the
/// outcome, so that its last writes are announced to other processes
/// (PostgreSQL sends NOTIFY from a background task, which would die with the
/// process: idle workers would see the change only at their next poll) and
/// its connections end cleanly. Closing is best effort: a failure or a close
/// slower than [`CLOSE_LIMIT`] is logged, never turned into the command's error.
pub async fn closing<T, F>(store: &Arc<dyn Store>, work: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let outcome = work.await;
    close(store).await;
    outcome
}

/// Closes `store` (best effort, see [`closing`]).
pub async fn close(store: &Arc<dyn Store>) {
    match tokio::time::timeout(CLOSE_LIMIT, store.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("closing the store failed: {e}"),
        Err(_) => tracing::warn!("closing the store took longer than {CLOSE_LIMIT:?}; giving up"),
    }
}

/// Opens (creating) the SQLite store at `path` with default (durable) options.
pub async fn open_sqlite_file(path: &std::path::Path) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(open_sqlite(Some(path.to_path_buf())).await?))
}

/// `None` opens a private temporary file (SQLite's answer to `:memory:` in WAL mode).
async fn open_sqlite(path: Option<PathBuf>) -> Result<SqliteStore> {
    let opened = tokio::task::spawn_blocking(move || match path {
        Some(path) => SqliteStore::open(path, SqliteOptions::default()),
        None => SqliteStore::open_temporary(SqliteOptions::default(), system_clock()),
    })
    .await?;
    Ok(opened?)
}

/// The password of a PostgreSQL URL, if any: printed nowhere ([`crate::output`]
/// scrubs it from every message as a last line of defence).
pub fn password(url: &str) -> Option<String> {
    let config = take_schema_param(url)
        .0
        .parse::<tokio_postgres::Config>()
        .ok()?;
    let password = config.get_password()?;
    Some(String::from_utf8_lossy(password).into_owned())
}

/// `url` with any password replaced by `***`, safe to print.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

fn sqlite_opened(store: SqliteStore) -> Result<(Arc<dyn Store>, Vec<i64>, i64)> {
    let report = store.migration().clone();
    Ok((Arc::new(store), report.applied, report.version))
}

/// `duraq migrate`: prints `{"applied":[…],"version":…}`.
pub async fn migrate(db: &Database) -> Result<()> {
    let (store, applied, version) = db.open_migrating(false).await?;
    close(&store).await;
    print_json(&json!({ "applied": applied, "version": version }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_passwords() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        let err = Database::parse("postgres://u:secret@h:x/db", None).unwrap_err();
        assert!(!err.message.contains("secret"), "{}", err.message);
    }

    #[test]
    fn parses_url_forms() {
        assert_eq!(
            Database::parse("sqlite:a.db", None).unwrap(),
            Database::SqliteFile("a.db".into())
        );
        assert_eq!(
            Database::parse("sqlite:///tmp/a.db", None).unwrap(),
            Database::SqliteFile("/tmp/a.db".into())
        );
        assert_eq!(
            Database::parse("sqlite::memory:", None).unwrap(),
            Database::SqliteMemory
        );
        assert!(matches!(
            Database::parse("postgres://u@h/db", None).unwrap(),
            Database::Postgres { schema: None, .. }
        ));
        assert_eq!(
            Database::parse("postgres://u@h/db?sslmode=disable&schema=jobs", None).unwrap(),
            Database::Postgres {
                url: "postgres://u@h/db?sslmode=disable".into(),
                schema: Some("jobs".into())
            }
        );
        assert_eq!(
            Database::parse("postgres://u@h/db?schema=a", Some("b")).unwrap(),
            Database::Postgres {
                url: "postgres://u@h/db".into(),
                schema: Some("b".into())
            }
        );
        assert_eq!(
            Database::parse("sqlite:a.db", Some("b")).unwrap_err().code,
            "invalid-database-url"
        );
        for bad in [
            "mysql://x",
            "sqlite:",
            "duraq.db",
            "",
            "postgres://h:notaport/db",
        ] {
            assert_eq!(
                Database::parse(bad, None).unwrap_err().code,
                "invalid-database-url",
                "{bad}"
            );
        }
    }
}
