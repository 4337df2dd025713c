//! Statements that bind texts in place, without SQLite copying them.
//!
//! rusqlite binds every text with `SQLITE_TRANSIENT`: SQLite allocates a copy of
//! each one and frees it at the next bind. A batch insert binds five texts per
//! row (id, job name, args, queue, digest), and those copies and frees were about
//! a tenth of the writer thread's samples in the `enqueue_batch` profile. Here a
//! borrowed text is bound with `SQLITE_STATIC`, so SQLite reads the caller's
//! bytes where they are. That is sound because [`StaticStatements::execute`]
//! binds, steps, resets and clears the bindings within one call, while the
//! values are borrowed: no binding outlives them.
//!
//! Every parameter is NULL between two executions (a fresh statement's are, and
//! each execution ends by clearing them), so a NULL value is not bound again: a
//! fresh job row has ten of them.
//!
//! The statements are prepared once per connection (they are the writer's
//! hottest) and finalized when the [`StaticStatements`] is dropped, which its
//! borrow of the connection orders before the connection closes. Only the writer
//! thread has one; a caller's connection (`enqueue_in_transaction`) goes through
//! rusqlite's statement cache.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::ptr::NonNull;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{ffi, Connection};

/// Prepared statements of one connection, keyed by their `'static` SQL text.
pub(crate) struct StaticStatements<'c> {
    conn: &'c Connection,
    prepared: RefCell<Vec<(&'static str, NonNull<ffi::sqlite3_stmt>)>>,
}

impl<'c> StaticStatements<'c> {
    pub(crate) fn new(conn: &'c Connection) -> Self {
        Self {
            conn,
            prepared: RefCell::new(Vec::new()),
        }
    }

    /// The connection the statements are prepared on.
    pub(crate) fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// Runs `sql` (no rows returned) once with `values` bound in order.
    pub(crate) fn execute<'v>(
        &self,
        sql: &'static str,
        values: impl Iterator<Item = rusqlite::Result<ToSqlOutput<'v>>>,
    ) -> rusqlite::Result<()> {
        let stmt = self.statement(sql)?.as_ptr();
        let mut result = Ok(());
        for (i, value) in values.enumerate() {
            // SAFETY: `stmt` is a live statement of `self.conn`; a borrowed
            // value lives for `'v`, beyond this call, so past the clearing of
            // the bindings below (an owned one is copied by SQLite).
            result = value.and_then(|v| unsafe { bind(stmt, i + 1, v) });
            if result.is_err() {
                break;
            }
        }
        // SAFETY: as above; `sqlite3_step` only reads the bound values.
        let result = result.and_then(|()| match unsafe { ffi::sqlite3_step(stmt) } {
            ffi::SQLITE_DONE | ffi::SQLITE_ROW => Ok(()),
            code => Err(self.error(code)),
        });
        // SAFETY: resetting and clearing a live statement; afterwards SQLite
        // holds no pointer into `values`.
        unsafe {
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
        }
        result
    }

    fn statement(&self, sql: &'static str) -> rusqlite::Result<NonNull<ffi::sqlite3_stmt>> {
        let mut prepared = self.prepared.borrow_mut();
        if let Some((_, stmt)) = prepared.iter().find(|(s, _)| std::ptr::eq(*s, sql)) {
            return Ok(*stmt);
        }
        let mut stmt = std::ptr::null_mut();
        let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
        // SAFETY: the handle is valid while `self.conn` is borrowed; `sql` is
        // read for `len` bytes only.
        let code = unsafe {
            ffi::sqlite3_prepare_v3(
                self.conn.handle(),
                sql.as_ptr().cast::<c_char>(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if code != ffi::SQLITE_OK {
            return Err(self.error(code));
        }
        let stmt = NonNull::new(stmt).ok_or(rusqlite::Error::InvalidQuery)?;
        prepared.push((sql, stmt));
        Ok(stmt)
    }

    /// The connection's error for `code`, as rusqlite reports one.
    fn error(&self, code: c_int) -> rusqlite::Error {
        // SAFETY: the handle is valid; SQLite's message is copied right away.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.conn.handle())) };
        rusqlite::Error::SqliteFailure(
            ffi::Error::new(code),
            Some(message.to_string_lossy().into_owned()),
        )
    }
}

impl Drop for StaticStatements<'_> {
    fn drop(&mut self) {
        for (_, stmt) in self.prepared.get_mut().drain(..) {
            // SAFETY: each statement was prepared on the still-open connection
            // and is finalized exactly once.
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
        }
    }
}

/// Binds one value: a borrowed text or blob in place, anything else copied, and
/// NULL not at all (the parameter already is; see the module docs).
///
/// # Safety
/// `stmt` must be live, and a borrowed value must stay alive until the bindings
/// are cleared.
unsafe fn bind(
    stmt: *mut ffi::sqlite3_stmt,
    index: usize,
    value: ToSqlOutput<'_>,
) -> rusqlite::Result<()> {
    let (value, destructor) = match &value {
        ToSqlOutput::Borrowed(v) => (*v, ffi::SQLITE_STATIC()),
        ToSqlOutput::Owned(v) => (ValueRef::from(v), ffi::SQLITE_TRANSIENT()),
        _ => return Err(rusqlite::Error::InvalidParameterCount(index, 0)),
    };
    let i = c_int::try_from(index).map_err(|_| rusqlite::Error::InvalidParameterCount(index, 0))?;
    let too_long = |_| rusqlite::Error::InvalidParameterCount(index, 0);
    // SAFETY: per this function's contract.
    let code = unsafe {
        match value {
            ValueRef::Null => ffi::SQLITE_OK,
            ValueRef::Integer(n) => ffi::sqlite3_bind_int64(stmt, i, n),
            ValueRef::Real(x) => ffi::sqlite3_bind_double(stmt, i, x),
            // An empty text points at a real (static, empty) C string, as
            // rusqlite does, never at a dangling slice pointer.
            ValueRef::Text([]) => {
                ffi::sqlite3_bind_text(stmt, i, c"".as_ptr(), 0, ffi::SQLITE_STATIC())
            }
            ValueRef::Text(t) => {
                let len = c_int::try_from(t.len()).map_err(too_long)?;
                ffi::sqlite3_bind_text(stmt, i, t.as_ptr().cast(), len, destructor)
            }
            ValueRef::Blob(b) => {
                let len = c_int::try_from(b.len()).map_err(too_long)?;
                ffi::sqlite3_bind_blob(stmt, i, b.as_ptr().cast(), len, destructor)
            }
        }
    };
    match code {
        ffi::SQLITE_OK => Ok(()),
        code => Err(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None)),
    }
}
