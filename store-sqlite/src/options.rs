//! How a [`crate::SqliteStore`] opens its file. Durability is the default: WAL with
//! `synchronous=FULL` survives a machine crash; `NORMAL` is faster and survives only
//! a process crash, so it is an explicit, named opt-in.

use std::time::Duration;

/// SQLite's `synchronous` setting for every connection the store opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// `synchronous=FULL`: an acknowledged enqueue survives power loss (default).
    #[default]
    Full,
    /// `synchronous=NORMAL`: faster; safe against process crashes only.
    Normal,
}

impl Synchronous {
    /// The pragma value to set.
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }

    /// The number `PRAGMA synchronous` reads back.
    pub(crate) fn read_back(self) -> i64 {
        match self {
            Self::Full => 2,
            Self::Normal => 1,
        }
    }
}

/// Options for [`crate::SqliteStore::open`].
///
/// ```
/// use duraq_store_sqlite::{SqliteOptions, Synchronous};
/// let opts = SqliteOptions::default().synchronous(Synchronous::Normal);
/// assert_eq!(opts.synchronous, Synchronous::Normal);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Durability mode (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
    /// How long a connection waits for another process's write lock before SQLite
    /// reports "database is locked" (default 5 s). The store then retries a few
    /// times with backoff before failing with `database-busy`.
    pub busy_timeout: Duration,
    /// Read connections kept open for reuse (default 4).
    pub read_pool_size: usize,
    /// Most write requests folded into one group-commit transaction (default 256).
    pub max_batch: usize,
    /// How often the cross-process poller checks `PRAGMA data_version` (default 25 ms).
    pub poll_interval: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            read_pool_size: 4,
            max_batch: 256,
            poll_interval: Duration::from_millis(25),
        }
    }
}

impl SqliteOptions {
    /// Sets the durability mode.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets the busy timeout.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets the data_version poll interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }
}
