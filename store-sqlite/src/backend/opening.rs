//! The one decision of what opening a path may do, taken before any connection
//! that could write is made.
//!
//! Writing commands open with [`OpenMode::Create`]: a missing file is created and
//! migrated, so a first `duraq enqueue` needs no set-up. Reading commands open
//! with [`OpenMode::Existing`] (`SECURITY.md`): they must never leave a file behind or
//! change one that is not duraq's, so the path is inspected first:
//!
//! - no file → `database-not-found` naming the path (nothing created);
//! - a directory → a backend error that says so (SQLite itself would only say
//!   "unable to open database file");
//! - a file → read through a connection opened *read-only* (no `SQLITE_OPEN_CREATE`,
//!   no write access, so no WAL switch, no pragma, no table): without duraq's
//!   migration ledger (an empty file, another application's database) it is
//!   `database-not-found`, and the file is left byte-identical.
//!
//! Only a file that already holds a duraq ledger goes on to the normal open,
//! which may still upgrade an older schema version (that upgrades, it does not
//! create). A file that is not a database at all ("file is not a database") is a
//! backend error with SQLite's cause, in both modes: it exists, it is just
//! unusable, and saying "not found" would hide why.

use std::path::Path;

use duraq_core::{Error, Result};
use rusqlite::{Connection, OpenFlags};

use crate::error::SqlResult;
use crate::schema_def::LEDGER_TABLE;

/// Whether an open may create the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// Create the file and the schema when missing (`open`, `migrate`).
    Create,
    /// Open only a file that already holds a duraq schema (`open_existing`).
    Existing,
}

/// Decides whether `path` may be opened in `mode`; `Ok` means the caller may go
/// on with the read-write open (which creates the file only in `Create` mode).
/// `database-not-found` names `path`; the caller adds it to other errors
/// ([`crate::error::opening_error`]), once for the whole open.
pub(crate) fn preflight(path: &Path, mode: OpenMode) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(Error::backend(
            "sqlite",
            std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "it is a directory, not a database file",
            ),
        )),
        Ok(_) if mode == OpenMode::Existing => {
            if has_ledger(path)? {
                Ok(())
            } else {
                Err(Error::database_not_found(format!(
                    "{} holds no duraq database (no {LEDGER_TABLE} table); \
                     run `duraq migrate` to create one (nothing was written)",
                    path.display()
                )))
            }
        }
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => match mode {
            OpenMode::Create => Ok(()),
            OpenMode::Existing => Err(Error::database_not_found(format!(
                "no SQLite database at {}; run `duraq migrate` to create one",
                path.display()
            ))),
        },
        // Permission denied on a parent folder and the like: the OS says why.
        Err(err) => Err(Error::backend("sqlite", err)),
    }
}

/// Whether the file at `path` holds duraq's migration ledger, read through a
/// read-only connection that cannot create or change anything.
fn has_ledger(path: &Path) -> Result<bool> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).db()?;
    let found: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [LEDGER_TABLE],
            |r| r.get(0),
        )
        .db()?;
    Ok(found > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use duraq_core::ErrorCode;

    #[test]
    fn missing_file_is_not_found_only_when_it_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.db");
        assert!(preflight(&path, OpenMode::Create).is_ok());
        let err = preflight(&path, OpenMode::Existing).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DatabaseNotFound);
        assert!(err.to_string().contains("absent.db"), "{err}");
        assert!(!path.exists(), "nothing was created");
    }

    #[test]
    fn a_directory_is_refused_in_both_modes_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [OpenMode::Create, OpenMode::Existing] {
            let err = preflight(dir.path(), mode).unwrap_err();
            assert_eq!(err.code(), ErrorCode::Backend);
            let chain = duraq_core::inspect::error_chain(&err);
            assert!(chain.contains("directory"), "{chain}");
        }
    }
}
