//! Tenant providers: where the list of tenants (name → database URL) comes from.
//!
//! - a file, JSON `{"tenants":[{"name":"acme","database":"sqlite:tenants/acme.db"}]}`
//!   or TOML of the same shape (`[[tenants]]`, chosen by a `.toml` extension);
//!   relative SQLite paths are resolved against the file's folder;
//! - a folder of SQLite files: every `*.db` file, named by its stem;
//! - a SQL query on a control database (SQLite or PostgreSQL, read only like a
//!   ledger read) whose rows are `(name, database URL)`; relative SQLite paths are
//!   resolved against a SQLite control database's folder, else left as given.
//!
//! Listing only reads the list: a tenant whose URL cannot be resolved is still
//! listed, and fails (`tenant-unresolved`) when [`Tenant::resolve`] is called, so
//! that a preflight reports it along with every other failing tenant.
//!
//! Tenant URLs: `sqlite:<path>` (or `sqlite://<path>`), and `postgres://…` /
//! `postgresql://…` optionally naming the tenant's schema with a `schema=<name>`
//! query parameter or a `#<name>` suffix (removed before connecting; the name must
//! be a plain identifier). Without a connect timeout in the URL, 10 s is used.
//! URLs hold passwords: `Debug` and every message show them redacted.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;

use crate::cause::{describe, redact_url};
use crate::error::{Error, Result};
use crate::{ledger_postgres, ledger_sqlite};

/// Where the tenants are listed (`Debug`, in `cause`, redacts the control
/// URL's password).
#[derive(Clone, PartialEq, Eq)]
pub enum TenantSource {
    /// A JSON (or `.toml`) file of name → database URL.
    File(PathBuf),
    /// A folder whose `*.db` files are the tenants.
    Directory(PathBuf),
    /// A query on a control database returning rows of (name, database URL).
    Query {
        /// The control database's URL (`sqlite:…` or `postgres://…`), read only.
        control: String,
        /// The SQL returning the rows; run inside a read-only transaction.
        query: String,
    },
}

/// One listed tenant, not yet resolved (`Debug`, in `cause`, redacts the URL's
/// password).
#[derive(Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The tenant's name (unique within its provider).
    pub name: String,
    /// The database URL as listed.
    pub database: String,
    /// The folder relative SQLite paths are resolved against.
    pub base_dir: Option<PathBuf>,
}

/// A tenant's database, resolved from its URL.
#[derive(Clone, Debug)]
pub enum TenantDatabase {
    /// A SQLite file (never created by this crate).
    Sqlite(PathBuf),
    /// A PostgreSQL database, optionally one schema in it.
    Postgres {
        /// The connection settings (boxed: they are large).
        config: Box<tokio_postgres::Config>,
        /// The tenant's schema (`?schema=` or `#name` in its URL); `None` means
        /// the connection's current schema.
        schema: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantsFile {
    tenants: Vec<TenantEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantEntry {
    name: String,
    database: String,
}

impl TenantSource {
    /// Lists the tenants, in the provider's order (file order; folder and query
    /// answers sorted by name). Tenant names must be non-empty and unique.
    ///
    /// ```
    /// use duraq_tenants::TenantSource;
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("tenants.json");
    /// std::fs::write(&file, r#"{"tenants":[{"name":"acme","database":"sqlite:acme.db"}]}"#)
    ///     .unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// let tenants = rt.block_on(TenantSource::File(file).list()).unwrap();
    /// assert_eq!(tenants[0].name, "acme");
    /// ```
    pub async fn list(&self) -> Result<Vec<Tenant>> {
        let (source_name, tenants) = match self {
            Self::File(path) => (path.display().to_string(), read_file(path)?),
            Self::Directory(dir) => (dir.display().to_string(), read_dir(dir)?),
            Self::Query { control, query } => {
                let mut rows = run_query(control, query).await?;
                rows.sort_by(|a, b| a.name.cmp(&b.name));
                ("the control query".to_string(), rows)
            }
        };
        let mut seen = std::collections::HashSet::new();
        for tenant in &tenants {
            if tenant.name.trim().is_empty() {
                return Err(Error::config(source_name, "a tenant has an empty name"));
            }
            if !seen.insert(tenant.name.as_str()) {
                let message = format!("tenant {:?} is listed twice", tenant.name);
                return Err(Error::config(source_name, message));
            }
        }
        Ok(tenants)
    }
}

fn read_file(path: &Path) -> Result<Vec<Tenant>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(&name, format!("cannot read: {e}")))?;
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let parsed: TenantsFile = if is_toml {
        toml::from_str(&text).map_err(|e| Error::config(&name, e.to_string()))?
    } else {
        serde_json::from_str(&text).map_err(|e| Error::config(&name, e.to_string()))?
    };
    let base_dir = path.parent().map(Path::to_path_buf);
    Ok(parsed
        .tenants
        .into_iter()
        .map(|e| Tenant {
            name: e.name,
            database: e.database,
            base_dir: base_dir.clone(),
        })
        .collect())
}

fn read_dir(dir: &Path) -> Result<Vec<Tenant>> {
    let name = dir.display().to_string();
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::config(&name, format!("cannot read: {e}")))?;
    let mut tenants = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| Error::config(&name, e.to_string()))?
            .path();
        if path.is_file() && path.extension().is_some_and(|e| e == "db") {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let database = format!("sqlite:{}", path.display());
            tenants.push(Tenant {
                name: stem.unwrap_or_default(),
                database,
                base_dir: None,
            });
        }
    }
    tenants.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tenants)
}

async fn run_query(control: &str, query: &str) -> Result<Vec<Tenant>> {
    let probe = Tenant {
        name: "control".into(),
        database: control.into(),
        base_dir: None,
    };
    let database = probe
        .resolve()
        .map_err(|e| Error::config("--tenants-control", e.to_string()))?;
    let (rows, base_dir) = match database {
        TenantDatabase::Sqlite(path) => {
            let base_dir = path.parent().map(Path::to_path_buf);
            let query = query.to_string();
            let rows =
                tokio::task::spawn_blocking(move || ledger_sqlite::query_pairs(&path, &query))
                    .await
                    .map_err(|e| Error::config("the control query", e.to_string()))??;
            (rows, base_dir)
        }
        TenantDatabase::Postgres { config, schema } => (
            ledger_postgres::query_pairs(&config, schema.as_deref(), query).await?,
            None,
        ),
    };
    Ok(rows
        .into_iter()
        .map(|(name, database)| Tenant {
            name,
            database,
            base_dir: base_dir.clone(),
        })
        .collect())
}

impl Tenant {
    /// Resolves the URL (`tenant-unresolved` when empty, of an unknown kind, or
    /// naming an invalid schema). Nothing is opened.
    pub fn resolve(&self) -> Result<TenantDatabase> {
        let unresolved = |message: String| Error::Unresolved {
            tenant: self.name.clone(),
            message,
        };
        let url = self.database.as_str();
        if url.trim().is_empty() {
            return Err(unresolved("the database URL is empty".into()));
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || path == ":memory:" {
                return Err(unresolved(format!("{url:?} names no database file")));
            }
            let path = PathBuf::from(path);
            let path = match &self.base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path,
            };
            return Ok(TenantDatabase::Sqlite(path));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (url, schema) = split_schema(url).map_err(unresolved)?;
            let mut config = tokio_postgres::Config::from_str(&url).map_err(|e| {
                let shown = redact_url(&url);
                unresolved(format!("invalid PostgreSQL URL {shown}: {}", describe(&e)))
            })?;
            if config.get_connect_timeout().is_none() {
                config.connect_timeout(Duration::from_secs(10));
            }
            return Ok(TenantDatabase::Postgres {
                config: Box::new(config),
                schema,
            });
        }
        let scheme = url.split(':').next().unwrap_or_default();
        Err(unresolved(format!(
            "unknown database URL kind {scheme:?}; expected sqlite: or postgres://"
        )))
    }
}

/// Splits `#schema` and `schema=` off a PostgreSQL URL.
fn split_schema(url: &str) -> Result<(String, Option<String>), String> {
    let (url, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f.to_string())),
        None => (url, None),
    };
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    let mut from_query = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("schema=") {
            Some(value) if from_query.is_none() => from_query = Some(value.to_string()),
            Some(_) => return Err("schema= is given twice".into()),
            None => kept.push(pair),
        }
    }
    let schema = match (fragment, from_query) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!("schema {a:?} and schema={b:?} differ"))
        }
        (a, b) => a.or(b),
    };
    if let Some(schema) = &schema {
        if !ledger_postgres::is_plain_identifier(schema) {
            return Err(format!(
                "schema {schema:?} is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63)"
            ));
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, schema))
}

// `Debug` of the public types that hold database URLs: redacted, since a URL may
// carry a password and `Debug` output ends up in logs and panic messages.

impl std::fmt::Debug for TenantSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
            Self::Directory(path) => f.debug_tuple("Directory").field(path).finish(),
            Self::Query { control, query } => f
                .debug_struct("Query")
                .field("control", &redact_url(control))
                .field("query", query)
                .finish(),
        }
    }
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant")
            .field("name", &self.name)
            .field("database", &redact_url(&self.database))
            .field("base_dir", &self.base_dir)
            .finish()
    }
}
