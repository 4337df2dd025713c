//! WAL-mode fixtures: tenant files as a running application leaves them (a
//! writer connection still open, changes not yet checkpointed), as one that
//! stopped leaves them, and helpers to compare folders and make them read-only.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

const LEDGER: &str = "CREATE TABLE duraq_tenant_migrations (version INTEGER PRIMARY KEY, \
                      name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)";

fn record(conn: &Connection, versions: &[i64]) {
    for v in versions {
        conn.execute(
            "INSERT INTO duraq_tenant_migrations VALUES (?1, ?2, 0)",
            params![v, format!("m{v}")],
        )
        .unwrap();
    }
}

/// A WAL-mode tenant with `checkpointed` in the file and `in_wal` only in its
/// `-wal`, and the writer connection that keeps it so (a live application).
pub fn live_writer(path: &Path, checkpointed: &[i64], in_wal: &[i64]) -> Connection {
    let conn = Connection::open(path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch("PRAGMA wal_autocheckpoint = 0; CREATE TABLE app_data (x INTEGER);")
        .unwrap();
    conn.execute_batch(LEDGER).unwrap();
    record(&conn, checkpointed);
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    record(&conn, in_wal);
    let wal = std::fs::metadata(sidecar(path, "-wal")).unwrap().len();
    assert_eq!(
        wal > 32,
        !in_wal.is_empty(),
        "the -wal holds frames ({wal} bytes)"
    );
    conn
}

/// A WAL-mode tenant whose application closed cleanly: no `-wal`, no `-shm`.
pub fn closed_wal_db(path: &Path, applied: &[i64]) {
    drop(live_writer(path, &[], applied));
    assert!(!sidecar(path, "-wal").exists() && !sidecar(path, "-shm").exists());
}

/// Copies `from` and the given sidecars to `to`: what a crashed application
/// (or a backup taken while it ran) leaves behind.
pub fn copy_with(from: &Path, to: &Path, sidecars: &[&str]) {
    std::fs::copy(from, to).unwrap();
    for s in sidecars {
        std::fs::copy(sidecar(from, s), sidecar(to, s)).unwrap();
    }
}

pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", path.display()))
}

/// Every file and folder under `dir`, relative, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                stack.push(path);
            }
            out.push(rel);
        }
    }
    out.sort();
    out
}

/// Folders 0555 and files 0444 under (and including) `dir`; `false` restores
/// 0755/0644 so that the temp folder can be removed.
pub fn set_read_only(dir: &Path, read_only: bool) {
    let (dirs, files) = if read_only {
        (0o555, 0o444)
    } else {
        (0o755, 0o644)
    };
    // chmod needs ownership and search permission only, so the order is free.
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(listing(dir).iter().map(|rel| dir.join(rel)));
    for path in paths {
        let mode = if path.is_dir() { dirs } else { files };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// Whether this process runs as root (it owns what it creates), for which
/// permission bits do not make storage read-only.
pub fn runs_as_root(dir: &Path) -> bool {
    let probe = dir.join(".owner-probe");
    std::fs::write(&probe, "").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    uid == 0
}
