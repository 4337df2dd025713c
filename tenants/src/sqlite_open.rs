//! Reading a SQLite file (a tenant, or a control database) without writing or
//! creating anything, on writable and on read-only storage alike.
//!
//! `SQLITE_OPEN_READONLY` alone is not enough. On a WAL-mode database SQLite
//! opens `<db>-wal` with `O_CREAT` and creates `<db>-shm` for its wal-index even
//! on a read-only connection, and since a read-only connection never
//! checkpoints, it never deletes them again: the preflight left files it had not
//! found, and on a read-only directory it could not open such a database at all.
//! So the header is read first (byte 19 is 2 in WAL mode) and the files beside
//! the database decide how it is opened (always `SQLITE_OPEN_READONLY`, without
//! the create flag, so the database still refuses every write):
//!
//! - Not WAL: plainly. A rollback-journal reader needs the file and a lock only.
//! - WAL, `-wal` holding frames, `-shm` present (a live application, or one
//!   that stopped without a final checkpoint): `readonly_shm=1`, so the existing
//!   `-shm` is mapped read-only and never created. With a live writer SQLite
//!   uses its index; without one it rebuilds the index in heap memory from the
//!   `-wal`. Either way un-checkpointed changes are read.
//! - WAL, no `-wal` or an empty one: everything is in the file, so it is read
//!   with `immutable=1`, SQLite's documented way to read WAL databases on
//!   read-only media, which takes no lock and opens no other file. A deploy
//!   preflight cannot assume that no application opens the database meanwhile,
//!   so the file (size, mtime, inode) and the `-wal` are compared before and
//!   after the read, and any change discards that read and decides again: a
//!   read that could have seen a half-checkpointed file is not used. (Only a
//!   file rewritten twice within one tick of the file system's coarse clock,
//!   just before and during the read, could slip through.)
//! - WAL, frames in `-wal` but no `-shm` (copied files, or a crashed
//!   `locking_mode=EXCLUSIVE` application): the frames cannot be read without
//!   creating `-shm`, and ignoring them would misread the ledger, so this fails
//!   and says why.
//!
//! Closing never checkpoints (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), so it never
//! deletes a sidecar that an application still uses. One race is left: if the
//! last application connection closes (deleting `-wal` and `-shm`) between the
//! look at the sidecars and SQLite's open, SQLite creates an empty `-wal` and
//! the read fails (no `-shm`); removing that file afterwards is not safe, since
//! an application may have opened the database meanwhile and be using it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// A `-wal` this long or shorter holds a header at most, no frame.
const WAL_HEADER_LEN: u64 = 32;
/// Reads of an immutable snapshot that changed underneath, before giving up.
const ATTEMPTS: usize = 4;

/// Why a SQLite file could not be opened for reading (`tenant-unreachable`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "{} holds WAL frames but {} is missing; reading them would create it \
         (open the database once with the application, or checkpoint it)",
        .wal.display(), .shm.display()
    )]
    WalWithoutShm { wal: PathBuf, shm: PathBuf },
    #[error("{} kept changing while it was read without locks", .path.display())]
    Unstable { path: PathBuf },
}

/// How the file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Plain,
    ReadOnlyShm,
    Immutable,
}

/// What the file and its `-wal` looked like; compared around an immutable read.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: (u64, u64),
    wal_len: Option<u64>,
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn stamp(path: &Path) -> Result<Stamp, OpenError> {
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let inode = (0, 0);
    let wal_len = std::fs::metadata(sidecar(path, "-wal"))
        .ok()
        .map(|m| m.len());
    Ok(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
        wal_len,
    })
}

/// Whether the file's header says WAL mode (a short or foreign file is left to
/// SQLite, which reports what is wrong with it).
fn is_wal(path: &Path) -> Result<bool, OpenError> {
    let mut header = [0u8; 100];
    let mut file = std::fs::File::open(path)?;
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..])? {
            0 => return Ok(false),
            n => read += n,
        }
    }
    Ok(header.starts_with(b"SQLite format 3\0") && header[19] == 2)
}

/// Decides how to open `path` (see the module docs).
fn plan(path: &Path) -> Result<Mode, OpenError> {
    if !is_wal(path)? {
        return Ok(Mode::Plain);
    }
    let wal = sidecar(path, "-wal");
    let frames = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_HEADER_LEN);
    let shm = sidecar(path, "-shm");
    match (frames, shm.exists()) {
        (false, _) => Ok(Mode::Immutable),
        (true, true) => Ok(Mode::ReadOnlyShm),
        (true, false) => Err(OpenError::WalWithoutShm { wal, shm }),
    }
}

/// `file:` URI of `path` (absolute, every byte outside `[A-Za-z0-9/._~-]`
/// percent-encoded) with `query`.
fn uri(path: &Path, query: &str) -> Result<String, OpenError> {
    let absolute = std::path::absolute(path)?;
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(absolute.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = absolute.to_string_lossy().replace('\\', "/").into_bytes();
    let mut out = String::from("file://");
    if !bytes.starts_with(b"/") {
        out.push('/');
    }
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/._~-".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('?');
    out.push_str(query);
    Ok(out)
}

/// Opens `path` read-only in `mode`. SQLite refuses every write on it.
fn open(path: &Path, mode: Mode) -> Result<Connection, OpenError> {
    let query = match mode {
        Mode::Plain | Mode::ReadOnlyShm => "mode=ro&readonly_shm=1",
        Mode::Immutable => "mode=ro&immutable=1",
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri(path, query)?, flags)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Runs `read` on a read-only connection to `path`: `Err` when the file could
/// not be opened, else what `read` returned. An immutable read whose file
/// changed meanwhile is discarded and made again.
pub(crate) fn read<T, E>(
    path: &Path,
    mut read: impl FnMut(&Connection) -> Result<T, E>,
) -> Result<Result<T, E>, OpenError> {
    for _ in 0..ATTEMPTS {
        let mode = plan(path)?;
        let before = (mode == Mode::Immutable).then(|| stamp(path)).transpose()?;
        let conn = open(path, mode)?;
        let result = read(&conn);
        drop(conn);
        match before {
            Some(before) if stamp(path)? != before => continue,
            _ => return Ok(result),
        }
    }
    Err(OpenError::Unstable {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(conn: &Connection) -> rusqlite::Result<i64> {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
    }

    #[test]
    fn an_immutable_read_of_a_file_that_changed_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a #%?.db");
        let conn = Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        drop(conn);
        // Timestamps are coarse: start from an old one so that a write shows.
        let old = SystemTime::now() - Duration::from_secs(3600);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(old).unwrap();
        assert_eq!(plan(&path).unwrap(), Mode::Immutable);
        let mut calls = 0;
        let seen = read(&path, |conn| {
            calls += 1;
            if calls == 1 {
                // An application opens the database, writes and closes (which
                // checkpoints into the file) while the lock-free read runs.
                let app = Connection::open(&path).unwrap();
                app.execute("INSERT INTO t VALUES (2)", []).unwrap();
            }
            count(conn)
        })
        .unwrap()
        .unwrap();
        assert_eq!((calls, seen), (2, 2));
        assert!(!sidecar(&path, "-wal").exists() && !sidecar(&path, "-shm").exists());
    }

    #[test]
    fn odd_file_names_are_encoded_in_the_uri() {
        let uri = uri(Path::new("/x/a #%?é.db"), "mode=ro").unwrap();
        assert_eq!(uri, "file:///x/a%20%23%25%3F%C3%A9.db?mode=ro");
    }
}
