//! Reads run on a small pool of their own connections, off the async runtime
//! (`spawn_blocking`), each inside a deferred transaction so that a multi-query
//! read sees one snapshot. In WAL mode readers never wait for the writer.

use std::path::PathBuf;
use std::sync::Mutex;

use duraq_core::{ErrorCode, Result};
use rusqlite::Connection;

use crate::backend::connection::open_connection;
use crate::backend::opening::OpenMode;
use crate::error::{busy_backoff, SqlResult, BUSY_RETRIES};
use crate::options::SqliteOptions;

/// A pool of read connections on one file.
pub(crate) struct Readers {
    path: PathBuf,
    opts: SqliteOptions,
    idle: Mutex<Vec<Connection>>,
    /// Set by [`Readers::close`]: no connection is opened or kept afterwards.
    closed: std::sync::atomic::AtomicBool,
}

impl Readers {
    pub(crate) fn new(path: PathBuf, opts: SqliteOptions) -> Self {
        Self {
            path,
            opts,
            idle: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Closes the idle connections; later reads fail (`backend-error`).
    pub(crate) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        drop(idle);
    }

    fn take(&self) -> Result<Connection> {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(duraq_core::Error::Backend {
                message: "the SQLite store is closed".into(),
                source: None,
            });
        }
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(conn) => Ok(conn),
            // The store's first connection made the file: readers never create it.
            None => open_connection(&self.path, &self.opts, OpenMode::Existing),
        }
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.opts.read_pool_size.max(1)
            && !self.closed.load(std::sync::atomic::Ordering::SeqCst)
        {
            idle.push(conn);
        }
    }

    /// Runs `f` in a read transaction; busy snapshots are retried with backoff.
    pub(crate) fn read<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.take()?;
        let mut attempt = 0;
        let result = loop {
            let outcome = conn.unchecked_transaction().db().and_then(|tx| {
                let value = f(&tx)?;
                tx.commit().db()?;
                Ok(value)
            });
            match outcome {
                Err(err) if err.code() == ErrorCode::DatabaseBusy && attempt < BUSY_RETRIES => {
                    std::thread::sleep(busy_backoff(attempt));
                    attempt += 1;
                }
                other => break other,
            }
        };
        if conn.is_autocommit() {
            self.give_back(conn);
        }
        result
    }
}
