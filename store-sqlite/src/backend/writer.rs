//! The single writer thread and its group commit.
//!
//! SQLite allows one writer at a time, so the store owns one write connection on
//! one thread. Async callers send a request over a channel and await a oneshot
//! reply. The thread takes every request already waiting, opens ONE
//! `BEGIN IMMEDIATE` transaction for all of them, runs each inside its own
//! `SAVEPOINT` (a failing request rolls back only itself), commits once (one
//! fsync for the whole batch), and only then publishes count deltas, signals work and
//! replies. A failed `COMMIT` fails every request of the batch.
//!
//! Between batches the same thread polls for other connections' commits
//! ([`crate::backend::poller`]); it exits, ending the poll, when the store is dropped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use duraq_core::{Clock, Error, Result};
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::backend::checkpoint::{Checkpoints, WalFrames};
use crate::backend::poller::ForeignWatch;
use crate::backend::signals::Signals;
use crate::backend::static_bind::StaticStatements;
use crate::counts::bump_work_epoch;
use crate::error::{describe, is_busy, retry_busy};
use crate::tx::Tx;

/// Why a whole batch failed (cloneable into one error per request).
struct Failure {
    busy: bool,
    message: String,
}

impl Failure {
    fn from_sqlite(context: &str, err: &rusqlite::Error) -> Self {
        Self {
            busy: is_busy(err),
            message: format!("{context}: {err}"),
        }
    }

    fn from_error(context: &str, err: &Error) -> Self {
        Self {
            busy: matches!(err, Error::Busy { .. }),
            message: format!("{context}: {}", describe(err)),
        }
    }

    fn to_error(&self) -> Error {
        if self.busy {
            Error::Busy {
                message: self.message.clone(),
            }
        } else {
            Error::Backend {
                message: self.message.clone(),
                source: None,
            }
        }
    }
}

trait Request: Send {
    /// Runs the request; `true` when it succeeded and its savepoint may be released.
    fn run(&mut self, tx: &mut Tx<'_>) -> bool;
    /// Replies: the request's own result, or the batch failure.
    fn finish(self: Box<Self>, failure: Option<&Failure>);
}

struct Pending<T, F> {
    f: Option<F>,
    result: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T: Send, F: FnOnce(&mut Tx<'_>) -> Result<T> + Send> Request for Pending<T, F> {
    fn run(&mut self, tx: &mut Tx<'_>) -> bool {
        let Some(f) = self.f.take() else { return false };
        let result = f(tx).and_then(|value| tx.end_mutation().map(|()| value));
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, failure: Option<&Failure>) {
        let reply = match (failure, self.result) {
            (Some(failure), _) => Err(failure.to_error()),
            (None, Some(result)) => result,
            (None, None) => Err(Error::Backend {
                message: "write request panicked".into(),
                source: None,
            }),
        };
        let _ = self.reply.send(reply);
    }
}

/// Handle to the writer thread; dropping it (or [`Writer::close`]) lets the
/// thread finish the requests already sent and exit.
pub(crate) struct Writer {
    sender: std::sync::Mutex<Option<mpsc::Sender<Box<dyn Request>>>>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Writer {
    /// Starts the writer thread on `conn`; it also polls for foreign commits
    /// every `poll_interval`, and has the WAL checkpointed between batches
    /// ([`crate::backend::checkpoint`]).
    pub(crate) fn spawn(
        conn: Connection,
        mut checkpoints: Checkpoints,
        clock: Arc<dyn Clock>,
        signals: Arc<Signals>,
        max_batch: usize,
        poll_interval: Duration,
    ) -> Result<Self> {
        let (sender, receiver) = mpsc::channel::<Box<dyn Request>>();
        let mut watch = ForeignWatch::new(&conn)?;
        let thread = std::thread::Builder::new()
            .name("duraq-sqlite-writer".into())
            .spawn(move || {
                let statements = StaticStatements::new(&conn);
                let frames = WalFrames::install(&conn);
                let mut last_batch = 0;
                loop {
                    match receiver.recv_timeout(poll_interval) {
                        Ok(first) => {
                            let batch = gather(&receiver, first, max_batch.max(1), last_batch);
                            last_batch = batch.len();
                            if let Some(epoch) =
                                commit_batch(&statements, clock.as_ref(), &signals, batch)
                            {
                                watch.epoch = epoch;
                            }
                            checkpoints.after_commit(&conn, &frames);
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                    if watch.checked.elapsed() >= poll_interval {
                        watch.check(&conn, &signals);
                    }
                }
                // The checkpointer's connection closes before the writer's.
                drop(checkpoints);
            })
            .map_err(|e| Error::backend("starting the SQLite writer thread", e))?;
        Ok(Self {
            sender: std::sync::Mutex::new(Some(sender)),
            thread: std::sync::Mutex::new(Some(thread)),
        })
    }

    /// Stops taking requests, lets the thread commit those already sent, and
    /// waits until it has exited (its connection closed). Idempotent.
    pub(crate) async fn close(&self) -> Result<()> {
        drop(lock(&self.sender).take());
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            tokio::task::spawn_blocking(move || thread.join())
                .await
                .map_err(|e| Error::backend("closing the SQLite writer", e))?
                .map_err(|_| stopped())?;
        }
        Ok(())
    }

    /// Runs `f` as one logical mutation in the next group commit and returns its
    /// result once the transaction is durable.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let request = Box::new(Pending {
            f: Some(f),
            result: None,
            reply,
        });
        match lock(&self.sender).as_ref() {
            Some(sender) => sender.send(request).map_err(|_| stopped())?,
            None => return Err(stopped()),
        }
        answer.await.map_err(|_| stopped())?
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn stopped() -> Error {
    Error::Backend {
        message: "the SQLite writer thread stopped".into(),
        source: None,
    }
}

/// How long the writer waits for the rest of a group that the previous commit
/// saw (well under one fsync, so a lone caller loses little).
const GATHER_WINDOW: Duration = Duration::from_micros(250);

/// Takes `first` and every request already waiting. When the previous batch was
/// larger, its callers are likely about to send their next request (they were
/// just answered), so it waits up to [`GATHER_WINDOW`] for them: one commit then
/// serves them all instead of one commit for the first and another for the rest.
fn gather(
    receiver: &mpsc::Receiver<Box<dyn Request>>,
    first: Box<dyn Request>,
    max_batch: usize,
    last_batch: usize,
) -> Vec<Box<dyn Request>> {
    let mut batch = vec![first];
    while batch.len() < max_batch {
        match receiver.try_recv() {
            Ok(request) => batch.push(request),
            Err(_) => break,
        }
    }
    let deadline = Instant::now() + GATHER_WINDOW;
    while batch.len() < last_batch.min(max_batch) {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok(request) => batch.push(request),
            Err(_) => break,
        }
    }
    batch
}

/// Runs one statement of the group commit's own, prepared once per connection:
/// these run several times per commit, and parsing them each time showed up.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Runs one batch in one transaction; returns the work epoch it wrote, if any.
fn commit_batch(
    statements: &StaticStatements<'_>,
    clock: &dyn Clock,
    signals: &Signals,
    mut batch: Vec<Box<dyn Request>>,
) -> Option<i64> {
    let conn = statements.conn();
    if let Err(err) = retry_busy(|| run_cached(conn, "BEGIN IMMEDIATE")) {
        let failure = Failure::from_error("beginning a write transaction", &err);
        batch.into_iter().for_each(|r| r.finish(Some(&failure)));
        return None;
    }
    let mut tx = Tx::new(conn, 0).with_statements(statements);
    let mut failure = None;
    // A lone request needs no savepoint: if it fails, the whole transaction rolls
    // back. (A savepoint copies every page it touches into the sub-journal.)
    let lone = batch.len() == 1;
    let mut rolled_back = false;
    for request in batch.iter_mut() {
        tx.now = clock.now_ms();
        let mark = tx.mark();
        if !lone {
            if let Err(err) = run_cached(conn, "SAVEPOINT duraq_request") {
                failure = Some(Failure::from_sqlite("opening a savepoint", &err));
                break;
            }
        }
        let ok = catch_unwind(AssertUnwindSafe(|| request.run(&mut tx))).unwrap_or(false);
        if !ok {
            tx.reset(mark);
        }
        let closing = match (lone, ok) {
            (true, true) => Ok(()),
            (true, false) => {
                rolled_back = true;
                conn.execute_batch("ROLLBACK")
            }
            (false, true) => run_cached(conn, "RELEASE duraq_request"),
            (false, false) => {
                conn.execute_batch("ROLLBACK TO duraq_request; RELEASE duraq_request")
            }
        };
        if let Err(err) = closing {
            failure = Some(Failure::from_sqlite("ending a request", &err));
            break;
        }
    }
    if rolled_back && failure.is_none() {
        batch.into_iter().for_each(|r| r.finish(None));
        return None;
    }
    if failure.is_none() && conn.is_autocommit() {
        failure = Some(Failure {
            busy: false,
            message: "SQLite rolled the write transaction back".into(),
        });
    }
    let mut epoch = None;
    if failure.is_none() && tx.has_work() {
        match bump_work_epoch(conn) {
            Ok(value) => epoch = Some(value),
            Err(err) => failure = Some(Failure::from_error("bumping the work epoch", &err)),
        }
    }
    if failure.is_none() {
        if let Err(err) = retry_busy(|| run_cached(conn, "COMMIT")) {
            failure = Some(Failure::from_error("committing", &err));
        }
    }
    match failure {
        Some(failure) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            tracing::warn!(error = %failure.message, "SQLite write batch failed");
            batch.into_iter().for_each(|r| r.finish(Some(&failure)));
            None
        }
        None => {
            let (deltas, work, backlog) = tx.into_effects();
            signals.publish(deltas, work, backlog);
            batch.into_iter().for_each(|r| r.finish(None));
            epoch
        }
    }
}
