//! Cross-process wake-ups. Another process (a CLI enqueuer, an application that
//! enqueued inside its own transaction) cannot reach this process's watch
//! channel. The writer thread therefore asks SQLite `PRAGMA data_version` on its
//! own connection between batches, at most once per poll interval: the number
//! moves only when *another* connection committed, and costs one pragma, never a
//! table scan. Only then is the one-row `work` epoch read; work is signalled when
//! it moved. Claims and heartbeats never move the epoch, so idle workers of
//! several processes do not wake each other in a loop. The poll ends with the
//! writer thread, that is when the store is dropped.

use std::time::Instant;

use duraq_core::Result;
use rusqlite::Connection;

use crate::backend::signals::Signals;
use crate::counts::work_epoch;
use crate::error::SqlResult;

/// What the writer last saw of other connections' commits.
pub(crate) struct ForeignWatch {
    data_version: i64,
    /// The newest work epoch seen (the writer sets it after its own commits).
    pub(crate) epoch: i64,
    /// When the last check ran.
    pub(crate) checked: Instant,
}

impl ForeignWatch {
    pub(crate) fn new(conn: &Connection) -> Result<Self> {
        Ok(Self {
            data_version: data_version(conn)?,
            epoch: work_epoch(conn)?,
            checked: Instant::now(),
        })
    }

    /// Signals work if another connection moved the work epoch.
    pub(crate) fn check(&mut self, conn: &Connection, signals: &Signals) {
        self.checked = Instant::now();
        let seen = data_version(conn).and_then(|version| {
            if version == self.data_version {
                return Ok(None);
            }
            self.data_version = version;
            work_epoch(conn).map(Some)
        });
        match seen {
            Ok(Some(epoch)) if epoch != self.epoch => {
                self.epoch = epoch;
                signals.bump_work();
            }
            Ok(_) => {}
            Err(err) => tracing::debug!(error = %err, "polling for foreign commits failed"),
        }
    }
}

fn data_version(conn: &Connection) -> Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0)).db()
}
