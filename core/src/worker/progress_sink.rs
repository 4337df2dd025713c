//! Where `ctx.progress` and `ctx.log` go: a per-attempt [`ProgressBuffer`]
//! behind a plain mutex, so the calls are cheap and never wait for the
//! database, and a flusher task, started by the first call, that writes a
//! batch whenever the buffer says one is due (at most once per
//! [`crate::limits::PROGRESS_FLUSH_INTERVAL_MS`]). When the attempt ends,
//! [`ProgressSink::finish`] waits for a write in flight and writes what is
//! left, before the attempt's report is sent, so a job's last line is stored
//! while its lease is still current. An attempt that never calls either
//! starts no task and makes no store call.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::error::Result;
use crate::job::Lease;
use crate::progress::{ProgressBatch, ProgressBuffer};
use crate::store::Store;

/// One attempt's progress and lines on their way to the store.
pub(crate) struct ProgressSink {
    state: Mutex<SinkState>,
    /// Held during every store write, so writes of one attempt never overlap
    /// and their lines are numbered in the order they were logged.
    writing: tokio::sync::Mutex<()>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// The throttle's zero: set by the first call, so an attempt that never
    /// calls does not even read the clock.
    epoch: OnceLock<Instant>,
}

struct SinkState {
    buffer: ProgressBuffer,
    /// The flusher task, once started (kept for `finish` to stop it).
    flusher: Option<JoinHandle<()>>,
    /// Whether the flusher's loop goes on (cleared under this lock when it
    /// finds nothing to write, so a later call starts it again).
    flushing: bool,
    /// Set by `finish` (or a write the store refused): later calls are dropped.
    closed: bool,
}

impl ProgressSink {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        lease: Lease,
        attempt: i64,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(SinkState {
                buffer: ProgressBuffer::new(lease, attempt),
                flusher: None,
                flushing: false,
                closed: false,
            }),
            writing: tokio::sync::Mutex::new(()),
            store,
            clock,
            epoch: OnceLock::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SinkState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn epoch(&self) -> Instant {
        *self.epoch.get_or_init(Instant::now)
    }

    fn mono_ms(&self) -> i64 {
        i64::try_from(self.epoch().elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    pub(crate) fn progress(self: &Arc<Self>, fraction: f64, message: String) -> Result<()> {
        let mono = self.mono_ms();
        let mut st = self.lock();
        if st.closed {
            return Ok(());
        }
        st.buffer.progress(fraction, message, mono)?;
        self.wake(&mut st);
        Ok(())
    }

    pub(crate) fn log(self: &Arc<Self>, line: String) {
        let (at, mono) = (self.clock.now_ms(), self.mono_ms());
        let mut st = self.lock();
        if st.closed {
            return;
        }
        st.buffer.log(line, at, mono);
        self.wake(&mut st);
    }

    /// Starts the flusher unless it runs.
    fn wake(self: &Arc<Self>, st: &mut SinkState) {
        if st.flushing {
            return;
        }
        st.flushing = true;
        let sink = self.clone();
        st.flusher = Some(tokio::spawn(async move { sink.flush_loop().await }));
    }

    async fn flush_loop(self: Arc<Self>) {
        loop {
            let due = {
                let mut st = self.lock();
                match (st.closed, st.buffer.due_at()) {
                    (false, Some(due)) => due,
                    _ => {
                        st.flushing = false;
                        return;
                    }
                }
            };
            let wait = std::time::Duration::from_millis(due.max(0) as u64);
            tokio::time::sleep_until(self.epoch() + wait).await;
            let _writing = self.writing.lock().await;
            let batch = {
                let mut st = self.lock();
                if st.closed {
                    return;
                }
                st.buffer.take_due(self.mono_ms())
            };
            if let Some(batch) = batch {
                self.write(batch).await;
            }
        }
    }

    async fn write(&self, batch: ProgressBatch) {
        match self.store.record_progress(batch).await {
            Ok(true) => {}
            Ok(false) => {
                // The lease is gone: nothing more of this attempt is kept.
                self.lock().closed = true;
            }
            Err(e) => tracing::warn!(error = %e, "storing the job's progress failed"),
        }
    }

    /// Ends the attempt's progress: no more calls are kept, a write in flight
    /// completes, and what is left is written. Immediate for an attempt that
    /// never called.
    pub(crate) async fn finish(&self) {
        let flusher = {
            let mut st = self.lock();
            st.closed = true;
            match st.flusher.take() {
                Some(f) => f,
                None => return,
            }
        };
        let _writing = self.writing.lock().await;
        // Sleeping or about to see `closed`: never mid-write while we hold the lock.
        flusher.abort();
        let batch = self.lock().buffer.take(self.mono_ms());
        if let Some(batch) = batch {
            self.write(batch).await;
        }
    }
}
