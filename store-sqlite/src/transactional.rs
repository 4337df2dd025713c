//! Transactional enqueue: a job that exists only if the application's own
//! transaction commits (the outbox pattern without an outbox). The enqueue runs
//! on the caller's connection inside a SAVEPOINT with the same rules as the
//! writer's ([`crate::enqueue`]). Other clients (sqlx) reach the same code
//! through their raw SQLite handle, see `app_sqlx.rs`.

use duraq_core::driver::note_reported_in_transaction;
use duraq_core::{
    CancelOutcome, EnqueueOutcome, Error, ErrorCode, JobContext, KeyedOutcome, NewJob, Outcome,
    ReplaceOutcome, Result, RunningOwner, ScheduleKey,
};
use rusqlite::Connection;

use crate::enqueue::{enqueue, enqueue_many, Batch};
use crate::error::SqlResult;
use crate::report::report;
use crate::schedule::{cancel, replace};
use crate::tx::Tx;
use crate::SqliteStore;

impl SqliteStore {
    /// Enqueues `job` inside a transaction the caller already holds on a
    /// connection to the same file, so the job commits (or rolls back) together
    /// with the application's own writes.
    ///
    /// `conn` must be inside a transaction (a [`rusqlite::Transaction`] derefs to
    /// one); otherwise this fails with `unsupported-option`. The job becomes
    /// visible when the caller commits. Workers in this process and in other
    /// processes notice it through the store's `PRAGMA data_version` poll (and
    /// the `work` epoch it bumps) within one poll interval; the count revision moves in the file, but no in-process
    /// [`duraq_core::inspect::CountDelta`] is published for it (the store cannot see the
    /// caller's commit). The caller's connection should set a busy timeout.
    ///
    /// ```no_run
    /// # fn demo(store: &duraq_store_sqlite::SqliteStore) -> duraq_core::Result<()> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let mut conn = rusqlite::Connection::open("app.db").unwrap();
    /// let tx = conn.transaction().unwrap();
    /// tx.execute("INSERT INTO orders (id) VALUES (?1)", [42]).unwrap();
    /// let job = NewJob::new("send_receipt", serde_json::json!([42]), EnqueueOptions::new())?;
    /// store.enqueue_in_transaction(&tx, job)?;
    /// tx.commit().unwrap(); // the order and its job commit together
    /// # Ok(()) }
    /// ```
    pub fn enqueue_in_transaction(&self, conn: &Connection, job: NewJob) -> Result<EnqueueOutcome> {
        self.in_savepoint(conn, |tx| enqueue(tx, job))
    }

    /// [`SqliteStore::enqueue_in_transaction`] for many jobs, in order, all or
    /// none: one refused job rolls the batch back to its savepoint and
    /// returns its error. The jobs of a workflow go in this way too.
    ///
    /// ```no_run
    /// # fn demo(store: &duraq_store_sqlite::SqliteStore) -> duraq_core::Result<()> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let mut conn = rusqlite::Connection::open("app.db").unwrap();
    /// let tx = conn.transaction().unwrap();
    /// let jobs = (1..=3)
    ///     .map(|i| NewJob::new("send_receipt", serde_json::json!([i]), EnqueueOptions::new()))
    ///     .collect::<duraq_core::Result<Vec<_>>>()?;
    /// assert_eq!(store.enqueue_many_in_transaction(&tx, jobs)?.len(), 3);
    /// tx.commit().unwrap();
    /// # Ok(()) }
    /// ```
    pub fn enqueue_many_in_transaction(
        &self,
        conn: &Connection,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<EnqueueOutcome>> {
        let batch = Batch::prepare(jobs)?;
        self.in_savepoint(conn, |tx| enqueue_many(tx, batch))
    }

    /// Reports the attempt running with `ctx` as `outcome` (completed, with an
    /// output or not, failed, snoozed) inside the handler's own transaction
    /// on `conn`, so the job's new state commits with the handler's business
    /// writes or not at all. Fenced by the attempt's lease: when the job was
    /// recovered, cancelled or claimed again meanwhile, nothing changes and
    /// the call fails with `lease-lost`; roll the transaction back then.
    /// After a commit the worker's own report of the attempt changes
    /// nothing; after a rollback it stands.
    ///
    /// ```no_run
    /// # fn perform(store: &duraq_store_sqlite::SqliteStore, ctx: &duraq_core::JobContext)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::Outcome;
    /// let mut conn = rusqlite::Connection::open("app.db")?;
    /// let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    /// tx.execute("UPDATE orders SET receipt_sent = 1 WHERE id = ?1", [42])?;
    /// store.report_in_transaction(&tx, ctx, Outcome::Completed)?; // `lease-lost`: dropped, rolled back
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn report_in_transaction(
        &self,
        conn: &Connection,
        ctx: &JobContext,
        outcome: Outcome,
    ) -> Result<()> {
        let lease = ctx.lease();
        self.in_savepoint(conn, |tx| match report(tx, &lease, &outcome)? {
            true => Ok(()),
            false => Err(Error::lease_lost(&lease)),
        })?;
        note_reported_in_transaction(ctx, outcome);
        Ok(())
    }

    /// Records durable step `name` of `ctx`'s attempt with `output` on
    /// `conn`, inside the application's open transaction: the step's own
    /// writes in that transaction and its record commit together, or neither
    /// does, which makes the step exactly once (check
    /// [`JobContext::recorded`] first). `lease-lost` when the attempt no
    /// longer holds the job (roll back); a name already recorded keeps its
    /// first record (`Ok`, nothing written).
    ///
    /// ```no_run
    /// # fn debit(store: &duraq_store_sqlite::SqliteStore, ctx: &duraq_core::JobContext)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// let mut conn = rusqlite::Connection::open("app.db")?;
    /// let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    /// tx.execute("UPDATE accounts SET balance = balance - 10 WHERE id = ?1", [7])?;
    /// store.record_step_in_transaction(&tx, ctx, "debit", &90)?;
    /// tx.commit()?; // the debit and its record, or neither
    /// # Ok(()) }
    /// ```
    pub fn record_step_in_transaction<T: serde::Serialize>(
        &self,
        conn: &Connection,
        ctx: &JobContext,
        name: &str,
        output: &T,
    ) -> Result<()> {
        let write = duraq_core::driver::step_write(ctx, name, output)?;
        self.in_savepoint(conn, |tx| match crate::steps::record(tx, &write)? {
            Some(_) => Ok(()),
            None => Err(Error::lease_lost(&write.lease)),
        })
    }

    /// Makes `job` the owner of schedule key `key` inside the transaction
    /// open on `conn`, as [`duraq_core::Producer::replace_scheduled`] does
    /// with [`RunningOwner::KeepRunning`]: a queued owner is cancelled, a
    /// running one keeps running, and both commit with the caller's writes or
    /// not at all (see [`SqliteStore::enqueue_in_transaction`]).
    ///
    /// ```no_run
    /// # fn demo(store: &duraq_store_sqlite::SqliteStore) -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::{EnqueueOptions, NewJob, ScheduleKey};
    /// let mut conn = rusqlite::Connection::open("app.db")?;
    /// let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    /// tx.execute("UPDATE trials SET ends_at = ends_at + 14 WHERE user_id = 7", [])?;
    /// let reminder = NewJob::new("trial_reminder", serde_json::json!([7]), EnqueueOptions::new())?;
    /// store.replace_scheduled_in_transaction(&tx, &ScheduleKey::new("trial:7")?, reminder)?;
    /// tx.commit()?; // the new end and its one reminder, or neither
    /// # Ok(()) }
    /// ```
    pub fn replace_scheduled_in_transaction(
        &self,
        conn: &Connection,
        key: &ScheduleKey,
        job: NewJob,
    ) -> Result<ReplaceOutcome> {
        self.in_savepoint(conn, |tx| replace(tx, key, job, RunningOwner::KeepRunning))
    }

    /// Cancels schedule key `key`'s queued owner inside the transaction open
    /// on `conn`, as [`duraq_core::Producer::cancel_scheduled`] does with
    /// [`RunningOwner::KeepRunning`] (a running owner keeps running and only
    /// releases the key).
    pub fn cancel_scheduled_in_transaction(
        &self,
        conn: &Connection,
        key: &ScheduleKey,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        self.in_savepoint(conn, |tx| cancel(tx, key, RunningOwner::KeepRunning))
    }

    /// Runs `body` on the caller's open transaction inside a savepoint: the
    /// count change and the work epoch are written with it, and a failed body
    /// is rolled back to the savepoint, leaving the caller's transaction as
    /// it was.
    fn in_savepoint<T>(
        &self,
        conn: &Connection,
        body: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        if conn.is_autocommit() {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "enqueueing in a transaction needs a connection inside an open transaction",
            ));
        }
        conn.execute_batch("SAVEPOINT duraq_enqueue").db()?;
        let mut tx = Tx::new(conn, self.now());
        let result = body(&mut tx).and_then(|outcome| {
            tx.end_mutation()?;
            if tx.has_work() {
                crate::counts::bump_work_epoch(conn)?;
            }
            Ok(outcome)
        });
        let closing = match &result {
            Ok(_) => conn.execute_batch("RELEASE duraq_enqueue"),
            Err(_) => conn.execute_batch("ROLLBACK TO duraq_enqueue; RELEASE duraq_enqueue"),
        };
        closing.db()?;
        result
    }
}
