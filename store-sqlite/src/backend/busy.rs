//! Waiting for another process's write lock in short, even steps.
//!
//! SQLite has no queue for its write lock: a connection that finds it taken
//! calls its busy handler, sleeps, and tries again. The handler behind
//! `busy_timeout` sleeps longer and longer (1, 2, 5, 10, … then 100 ms per
//! try), which is fair between two idle writers but starves a waiter when the
//! holder is a busy worker process: the worker commits and takes the lock again
//! within microseconds, so a waiter that wakes every 100 ms almost never finds
//! it free. Measured with the fairness bench (a producer trickling jobs while
//! another process drains a backlog): single enqueues waited up to 1.1 s.
//!
//! [`wait_in_short_steps`] keeps the same deadline (the store's
//! `busy_timeout`) but retries every [`STEP`] (2 ms) after a short ramp, so a
//! waiter meets one of the holder's gaps between transactions soon. A failed
//! try is one `fcntl` on the lock file. Shorter steps wait less behind one
//! busy worker but cost writers that contend with each other: with 500 µs,
//! eight processes enqueueing one job at a time into one file ran at 0.79
//! (0.71-0.95) of the default handler's rate; with 2 ms at 1.21 (0.92-1.69),
//! while the trickle's p99 behind a draining worker went from 240 to 280 ms
//! (the default handler's: over a second).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use duraq_core::Result;
use rusqlite::Connection;

use crate::error::SqlResult;

/// The longest sleep between two tries.
const STEP: Duration = Duration::from_millis(2);
/// The first sleep; each later one doubles until [`STEP`].
const FIRST: Duration = Duration::from_micros(50);

thread_local! {
    /// When the current wait began. SQLite calls the handler on the thread
    /// running the statement, with `count` 0 at the start of each wait.
    static WAIT_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs the handler on `conn`, giving up after `timeout` of waiting (as
/// `busy_timeout` would); the store's own retries then take over.
pub(crate) fn wait_in_short_steps(conn: &Connection, timeout: Duration) -> Result<()> {
    // The timeout travels as the handler's context pointer, so nothing needs
    // to outlive the connection.
    let millis = timeout.as_millis().min(u32::MAX as u128) as usize;
    // SAFETY: `conn.handle()` is the open connection this handler belongs
    // to; the callback reads its context as an integer and never
    // dereferences it.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_busy_handler(conn.handle(), Some(on_busy), millis as *mut c_void)
    };
    if rc != rusqlite::ffi::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rc),
            None,
        ))
        .db();
    }
    Ok(())
}

/// SQLite's busy callback: nonzero to try again, 0 to report `SQLITE_BUSY`.
extern "C" fn on_busy(timeout_ms: *mut c_void, count: c_int) -> c_int {
    let timeout = Duration::from_millis(timeout_ms as usize as u64);
    let now = Instant::now();
    let started = WAIT_STARTED.with(|cell| {
        if count == 0 {
            cell.set(Some(now));
        }
        cell.get().unwrap_or(now)
    });
    if now.duration_since(started) >= timeout {
        return 0;
    }
    std::thread::sleep(step(count));
    1
}

/// The sleep before try `count + 1`: 50 µs, doubling up to [`STEP`].
fn step(count: c_int) -> Duration {
    let doubled = FIRST.saturating_mul(1u32 << count.clamp(0, 16));
    doubled.min(STEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_ramp_up_then_stay_short() {
        assert_eq!(step(0), Duration::from_micros(50));
        assert_eq!(step(5), Duration::from_micros(1_600));
        assert_eq!(step(6), STEP);
        assert_eq!(step(1_000), STEP);
    }

    #[test]
    fn a_held_lock_is_waited_for_until_the_timeout_then_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE;")
            .unwrap();
        let waiter = Connection::open(&path).unwrap();
        wait_in_short_steps(&waiter, Duration::from_millis(30)).unwrap();
        let started = Instant::now();
        let err = waiter.execute("INSERT INTO t VALUES (1)", []).unwrap_err();
        assert!(crate::error::is_busy(&err), "{err}");
        // It waited (at least the timeout), rather than failing at once.
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_lock_freed_by_another_thread_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("freed.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE;")
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let conn = Connection::open(&path).unwrap();
            wait_in_short_steps(&conn, Duration::from_secs(30)).unwrap();
            tx.send(()).unwrap(); // about to block on the lock
            conn.execute("INSERT INTO t VALUES (1)", [])
        });
        rx.recv().unwrap();
        holder.execute_batch("COMMIT").unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), 1);
    }
}
