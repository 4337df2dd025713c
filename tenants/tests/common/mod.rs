//! Shared fixtures: real SQLite files in a temp folder, a migrations folder and a
//! tenants file, built the way an operator would lay them out.

#![allow(dead_code)]

pub mod pg;
pub mod wal;

use std::path::{Path, PathBuf};

use duraq_tenants::{CatalogSource, TenantSource, TenantsRequest};
use rusqlite::{params, Connection};
use tempfile::TempDir;

/// The identifier most tests ask about.
pub const ID: &str = "projectTenant";

/// Two migrations for `projectTenant` (one in the `post-publication` phase) and
/// one for `default`.
pub const STANDARD: &[(&str, &str)] = &[
    ("1_create_notes.sql", "-- duraq:databases: projectTenant\nCREATE TABLE notes (id INTEGER PRIMARY KEY);\n"),
    (
        "2_add_tags.sql",
        "-- a comment\n-- duraq:databases: projectTenant, other\n-- duraq:phase: post-publication\n\nCREATE TABLE tags (id INTEGER);\n",
    ),
    ("3_default_only.sql", "CREATE TABLE default_only (x INTEGER);\n"),
];

pub struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let fixture = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(fixture.path("tenants")).unwrap();
        std::fs::create_dir(fixture.path("migrations")).unwrap();
        fixture
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes migration files into `migrations/`.
    pub fn migrations(&self, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.path("migrations");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    /// Creates `tenants/<name>.db` holding an application table, and a tenant
    /// ledger with `applied` when given.
    pub fn tenant_db(&self, name: &str, applied: Option<&[i64]>) -> PathBuf {
        let path = self.path(&format!("tenants/{name}.db"));
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE app_data (x INTEGER)")
            .unwrap();
        if let Some(applied) = applied {
            conn.execute_batch(
                "CREATE TABLE duraq_tenant_migrations (version INTEGER PRIMARY KEY, \
                 name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
            )
            .unwrap();
            for v in applied {
                conn.execute(
                    "INSERT INTO duraq_tenant_migrations VALUES (?1, ?2, 0)",
                    params![v, format!("m{v}")],
                )
                .unwrap();
            }
        }
        path
    }

    /// Writes `tenants.json` listing `(name, database URL)`.
    pub fn tenants_file(&self, entries: &[(&str, &str)]) -> PathBuf {
        let tenants: Vec<_> = entries
            .iter()
            .map(|(n, d)| serde_json::json!({ "name": n, "database": d }))
            .collect();
        let path = self.path("tenants.json");
        std::fs::write(&path, serde_json::json!({ "tenants": tenants }).to_string()).unwrap();
        path
    }

    /// A request for [`ID`] over `tenants.json` and `migrations/`.
    pub fn request(&self) -> TenantsRequest {
        TenantsRequest::new(
            ID,
            TenantSource::File(self.path("tenants.json")),
            CatalogSource::Dir(self.path("migrations")),
        )
    }
}

/// Every schema object of a SQLite file, sorted.
pub fn sqlite_master(path: &Path) -> Vec<(String, String)> {
    let conn =
        Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = conn
        .prepare("SELECT type, name FROM sqlite_master ORDER BY type, name")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// The versions recorded in a SQLite tenant ledger.
pub fn ledger_versions(path: &Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT version FROM duraq_tenant_migrations ORDER BY version")
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}
