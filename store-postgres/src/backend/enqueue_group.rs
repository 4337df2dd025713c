//! Group commit for plain enqueues made concurrently in one process.
//!
//! A plain one-by-one enqueue ([`crate::enqueue_plain`]) is one statement whose cost is
//! mostly fixed: a round trip, a commit with its WAL flush, a NOTIFY. When many
//! tasks of one process enqueue at once (a web server's request handlers), paying
//! that per job wastes both the server's CPU and the flushes. So at most
//! [`FLUSHES`] plain enqueues per store are in flight; a call that finds them all
//! busy queues its job, and the next flush to finish takes every queued job in one
//! statement (one commit, one announcement) and answers each caller. A lone caller
//! finds a free flush and runs its own statement at once: no hand-off, no delay.
//!
//! Each caller is answered only after the commit that holds its job, so grouping
//! changes no durability promise. One caller's job never fails another's: when
//! the server refuses a group's statement (it committed nothing), each job of the
//! group is tried again alone and each caller gets its own answer. A failure
//! whose outcome is unknown (the connection broke) is not retried, since the
//! group may have committed; every caller of the group gets it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use duraq_core::{EnqueueOutcome, Error, NewJob, Result};
use tokio::sync::oneshot;

use crate::enqueue_plain::enqueue_plain;
use crate::PostgresStore;

/// How many plain-enqueue statements one store runs at once. Two keep the
/// server busy while one group commits; more would split groups into smaller
/// ones without committing more often (the WAL flush is shared anyway).
pub(crate) const FLUSHES: usize = 2;
/// The largest group (rows in one statement stay well under the parameter limit).
const MAX_GROUP: usize = 1_000;

type Reply = oneshot::Sender<Result<EnqueueOutcome>>;

/// The per-store grouping state.
#[derive(Default)]
pub(crate) struct Group {
    state: Mutex<State>,
}

/// Invariant: `waiting` is non-empty only while all [`FLUSHES`] are in flight.
#[derive(Default)]
struct State {
    in_flight: usize,
    waiting: Vec<(NewJob, Reply)>,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Enqueues one plain job (see [`NewJob::is_plain`]), grouped with the
/// plain jobs other tasks of this process enqueue at the same time.
pub(crate) async fn enqueue(store: &PostgresStore, job: NewJob) -> Result<EnqueueOutcome> {
    let turn = {
        let mut state = store.group().lock();
        if state.in_flight < FLUSHES {
            state.in_flight += 1;
            Turn::Now(Box::new(job))
        } else {
            let (tx, rx) = oneshot::channel();
            state.waiting.push((job, tx));
            Turn::Queued(rx)
        }
    };
    match turn {
        Turn::Now(job) => {
            let _flush = Flush(store.clone());
            let mut created = enqueue_plain(store, std::slice::from_ref(&*job)).await?;
            Ok(created.remove(0))
        }
        Turn::Queued(rx) => rx.await.unwrap_or_else(|_| {
            Err(Error::Backend {
                message: "the grouped enqueue was abandoned before it committed".into(),
                source: None,
            })
        }),
    }
}

enum Turn {
    /// A flush was free: run the statement in this task.
    Now(Box<NewJob>),
    /// Queued for the next flush to finish.
    Queued(oneshot::Receiver<Result<EnqueueOutcome>>),
}

/// One flush in flight. When it ends (however it ends: a dropped future too),
/// it hands its slot to the jobs that queued meanwhile, or frees it.
struct Flush(PostgresStore);

impl Drop for Flush {
    fn drop(&mut self) {
        let group = {
            let mut state = self.0.group().lock();
            if state.waiting.is_empty() {
                state.in_flight -= 1;
                return;
            }
            let n = state.waiting.len().min(MAX_GROUP);
            state.waiting.drain(..n).collect::<Vec<_>>()
        };
        // Outside a runtime (it is shutting down) the group's callers are gone
        // too; dropping their replies answers any that remain.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.0.clone();
        runtime.spawn(async move {
            let _flush = Flush(store.clone());
            let (jobs, replies): (Vec<NewJob>, Vec<Reply>) = group.into_iter().unzip();
            match enqueue_plain(&store, &jobs).await {
                Ok(created) => {
                    for (reply, outcome) in replies.into_iter().zip(created) {
                        let _ = reply.send(Ok(outcome));
                    }
                }
                Err(err) if jobs.len() > 1 && refused_by_server(&err) => {
                    for (job, reply) in jobs.iter().zip(replies) {
                        let alone = enqueue_plain(&store, std::slice::from_ref(job)).await;
                        let _ = reply.send(alone.map(|mut created| created.remove(0)));
                    }
                }
                Err(err) => {
                    for reply in replies {
                        let _ = reply.send(Err(copy(&err)));
                    }
                }
            }
        });
    }
}

/// Whether the server answered the statement with an error (so it committed
/// nothing), as opposed to a connection that broke with the outcome unknown.
fn refused_by_server(err: &Error) -> bool {
    match err {
        Error::Backend {
            source: Some(source),
            ..
        } => source
            .downcast_ref::<tokio_postgres::Error>()
            .is_some_and(|e| e.code().is_some()),
        Error::Backend { .. } => false,
        // Every other kind is mapped from a SQLSTATE the server sent.
        _ => true,
    }
}

/// The same failure for another caller of the group (without the source chain).
fn copy(err: &Error) -> Error {
    match err {
        Error::Invalid { code, message } => Error::invalid(*code, message.clone()),
        Error::Conflict { code, message } => Error::conflict(*code, message.clone()),
        Error::NotFound { code, message } => Error::NotFound {
            code: *code,
            message: message.clone(),
        },
        Error::SchemaIncompatible { message } => Error::schema(message.clone()),
        Error::Busy { message } => Error::Busy {
            message: message.clone(),
        },
        other => Error::Backend {
            message: other.to_string(),
            source: None,
        },
    }
}
