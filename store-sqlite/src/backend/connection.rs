//! Opening connections with the durability pragmas, and checking that SQLite really
//! applied them: a pragma SQLite cannot honour (WAL on a `:memory:` database, a
//! read-only medium) is silently ignored, so every value is read back and a
//! mismatch refuses to open rather than run with weaker guarantees than promised.

use std::path::Path;

use duraq_core::{Error, Result};
use rusqlite::{Connection, OpenFlags};

use crate::backend::busy::wait_in_short_steps;
use crate::backend::opening::OpenMode;
use crate::error::{retry_busy, SqlResult};
use crate::options::SqliteOptions;

/// What the pragmas read back as, for `health()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PragmaReport {
    /// `PRAGMA journal_mode` (always `wal` for an open store).
    pub journal_mode: String,
    /// `PRAGMA synchronous` (2 = FULL, 1 = NORMAL).
    pub synchronous: i64,
    /// `PRAGMA foreign_keys` (0: duraq relates rows in code, not by constraints).
    pub foreign_keys: i64,
}

/// Opens one read-write connection on `path` with every per-connection pragma set
/// and verified. `journal_mode=WAL` is persistent in the file; it is set (and
/// checked) by [`open_connection`] each time, which is a no-op once the file is WAL.
/// Only [`OpenMode::Create`] may create the file: read connections, and every
/// connection of a store opened with `open_existing`, use [`OpenMode::Existing`]
/// (a file deleted under a running store is then an error, not a new empty one).
pub(crate) fn open_connection(
    path: &Path,
    opts: &SqliteOptions,
    mode: OpenMode,
) -> Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    if mode == OpenMode::Create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).db()?;
    wait_in_short_steps(&conn, opts.busy_timeout)?;
    let mode: String =
        retry_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Backend {
            message: format!("SQLite refused journal_mode=WAL (it reports {mode:?})"),
            source: None,
        });
    }
    // Pragma names and values here are constants of this crate, never user input.
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;",
        opts.synchronous.pragma()
    ))
    .db()?;
    let report = read_pragmas(&conn)?;
    if report.synchronous != opts.synchronous.read_back() {
        return Err(Error::Backend {
            message: format!(
                "SQLite did not apply synchronous={} (it reports {})",
                opts.synchronous.pragma(),
                report.synchronous
            ),
            source: None,
        });
    }
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Gives the writer connection a 16 MiB page cache (readers keep SQLite's 2 MiB):
/// a group commit of a thousand jobs touches more pages than the default holds,
/// and a page evicted mid-transaction is written to the WAL twice. The cache
/// fills only as pages are touched, so a small database never pays for it.
pub(crate) fn enlarge_writer_cache(conn: &Connection) -> Result<()> {
    conn.execute_batch("PRAGMA cache_size = -16384").db()
}

/// Reads the durability pragmas of `conn`.
pub(crate) fn read_pragmas(conn: &Connection) -> Result<PragmaReport> {
    Ok(PragmaReport {
        journal_mode: conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .db()?,
        synchronous: conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .db()?,
        foreign_keys: conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .db()?,
    })
}
