//! Migration catalogs: which migrations exist, which databases they target, and
//! where a database records that it has them (its [`Ledger`]).
//!
//! A folder catalog is `<DIR>/<version>_<name>.sql` (version = ASCII digits, read
//! as an `i64`; leading zeros do not make a new version). The header is the run of
//! comment and blank lines before the first statement; in it,
//! `-- duraq:databases: projectTenant, other` lists the identifiers a migration
//! targets (no such line: `default`) and `-- duraq:phase: post-publication` gives
//! its phase. Anything doubtful is refused, never guessed, because a migration
//! silently dropped from the catalog would make a preflight answer "nothing
//! pending" for a database that lacks it: an unknown `-- duraq:` directive, one
//! given twice or after the first statement, an empty list, a bad file name, two
//! files with one version. Files not ending in `.sql`, dotfiles and folders are
//! ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The identifier a migration without a databases line targets.
pub const DEFAULT_IDENTIFIER: &str = "default";
/// The ledger table of folder catalogs, one per tenant database (or schema).
pub const TENANT_LEDGER_TABLE: &str = "duraq_tenant_migrations";
/// The ledger table the duraq job stores keep (`docs/operating.md`).
pub const JOB_STORE_LEDGER_TABLE: &str = "duraq_migrations";
/// The ledger scope of the job store's own schema in [`JOB_STORE_LEDGER_TABLE`].
pub const JOB_STORE_SCOPE: &str = "duraq.jobs";
/// Where a database records the migrations it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ledger {
    /// `duraq_tenant_migrations(version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    /// applied_at_ms INTEGER NOT NULL)` (`BIGINT` on PostgreSQL).
    Tenant,
    /// The job store's `duraq_migrations(scope, version, applied_at_ms)`, rows of
    /// scope [`JOB_STORE_SCOPE`].
    JobStore,
}

impl Ledger {
    /// The ledger's table name (a constant, never user input).
    pub fn table(self) -> &'static str {
        match self {
            Self::Tenant => TENANT_LEDGER_TABLE,
            Self::JobStore => JOB_STORE_LEDGER_TABLE,
        }
    }
}

/// One migration of a catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The version (the file name's digits).
    pub version: i64,
    /// The name (the file name between `_` and `.sql`).
    pub name: String,
    /// The identifiers it targets (`["default"]` without a databases line).
    pub databases: Vec<String>,
    /// Its phase, if the header gives one.
    pub phase: Option<String>,
    /// The SQL to run; `None` for the job store's schema, which its store applies.
    pub sql: Option<String>,
}

/// Migrations ordered by version, and the ledger that records them.
///
/// ```
/// use duraq_tenants::Catalog;
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(
///     dir.path().join("20240101_add_notes.sql"),
///     "-- duraq:databases: projectTenant\nCREATE TABLE notes (id INTEGER);\n",
/// )
/// .unwrap();
/// let catalog = Catalog::load_dir(dir.path()).unwrap().select("projectTenant", None);
/// assert_eq!(catalog.versions(), vec![20240101]);
/// assert!(Catalog::load_dir(dir.path()).unwrap().select("default", None).is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalog {
    ledger: Ledger,
    migrations: Vec<Migration>,
    /// Every version of the source catalog, kept through [`Catalog::select`].
    known: Vec<i64>,
    /// The job store's catalog for PostgreSQL tenants, which number their
    /// schema versions on their own (see [`Catalog::for_backend`]).
    postgres: Option<Box<Catalog>>,
}

/// Where a catalog comes from: a folder, or the job store's own schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogSource {
    /// A folder of `<version>_<name>.sql` files.
    Dir(PathBuf),
    /// [`Catalog::job_store`] (what `duraq tenants pending` checks without `--migrations`).
    JobStore,
}

impl CatalogSource {
    /// Loads the catalog.
    pub fn load(&self) -> Result<Catalog> {
        match self {
            Self::Dir(dir) => Catalog::load_dir(dir),
            Self::JobStore => Ok(Catalog::job_store()),
        }
    }
}

impl Catalog {
    /// Reads every `*.sql` file of `dir` (see the module doc for the format).
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::catalog(dir, format!("cannot read the folder: {e}")))?;
        let mut by_version: BTreeMap<i64, (PathBuf, Migration)> = BTreeMap::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::catalog(dir, e.to_string()))?;
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with('.') || !file_name.ends_with(".sql") || path.is_dir() {
                continue;
            }
            let (version, name) =
                parse_file_name(&file_name).map_err(|m| Error::catalog(&path, m))?;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::catalog(&path, format!("cannot read: {e}")))?;
            let (databases, phase) = parse_header(&text).map_err(|m| Error::catalog(&path, m))?;
            let migration = Migration {
                version,
                name,
                databases,
                phase,
                sql: Some(text),
            };
            if let Some((other, _)) = by_version.get(&version) {
                let message = format!("version {version} is also used by {}", other.display());
                return Err(Error::catalog(&path, message));
            }
            by_version.insert(version, (path, migration));
        }
        let migrations: Vec<Migration> = by_version.into_values().map(|(_, m)| m).collect();
        let known = migrations.iter().map(|m| m.version).collect();
        Ok(Self {
            ledger: Ledger::Tenant,
            migrations,
            known,
            postgres: None,
        })
    }

    /// The job store's own schema as a catalog: the SQLite store's
    /// [`SCHEMA_VERSIONS`](duraq_store_sqlite::SCHEMA_VERSIONS) for SQLite
    /// tenants, the PostgreSQL store's
    /// [`SCHEMA_VERSIONS`](duraq_store_postgres::SCHEMA_VERSIONS) for
    /// PostgreSQL ones (each store numbers its versions on its own), recorded in
    /// the store's ledger. Its migrations target every identifier and have no
    /// phase (so a phase filter leaves none); they carry no SQL.
    ///
    /// ```
    /// use duraq_tenants::Catalog;
    /// let catalog = Catalog::job_store();
    /// // 1, 2, 3, … up to each store's newest version.
    /// let sqlite = duraq_store_sqlite::SCHEMA_VERSIONS.iter().map(|v| v.version);
    /// assert_eq!(catalog.for_backend(false).versions(), sqlite.collect::<Vec<_>>());
    /// let postgres = duraq_store_postgres::SCHEMA_VERSIONS.iter().map(|v| v.version);
    /// assert_eq!(catalog.for_backend(true).versions(), postgres.collect::<Vec<_>>());
    /// assert_eq!(catalog.for_backend(false).versions()[..3], [1, 2, 3]);
    /// ```
    pub fn job_store() -> Self {
        let sqlite: Vec<(i64, &str)> = duraq_store_sqlite::SCHEMA_VERSIONS
            .iter()
            .map(|v| (v.version, v.name))
            .collect();
        let postgres: Vec<(i64, &str)> = duraq_store_postgres::SCHEMA_VERSIONS
            .iter()
            .map(|v| (v.version, v.name))
            .collect();
        let postgres = Self::job_store_of(&postgres, None);
        Self::job_store_of(&sqlite, Some(Box::new(postgres)))
    }

    fn job_store_of(versions: &[(i64, &str)], postgres: Option<Box<Catalog>>) -> Self {
        let migrations = versions
            .iter()
            .map(|(version, name)| Migration {
                version: *version,
                name: (*name).to_string(),
                databases: Vec::new(),
                phase: None,
                sql: None,
            })
            .collect();
        Self {
            ledger: Ledger::JobStore,
            migrations,
            known: versions.iter().map(|(v, _)| *v).collect(),
            postgres,
        }
    }

    /// The catalog a tenant's ledger is compared with: for the job store on a
    /// PostgreSQL tenant, the PostgreSQL store's versions; otherwise this one.
    pub fn for_backend(&self, postgres: bool) -> &Catalog {
        match &self.postgres {
            Some(pg) if postgres => pg,
            _ => self,
        }
    }

    /// The migrations targeting `identifier` (and of `phase`, when given).
    pub fn select(&self, identifier: &str, phase: Option<&str>) -> Self {
        let migrations = self
            .migrations
            .iter()
            .filter(|m| {
                let targets = (m.databases.is_empty() && self.ledger == Ledger::JobStore)
                    || m.databases.iter().any(|d| d == identifier);
                targets && phase.is_none_or(|p| m.phase.as_deref() == Some(p))
            })
            .cloned()
            .collect();
        Self {
            ledger: self.ledger,
            migrations,
            known: self.known.clone(),
            postgres: self
                .postgres
                .as_ref()
                .map(|pg| Box::new(pg.select(identifier, phase))),
        }
    }

    /// Whether the source catalog (before any [`Catalog::select`]) has `version`:
    /// a ledger version it lacks is reported as unknown.
    pub fn knows(&self, version: i64) -> bool {
        self.known.binary_search(&version).is_ok()
    }

    /// Where databases record these migrations.
    pub fn ledger(&self) -> Ledger {
        self.ledger
    }

    /// The migrations, ascending by version.
    pub fn migrations(&self) -> &[Migration] {
        &self.migrations
    }

    /// The versions, ascending.
    pub fn versions(&self) -> Vec<i64> {
        self.migrations.iter().map(|m| m.version).collect()
    }

    /// How many migrations there are.
    pub fn len(&self) -> usize {
        self.migrations.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.migrations.is_empty()
    }
}

fn parse_file_name(file_name: &str) -> Result<(i64, String), String> {
    let stem = file_name.strip_suffix(".sql").unwrap_or(file_name);
    let bad = || {
        format!(
            "file name must be <version>_<name>.sql with a digits-only version, got {file_name:?}"
        )
    };
    let (digits, name) = stem.split_once('_').ok_or_else(bad)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return Err(bad());
    }
    let version = digits
        .parse::<i64>()
        .map_err(|_| format!("version {digits} is too large"))?;
    Ok((version, name.to_string()))
}

type Header = (Vec<String>, Option<String>);

fn parse_header(text: &str) -> Result<Header, String> {
    let mut databases: Option<Vec<String>> = None;
    let mut phase: Option<String> = None;
    let mut in_header = true;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        let line_no = index + 1;
        if in_header && !(trimmed.is_empty() || trimmed.starts_with("--")) {
            in_header = false;
        }
        let Some(directive) = trimmed.strip_prefix("--").map(str::trim_start) else {
            continue;
        };
        let Some(rest) = directive.strip_prefix("duraq:") else {
            continue;
        };
        if !in_header {
            return Err(format!(
                "line {line_no}: duraq directive after the first statement"
            ));
        }
        let (key, value) = rest
            .split_once(':')
            .ok_or_else(|| format!("line {line_no}: expected `-- duraq:<key>: <value>`"))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "databases" if databases.is_none() => {
                let list: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
                if list.iter().any(|d| !is_token(d)) {
                    return Err(format!("line {line_no}: databases must be a non-empty comma-separated list of identifiers"));
                }
                databases = Some(list);
            }
            "phase" if phase.is_none() => {
                if !is_token(value) {
                    return Err(format!("line {line_no}: phase must be one identifier"));
                }
                phase = Some(value.to_string());
            }
            "databases" | "phase" => {
                return Err(format!("line {line_no}: duraq:{key} given twice"))
            }
            other => return Err(format!("line {line_no}: unknown directive duraq:{other}")),
        }
    }
    let databases = databases.unwrap_or_else(|| vec![DEFAULT_IDENTIFIER.to_string()]);
    Ok((databases, phase))
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}
