//! [`Tx`]: what one logical write sees. It wraps the connection that holds the
//! write transaction, the instant read from the clock for this call, and the
//! call's pending count change, work and release backlog signals, so that domain code just records
//! what it moved and the writer turns that into one revision after it succeeds.

use duraq_core::driver::CountChange;
use duraq_core::inspect::CountDelta;
use duraq_core::{JobStatus, Result};
use rusqlite::Connection;

use crate::backend::static_bind::StaticStatements;
use crate::counts::apply_change;

/// One logical mutation inside the writer's transaction (or a caller's).
pub(crate) struct Tx<'c> {
    /// The connection holding the write transaction.
    pub(crate) conn: &'c Connection,
    /// The clock reading for this call.
    pub(crate) now: i64,
    change: CountChange,
    deltas: Vec<CountDelta>,
    work: bool,
    /// A request left a release backlog entry (see [`crate::release`]).
    backlog: bool,
    /// Dedupe scopes this transaction has looked up (see [`crate::dedupe`]).
    pub(crate) scopes: ScopeMemo,
    /// The writer's statements that bind texts in place (none on a caller's
    /// connection).
    pub(crate) statements: Option<&'c StaticStatements<'c>>,
}

/// Which (job name, queue) scopes one write transaction found registered.
#[derive(Default)]
pub(crate) struct ScopeMemo(Vec<(String, String, bool)>);

impl ScopeMemo {
    pub(crate) fn get(&self, name: &str, queue: &str) -> Option<bool> {
        self.0
            .iter()
            .find(|(n, q, _)| n == name && q == queue)
            .map(|e| e.2)
    }

    pub(crate) fn set(&mut self, name: &str, queue: &str, registered: bool) {
        match self.0.iter_mut().find(|(n, q, _)| n == name && q == queue) {
            Some(entry) => entry.2 = registered,
            None => self.0.push((name.to_owned(), queue.to_owned(), registered)),
        }
    }
}

/// A rollback point: deltas and work signal recorded before a request ran.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    deltas: usize,
    work: bool,
    backlog: bool,
}

impl<'c> Tx<'c> {
    /// A fresh context on `conn` at `now`.
    pub(crate) fn new(conn: &'c Connection, now: i64) -> Self {
        Self {
            conn,
            now,
            change: CountChange::default(),
            deltas: Vec::new(),
            work: false,
            backlog: false,
            scopes: ScopeMemo::default(),
            statements: None,
        }
    }

    /// The same context, inserting through `statements` (prepared on `conn`).
    pub(crate) fn with_statements(mut self, statements: &'c StaticStatements<'c>) -> Self {
        self.statements = Some(statements);
        self
    }

    /// A new row of `queue` in `status`.
    pub(crate) fn added(&mut self, queue: &str, status: JobStatus) {
        self.change.added(queue, status);
    }

    /// A deleted row of `queue`.
    pub(crate) fn removed(&mut self, queue: &str, status: JobStatus) {
        self.change.removed(queue, status);
    }

    /// A retry of a row of `queue` (see [`CountChange::is_retry`]), counted
    /// after its move.
    pub(crate) fn retried(&mut self, queue: &str) {
        self.change.retried(queue);
    }

    /// A row of `queue` moved between statuses (no-op when equal).
    pub(crate) fn moved(&mut self, queue: &str, from: JobStatus, to: JobStatus) {
        self.change.moved(queue, from, to);
    }

    /// Work may have become available: wake idle workers after commit.
    pub(crate) fn signal_work(&mut self) {
        self.work = true;
    }

    /// A release backlog entry was written: tell this process's workers after
    /// commit.
    pub(crate) fn signal_backlog(&mut self) {
        self.backlog = true;
    }

    /// Ends one logical mutation: a non-zero change becomes one revision.
    pub(crate) fn end_mutation(&mut self) -> Result<()> {
        let change = std::mem::take(&mut self.change);
        if !change.is_zero() {
            self.deltas.push(apply_change(self.conn, &change)?);
        }
        Ok(())
    }

    /// Whether a request of this transaction made work available.
    pub(crate) fn has_work(&self) -> bool {
        self.work
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            deltas: self.deltas.len(),
            work: self.work,
            backlog: self.backlog,
        }
    }

    /// Forgets everything recorded since `mark` (the request was rolled back).
    pub(crate) fn reset(&mut self, mark: Mark) {
        self.change = CountChange::default();
        self.deltas.truncate(mark.deltas);
        self.work = mark.work;
        self.backlog = mark.backlog;
    }

    /// What to publish once committed: the deltas, whether to signal work,
    /// and whether to signal the release backlog.
    pub(crate) fn into_effects(self) -> (Vec<CountDelta>, bool, bool) {
        (self.deltas, self.work, self.backlog)
    }
}
