//! Running one store call as one transaction, retried when PostgreSQL reports a
//! serialization failure or deadlock.
//!
//! [`write_tx!`] takes a pooled connection, begins a READ COMMITTED transaction,
//! runs the body with a [`Tx`] (the connection, the call's single `now`, and the
//! count change the body accumulates), settles the dependents of the jobs the
//! body finished ([`Tx::finished`], see [`crate::release`]), records the
//! counts, commits, and only then
//! announces the change (delta broadcast and work signal here, NOTIFY elsewhere). A body that fails
//! leaves nothing behind: the transaction is rolled back when dropped. Bodies must
//! only borrow their inputs, because a retry runs them again.
//!
//! [`pipelined_tx!`] is the same but for round trips:
//! the body sends `BEGIN` with its first statements ([`Tx::begin_statement`])
//! and may send `COMMIT` with its last ([`Tx::commit_ready`]), so a worker's
//! report-and-claim call makes two round trips, not four. tokio-postgres sends
//! a request when its future is first polled, so statements joined with
//! `biased` reach the server in the order written, except one that must be
//! prepared first: its execution follows its prepare's round trip. Hence a
//! COMMIT only goes with statements prepared beforehand. Such a transaction is
//! not a tokio-postgres `Transaction`, so [`OpenTx`] stands in for its drop: a
//! body that fails, or a call dropped half way, sends `ROLLBACK` before the
//! connection goes back to the pool.

use std::future::Future;
use std::task::{Context, Waker};
use std::time::Duration;

use duraq_core::driver::{ChildNotice, CountChange};
use duraq_core::{JobStatus, Result};

use crate::backend::db::{Conn, Db, Names};
use crate::counts::{record, Effects};
use crate::error::{is_retryable, map_pg_error};
use crate::signals::{signal, Writes};
use crate::PostgresStore;

/// Retries after a serialization failure or deadlock before `database-busy`.
const MAX_RETRIES: u32 = 10;

/// One store call's transaction.
pub(crate) struct Tx<'a> {
    pub db: Db<'a>,
    /// The call's clock reading, used for every timestamp and comparison.
    pub now: i64,
    /// Net status changes so far.
    pub change: CountChange,
    /// Whether work may have become available.
    pub work: bool,
    /// Whether a release backlog entry was put ([`crate::release`]).
    pub backlog: bool,
    /// Jobs the body made terminal that have dependents, to settle before
    /// the counts are recorded ([`Tx::release_dependents`]).
    finished: Vec<(String, JobStatus)>,
    /// Children the body finished, whose outcome goes to their parent
    /// before the counts are recorded ([`Tx::child_finished`]).
    children: Vec<ChildNotice>,
    shard: i32,
    /// The counts, when the body wrote them itself with its last statements
    /// (see [`Tx::counts_recorded`]).
    recorded: Option<Effects>,
    /// BEGIN and COMMIT are the body's to send (see the module docs).
    pipelined: bool,
    /// A pipelined body sent its COMMIT.
    committed: bool,
}

impl<'a> Tx<'a> {
    pub async fn begin(
        client: &'a mut deadpool_postgres::Object,
        names: &'a Names,
        now: i64,
        shard: i32,
    ) -> Result<Tx<'a>> {
        let tx = client.transaction().await.map_err(map_pg_error)?;
        Ok(Self::new(
            Db {
                conn: Conn::Pooled(tx),
                names,
            },
            now,
            shard,
        ))
    }

    /// A transaction not begun yet: the body sends BEGIN with its first
    /// statements ([`Tx::begin_statement`]); `client` is guarded by an
    /// [`OpenTx`].
    pub fn pipelined(
        client: &'a deadpool_postgres::Object,
        names: &'a Names,
        now: i64,
        shard: i32,
    ) -> Tx<'a> {
        let mut tx = Self::new(
            Db {
                conn: Conn::Client(client),
                names,
            },
            now,
            shard,
        );
        tx.pipelined = true;
        tx
    }

    pub fn new(db: Db<'a>, now: i64, shard: i32) -> Self {
        Self {
            db,
            now,
            change: CountChange::default(),
            work: false,
            backlog: false,
            finished: Vec::new(),
            children: Vec::new(),
            shard,
            recorded: None,
            pipelined: false,
            committed: false,
        }
    }

    /// A pipelined body's BEGIN, to be joined (`biased`) ahead of its first
    /// statements; nothing for a transaction begun otherwise.
    pub async fn begin_statement(&self) -> Result<()> {
        if self.pipelined {
            self.db.batch("BEGIN").await?;
        }
        Ok(())
    }

    /// Whether the body may send its COMMIT with its last statements, whose
    /// `templates` this prepares (without a round trip when cached): only a
    /// pipelined transaction may. See [`Tx::commit_statement`].
    pub async fn commit_ready(&self, templates: &[&str]) -> Result<bool> {
        if !self.pipelined {
            return Ok(false);
        }
        self.db.prepare(templates).await?;
        Ok(true)
    }

    /// The COMMIT when `commit` (from [`Tx::commit_ready`]), joined (`biased`)
    /// after the statements whose templates were prepared; nothing otherwise.
    /// Should one of them fail, PostgreSQL answers this COMMIT with a rollback.
    pub async fn commit_statement(&self, commit: bool) -> Result<()> {
        if commit {
            self.db.batch("COMMIT").await?;
        }
        Ok(())
    }

    /// Records that the body made job `id` terminal (`status`) and that some
    /// job depends on it: its dependents are settled in this transaction.
    pub fn finished(&mut self, id: &str, status: JobStatus) {
        if status.is_terminal() {
            self.finished.push((id.to_owned(), status));
        }
    }

    /// What a signal's delivery writes with ([`crate::signals`]).
    pub fn writes(&mut self) -> Writes<'_, 'a> {
        Writes {
            db: &self.db,
            now: self.now,
            change: &mut self.change,
        }
    }

    /// Records that the body finished a spawned child: its outcome is
    /// delivered to its parent in this transaction.
    pub fn child_finished(&mut self, notice: ChildNotice) {
        self.children.push(notice);
    }

    /// Delivers the outcomes of the children recorded by
    /// [`Tx::child_finished`] to their parents, then settles the dependents
    /// of the jobs recorded by [`Tx::finished`] so far (count down, release,
    /// cascade, within the bound; [`crate::release`]). [`Tx::commit`] does
    /// this itself; a body that records its counts ([`Tx::counts_recorded`])
    /// calls it before.
    pub async fn release_dependents(&mut self) -> Result<()> {
        for notice in std::mem::take(&mut self.children) {
            let (parent, name) = (&notice.parent_id, &notice.name);
            let delivered = signal(self.writes(), parent, name, &notice.payload).await;
            self.work |= delivered.as_ref().is_ok_and(|sent| sent.woke);
            ChildNotice::settle(delivered)?;
        }
        if self.finished.is_empty() {
            return Ok(());
        }
        let finished = std::mem::take(&mut self.finished);
        let settled =
            crate::release::settle(&self.db, self.now, finished, &mut self.change).await?;
        self.work |= settled.released;
        self.backlog |= settled.backlog;
        Ok(())
    }

    /// Writes the count change into the transaction (without committing); with
    /// `notify_origin`, NOTIFYs it inside the transaction too.
    pub async fn record(&self, notify_origin: Option<&str>) -> Result<Effects> {
        record(&self.db, self.shard, &self.change, self.work, notify_origin).await
    }

    /// Keeps `effects`, the counts the body wrote itself with its last
    /// statements (in one round trip with them: a worker's claim ends so, a
    /// round trip fewer before its commit), and whether that round trip also
    /// committed ([`Tx::commit_statement`]); [`Tx::commit`] then only commits,
    /// if that. The body changes no status after that.
    pub fn counts_recorded(&mut self, effects: Effects, committed: bool) {
        debug_assert!(
            self.finished.is_empty() && self.children.is_empty(),
            "dependents settled and parents told before the counts"
        );
        self.recorded = Some(effects);
        self.committed = committed;
    }

    /// Records counts (unless the body did, see [`Tx::counts_recorded`]), then
    /// commits (unless the body did); the caller announces the returned effects
    /// after commit.
    pub async fn commit(mut self) -> Result<Effects> {
        let mut effects = match self.recorded.take() {
            Some(effects) => effects,
            None => {
                self.release_dependents().await?;
                self.record(None).await?
            }
        };
        match self.db.conn {
            Conn::Pooled(tx) => tx.commit().await.map_err(map_pg_error)?,
            Conn::Client(_) if self.pipelined && !self.committed => self.db.batch("COMMIT").await?,
            _ => {}
        }
        effects.backlog = self.backlog;
        Ok(effects)
    }
}

/// Guards a pooled connection while a pipelined transaction may be open on it:
/// dropped before [`OpenTx::closed`], it sends `ROLLBACK` (see the module
/// docs). After a failed statement the server has already ended the
/// transaction and only warns that none is in progress.
pub(crate) struct OpenTx<'a> {
    client: &'a deadpool_postgres::Object,
    open: bool,
}

impl<'a> OpenTx<'a> {
    pub fn new(client: &'a deadpool_postgres::Object) -> Self {
        Self { client, open: true }
    }

    /// The transaction committed: nothing to roll back.
    pub fn closed(mut self) {
        self.open = false;
    }
}

impl Drop for OpenTx<'_> {
    fn drop(&mut self) {
        if self.open {
            // Polled once: the request is queued on the connection then (as
            // tokio-postgres' own `Transaction` does on drop), ahead of
            // whatever the connection's next user sends; its answer is
            // dropped.
            let rollback = std::pin::pin!(self.client.batch_execute("ROLLBACK"));
            let _ = rollback.poll(&mut Context::from_waker(Waker::noop()));
        }
    }
}

/// After one run of a body: the value to return (its effects announced), or
/// `None` to run it again after a pause (a retryable error, retries left).
pub(crate) async fn settle<T>(
    store: &PostgresStore,
    result: Result<(T, Effects)>,
    attempt: &mut u32,
) -> Option<Result<T>> {
    match result {
        Ok((value, effects)) => {
            store.publish(effects);
            Some(Ok(value))
        }
        Err(e) if is_retryable(&e) && *attempt < MAX_RETRIES => {
            *attempt += 1;
            pause(*attempt, store.next_shard() as u64).await;
            None
        }
        Err(e) => Some(Err(e)),
    }
}

/// A short, growing pause between retries, spread by `salt`.
async fn pause(attempt: u32, salt: u64) {
    let base = 1u64 << attempt.min(7);
    tokio::time::sleep(Duration::from_millis(base + salt % (base + 1))).await;
}

/// Runs `attempt` (an async block yielding the value and the effects of one
/// committed transaction) until [`settle`] has its answer.
macro_rules! retry_tx {
    ($store:ident, $attempt:block) => {{
        let mut attempt: u32 = 0;
        loop {
            let result: duraq_core::Result<_> = async $attempt.await;
            if let Some(done) = $crate::tx::settle($store, result, &mut attempt).await {
                break done;
            }
        }
    }};
}
pub(crate) use retry_tx;

/// `write_tx!(store, now, |tx| { ...; Ok(value) })`: see the module docs.
macro_rules! write_tx {
    ($store:expr, $now:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::PostgresStore = $store;
        let now: i64 = $now;
        $crate::tx::retry_tx!(store, {
            let shared = store.shared();
            let mut client = $crate::backend::db::pooled(&shared.pool).await?;
            #[allow(unused_mut)]
            let mut $tx =
                $crate::tx::Tx::begin(&mut client, &shared.names, now, store.next_shard()).await?;
            let value: duraq_core::Result<_> = async { $body }.await;
            let value = value?;
            let effects = $tx.commit().await?;
            Ok((value, effects))
        })
    }};
}
pub(crate) use write_tx;

/// `pipelined_tx!(store, now, |tx| { tx.begin_statement() joined with the
/// first statements; ...; Ok(value) })`: see the module docs.
macro_rules! pipelined_tx {
    ($store:expr, $now:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::PostgresStore = $store;
        let now: i64 = $now;
        $crate::tx::retry_tx!(store, {
            let shared = store.shared();
            let client = $crate::backend::db::pooled(&shared.pool).await?;
            let open = $crate::tx::OpenTx::new(&client);
            let mut $tx =
                $crate::tx::Tx::pipelined(&client, &shared.names, now, store.next_shard());
            let value: duraq_core::Result<_> = async { $body }.await;
            let value = value?;
            let effects = $tx.commit().await?;
            open.closed();
            Ok((value, effects))
        })
    }};
}
pub(crate) use pipelined_tx;
