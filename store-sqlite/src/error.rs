//! The one place where rusqlite errors become [`duraq_core::Error`], plus the retry
//! rule for "database is locked": SQLite's busy handler already waits
//! `busy_timeout`; past that the store retries a few times with backoff and then
//! reports `database-busy`, never a raw SQLite message.
//!
//! Every mapped error keeps the rusqlite error as its `source()`, so
//! [`duraq_core::inspect::error_chain`] prints SQLite's own reason ("file is not a
//! database", "database or disk is full", "database disk image is malformed").
//! Opening adds what was being opened ([`opening_error`]): a text file, a
//! directory, a read-only mount and a corrupt page then read
//! `backend error: opening SQLite database ./x.db: <the cause>` instead of all
//! printing `backend error: sqlite`.

use std::path::Path;
use std::time::Duration;

use duraq_core::Error;
use rusqlite::ErrorCode as Code;

/// How many times a busy operation is retried after SQLite's own wait.
pub(crate) const BUSY_RETRIES: u32 = 4;

/// Whether `err` means another connection holds the lock (retryable).
pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(Code::DatabaseBusy) | Some(Code::DatabaseLocked)
    )
}

/// Whether `err` is a PRIMARY KEY constraint violation (an id already in use).
pub(crate) fn is_primary_key_violation(err: &rusqlite::Error) -> bool {
    err.sqlite_error()
        .is_some_and(|e| e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

/// The message of a backend error mapped without further context; the cause is
/// the source.
const GENERIC: &str = "sqlite";

/// Maps every rusqlite error into duraq's error type, keeping it as the source:
/// busy and locked are `database-busy`, a full disk (`SQLITE_FULL`, which
/// `PRAGMA max_page_count` also raises) is `storage-full`, the rest `backend-error`.
pub(crate) fn map_err(err: rusqlite::Error) -> Error {
    if is_busy(&err) {
        return Error::Busy {
            message: err.to_string(),
        };
    }
    if err.sqlite_error_code() == Some(Code::DiskFull) {
        return Error::storage_full(
            "the disk holding the SQLite database or its temporary files is full; \
             free space there (or raise the file-size quota), then retry",
            err,
        );
    }
    Error::backend(GENERIC, err)
}

/// Says what was being done when `err` happened (`context` replaces the generic
/// "sqlite" or is put before a more specific message); the source is kept.
/// Validation and not-found errors already say what they are and pass unchanged.
pub(crate) fn with_context(context: &str, err: Error) -> Error {
    match err {
        Error::Backend { message, source } => Error::Backend {
            message: if message == GENERIC {
                context.to_owned()
            } else {
                format!("{context}: {message}")
            },
            source,
        },
        Error::Busy { message } => Error::Busy {
            message: format!("{context}: {message}"),
        },
        Error::SchemaIncompatible { message } => Error::schema(format!("{context}: {message}")),
        other => other,
    }
}

/// `err` and its causes as one line, without the generic "sqlite" prefix: for
/// messages that must outlive the error (a failed group commit answers every
/// request of its batch with a copy).
pub(crate) fn describe(err: &Error) -> String {
    match err {
        Error::Backend {
            message,
            source: Some(source),
        } if message == GENERIC => duraq_core::inspect::error_chain(source.as_ref()),
        other => duraq_core::inspect::error_chain(other),
    }
}

/// [`with_context`] for a failure while opening the database at `path`.
pub(crate) fn opening_error(path: &Path, err: Error) -> Error {
    with_context(&format!("opening SQLite database {}", path.display()), err)
}

/// The backoff before busy retry `attempt` (0-based): 10, 20, 40, 80 ms.
pub(crate) fn busy_backoff(attempt: u32) -> Duration {
    Duration::from_millis(10u64 << attempt.min(6))
}

/// Runs `f`, retrying busy failures with backoff; the last failure is mapped.
pub(crate) fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> duraq_core::Result<T> {
    let mut attempt = 0;
    loop {
        match f() {
            Err(err) if is_busy(&err) && attempt < BUSY_RETRIES => {
                tracing::debug!(attempt, "sqlite busy; retrying");
                std::thread::sleep(busy_backoff(attempt));
                attempt += 1;
            }
            other => return other.map_err(map_err),
        }
    }
}

/// Extension: `?` on rusqlite results inside store code.
pub(crate) trait SqlResult<T> {
    /// Maps the error with [`map_err`].
    fn db(self) -> duraq_core::Result<T>;
}

impl<T> SqlResult<T> for rusqlite::Result<T> {
    fn db(self) -> duraq_core::Result<T> {
        self.map_err(map_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duraq_core::ErrorCode;

    fn sqlite_err(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn busy_and_locked_are_retryable_and_map_to_database_busy() {
        for code in [rusqlite::ffi::SQLITE_BUSY, rusqlite::ffi::SQLITE_LOCKED] {
            let err = sqlite_err(code);
            assert!(is_busy(&err));
            assert_eq!(map_err(err).code(), ErrorCode::DatabaseBusy);
        }
        let other = sqlite_err(rusqlite::ffi::SQLITE_IOERR);
        assert!(!is_busy(&other));
        assert_eq!(map_err(other).code(), ErrorCode::Backend);
    }

    #[test]
    fn retry_gives_up_with_busy_and_stops_on_success() {
        let mut calls = 0;
        let err = retry_busy(|| -> rusqlite::Result<()> {
            calls += 1;
            Err(sqlite_err(rusqlite::ffi::SQLITE_BUSY))
        })
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::DatabaseBusy);
        assert_eq!(calls, BUSY_RETRIES + 1);

        let mut calls = 0;
        let value = retry_busy(|| {
            calls += 1;
            if calls < 3 {
                Err(sqlite_err(rusqlite::ffi::SQLITE_BUSY))
            } else {
                Ok(7)
            }
        })
        .unwrap();
        assert_eq!((value, calls), (7, 3));
    }

    #[test]
    fn a_full_database_is_storage_full() {
        let dir = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("full.db")).unwrap();
        // A real SQLITE_FULL: the file may not grow past a few pages.
        conn.execute_batch("CREATE TABLE t(x); PRAGMA max_page_count = 3;")
            .unwrap();
        let err = (0..1000)
            .find_map(|_| {
                conn.execute("INSERT INTO t VALUES (randomblob(1000))", [])
                    .err()
            })
            .expect("the file filled up");
        assert_eq!(map_err(err).code(), ErrorCode::StorageFull);
        assert_eq!(
            map_err(sqlite_err(rusqlite::ffi::SQLITE_FULL)).code(),
            ErrorCode::StorageFull
        );
    }

    #[test]
    fn real_lock_contention_is_classified_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let a = rusqlite::Connection::open(&path).unwrap();
        let b = rusqlite::Connection::open(&path).unwrap();
        b.busy_timeout(Duration::from_millis(1)).unwrap();
        a.execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .unwrap();
        let err = b.execute_batch("BEGIN IMMEDIATE").unwrap_err();
        assert!(is_busy(&err));
        assert_eq!(map_err(err).code(), ErrorCode::DatabaseBusy);
    }
}
