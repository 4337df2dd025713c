//! WAL checkpoints off the commit path.
//!
//! SQLite's auto-checkpoint runs inside `COMMIT` on the committing connection
//! once the WAL holds 1,000 frames: it copies the pages into the database file,
//! fsyncs it, and the WAL restarts (one more fsync, of its header). On the
//! writer thread that stalled the batch whose commit crossed the threshold and
//! every request queued behind it; in the `enqueue_batch` profile (1,000 jobs
//! per call) checkpointing was about 9% of the writer's samples, plus the wait
//! for the database fsync.
//!
//! So the writer registers its own WAL hook ([`WalFrames`], which replaces the
//! auto-checkpoint) and, between batches, after its callers have their answers
//! ([`Checkpoints::after_commit`]), every [`CHECKPOINT_FRAMES`] new frames:
//! - after bulk commits (on average [`BULK_COMMIT_FRAMES`] frames or more, such
//!   as batches of fresh jobs), wakes a checkpointer thread that runs a
//!   `PASSIVE` checkpoint on a connection of its own (started on first use). A
//!   passive checkpoint never waits for, nor blocks, the writer or a reader;
//! - after small commits (claims, reports, single enqueues), checkpoints on its
//!   own connection, as SQLite would have. These touch the same few pages over
//!   and over, so there is little to copy; in the background the checkpointer,
//!   always a little behind, never lets the WAL restart, and a WAL that keeps
//!   growing costs each small commit more than the copy saves (paired in-process
//!   drains, `synchronous=FULL`: 7% slower with every checkpoint in the
//!   background, within 1–4% of SQLite's auto-checkpoint this way);
//! - past [`BACKSTOP_FRAMES`], checkpoints on its own connection whatever the
//!   commits. The WAL restarts from its beginning only when a write finds every
//!   frame checkpointed, which under steady bulk writes the background thread
//!   never achieves; this bounds the WAL file (about 16 MiB), and finds little
//!   left to copy.
//!
//! The gain is smaller than the work moved (paired `enqueue_batch` runs: about
//! 5%): the checkpointer's database fsyncs share the disk with the writer's WAL
//! fsyncs, which get slower while one runs. Durability does not depend on
//! checkpoints: a commit is durable once its WAL frames are synced
//! (`synchronous=FULL`), before the writer replies.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::mpsc;

use rusqlite::{ffi, Connection};

use crate::backend::connection::open_connection;
use crate::backend::opening::OpenMode;
use crate::options::SqliteOptions;

/// New WAL frames between two checkpoints (SQLite's default auto-checkpoint
/// threshold).
const CHECKPOINT_FRAMES: c_int = 1_000;
/// Frames per commit from which checkpoints move to the background thread
/// (see the module docs): a drain's claims and reports write 13–27 frames a
/// commit at 10–64 slots, a batch of 1,000 fresh jobs about 110.
const BULK_COMMIT_FRAMES: c_int = 64;
/// WAL frames past which the writer checkpoints itself (see the module docs).
const BACKSTOP_FRAMES: c_int = 4_000;

/// The WAL size (in frames) after the last commit on a connection, recorded by
/// a WAL hook; registering it turns that connection's auto-checkpoint off.
pub(crate) struct WalFrames<'c> {
    conn: &'c Connection,
    frames: Box<Cell<c_int>>,
}

unsafe extern "C" fn record_frames(
    frames: *mut c_void,
    _db: *mut ffi::sqlite3,
    _schema: *const c_char,
    size: c_int,
) -> c_int {
    // SAFETY: `frames` is the `Cell` registered by `WalFrames::install`, alive
    // until its `Drop` unregisters the hook; SQLite calls the hook on the thread
    // that commits on the connection, which is the one owning the `WalFrames`.
    unsafe { (*frames.cast::<Cell<c_int>>()).set(size) };
    ffi::SQLITE_OK
}

impl<'c> WalFrames<'c> {
    pub(crate) fn install(conn: &'c Connection) -> Self {
        let frames = Box::new(Cell::new(0));
        let context = std::ptr::from_ref::<Cell<c_int>>(&frames).cast_mut().cast();
        // SAFETY: the handle is valid while `conn` is borrowed; the context
        // outlives the registration (see `Drop`).
        unsafe { ffi::sqlite3_wal_hook(conn.handle(), Some(record_frames), context) };
        Self { conn, frames }
    }

    fn get(&self) -> c_int {
        self.frames.get()
    }
}

impl Drop for WalFrames<'_> {
    fn drop(&mut self) {
        // SAFETY: `conn` is still open (borrowed); afterwards no hook points at
        // the `Cell` freed with `self`.
        unsafe { ffi::sqlite3_wal_hook(self.conn.handle(), None, std::ptr::null_mut()) };
    }
}

/// The writer's side: when to wake the checkpointer, when to checkpoint itself.
pub(crate) struct Checkpoints {
    path: PathBuf,
    opts: SqliteOptions,
    thread: Option<(mpsc::SyncSender<()>, std::thread::JoinHandle<()>)>,
    /// WAL size when the last checkpoint was due (or the WAL restarted), and
    /// the commits since.
    window_start: c_int,
    commits: c_int,
    last_size: c_int,
}

impl Checkpoints {
    pub(crate) fn new(path: PathBuf, opts: SqliteOptions) -> Self {
        Self {
            path,
            opts,
            thread: None,
            window_start: 0,
            commits: 0,
            last_size: 0,
        }
    }

    /// Called between batches, after a commit on `conn` (hooked by `frames`):
    /// every [`CHECKPOINT_FRAMES`] new frames, a checkpoint in the background
    /// after bulk commits, here after small ones.
    pub(crate) fn after_commit(&mut self, conn: &Connection, frames: &WalFrames<'_>) {
        let size = frames.get();
        if size < self.last_size {
            // The WAL restarted from its beginning.
            self.window_start = 0;
            self.commits = 0;
        }
        self.last_size = size;
        self.commits += 1;
        let written = size - self.window_start;
        if size >= BACKSTOP_FRAMES {
            checkpoint(conn);
        } else if written >= CHECKPOINT_FRAMES {
            let bulk = written / self.commits >= BULK_COMMIT_FRAMES;
            self.window_start = size;
            self.commits = 0;
            if bulk {
                self.wake();
            } else {
                checkpoint(conn);
            }
        }
    }

    /// Asks the checkpointer thread for a checkpoint (one pending at most).
    fn wake(&mut self) {
        if self.thread.is_none() {
            let (sender, receiver) = mpsc::sync_channel::<()>(1);
            let (path, opts) = (self.path.clone(), self.opts.clone());
            let spawned = std::thread::Builder::new()
                .name("duraq-sqlite-checkpoint".into())
                .spawn(move || run_checkpointer(&path, &opts, &receiver));
            match spawned {
                Ok(handle) => self.thread = Some((sender, handle)),
                Err(err) => tracing::debug!(error = %err, "no checkpointer thread"),
            }
        }
        if let Some((sender, _)) = &self.thread {
            let _ = sender.try_send(());
        }
    }
}

impl Drop for Checkpoints {
    /// Stops the checkpointer and waits until its connection is closed.
    fn drop(&mut self) {
        if let Some((sender, handle)) = self.thread.take() {
            drop(sender);
            let _ = handle.join();
        }
    }
}

fn run_checkpointer(path: &std::path::Path, opts: &SqliteOptions, wakes: &mpsc::Receiver<()>) {
    let mut conn = None;
    while wakes.recv().is_ok() {
        if conn.is_none() {
            match open_connection(path, opts, OpenMode::Existing) {
                Ok(opened) => conn = Some(opened),
                Err(err) => tracing::debug!(error = %err, "opening the checkpoint connection"),
            }
        }
        if let Some(conn) = &conn {
            checkpoint(conn);
        }
    }
}

/// A `PASSIVE` checkpoint; failing one (busy, another process checkpointing)
/// only leaves the WAL longer until the next.
fn checkpoint(conn: &Connection) {
    if let Err(err) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::debug!(error = %err, "WAL checkpoint");
    }
}
