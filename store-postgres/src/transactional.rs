//! Transactional enqueue: a job that exists only if the application's own
//! transaction commits (the outbox pattern without an outbox).
//!
//! The enqueue runs on the caller's transaction inside a SAVEPOINT, so a refused
//! enqueue (`idempotency-conflict`, a cap conflict) is rolled back on its own and
//! leaves the caller's transaction usable. The count change and NOTIFY ride in
//! the same transaction; this process learns of them through its LISTEN
//! connection once the caller commits, like any other process does. The
//! caller's client is tokio-postgres or any [`Executor`](crate::client::Executor)
//! (see [`crate::client`]).

use duraq_core::driver::note_reported_in_transaction;
use duraq_core::{
    CancelOutcome, EnqueueOutcome, Error, JobContext, KeyedOutcome, NewJob, Outcome,
    ReplaceOutcome, Result, RunningOwner, ScheduleKey,
};

use crate::backend::db::{Conn, Db, External};
use crate::client::{AppTransaction, Executor};
use crate::enqueue::{enqueue_many, enqueue_one};
use crate::report::report_many;
use crate::schedule::{cancel, replace};
use crate::tx::Tx;
use crate::PostgresStore;

/// The counter shard of the caller's session (see [`crate::counts`]).
const SESSION_SHARD: i32 = -1;

impl PostgresStore {
    /// Enqueues `job` inside `tx`, the application's open transaction on the same
    /// database: a `&tokio_postgres::Transaction`, or with the `sqlx` feature
    /// `&mut tx` (or `&mut *tx`) of a `sqlx::Transaction<'_, Postgres>`; diesel,
    /// diesel-async and SeaORM by their features ([`crate::client`]). Nothing is
    /// visible to workers until `tx` commits, and nothing remains if it rolls
    /// back. A refused job (an idempotency conflict, say) is rolled back to a
    /// savepoint of its own: the error is returned and `tx` stays usable.
    ///
    /// Holding `tx` open also holds one counter shard row, so keep such
    /// transactions short.
    ///
    /// ```no_run
    /// # async fn demo(store: duraq_store_postgres::PostgresStore, client: &mut tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let tx = client.transaction().await?;
    /// tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&42i64]).await?;
    /// let job = NewJob::new("send_receipt", serde_json::json!([42]), EnqueueOptions::new())?;
    /// store.enqueue_in(&tx, job).await?;
    /// tx.commit().await?; // the order and its job, or neither
    /// # Ok(()) }
    /// ```
    pub async fn enqueue_in<'a>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        job: NewJob,
    ) -> Result<EnqueueOutcome> {
        self.forget_hints_before([&job]);
        let mut inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let result = enqueue_one(&mut inner, &job).await;
        close_savepoint(inner, result).await
    }

    /// [`PostgresStore::enqueue_in`] for many jobs, in order, all or none: one
    /// refused job rolls back the batch's savepoint and returns its error. The
    /// jobs of a workflow ([`duraq_core::Workflow`]) go in this way too.
    ///
    /// ```no_run
    /// # async fn demo(store: duraq_store_postgres::PostgresStore, client: &mut tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::{EnqueueOptions, NewJob};
    /// let tx = client.transaction().await?;
    /// let jobs = (1..=3)
    ///     .map(|i| NewJob::new("send_receipt", serde_json::json!([i]), EnqueueOptions::new()))
    ///     .collect::<duraq_core::Result<Vec<_>>>()?;
    /// let outcomes = store.enqueue_many_in(&tx, jobs).await?;
    /// assert_eq!(outcomes.len(), 3);
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn enqueue_many_in<'a>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<EnqueueOutcome>> {
        self.forget_hints_before(&jobs);
        let mut inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let result = enqueue_many(&mut inner, &jobs).await;
        close_savepoint(inner, result).await
    }

    /// Reports the attempt running with `ctx` as `outcome` (completed, with an
    /// output or not, failed, snoozed) inside `tx`, the handler's own
    /// transaction, so the job's new state commits with the handler's
    /// business writes or not at all. Fenced by the attempt's lease: when the
    /// job was recovered, cancelled or claimed again meanwhile, nothing
    /// changes and the call fails with `lease-lost`; roll `tx` back then.
    /// Dependents are settled and the wake-up sent in `tx` as well. After a
    /// commit, the worker's own report of the attempt changes nothing; after
    /// a rollback, it stands.
    ///
    /// ```no_run
    /// # async fn perform(store: &duraq_store_postgres::PostgresStore, ctx: &duraq_core::JobContext,
    /// #     client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::Outcome;
    /// let tx = client.transaction().await?;
    /// tx.execute("UPDATE orders SET receipt_sent = true WHERE id = $1", &[&42i64]).await?;
    /// store.report_in(&tx, ctx, Outcome::Completed).await?; // `lease-lost`: dropped, rolled back
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub async fn report_in<'a>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        ctx: &JobContext,
        outcome: Outcome,
    ) -> Result<()> {
        let lease = ctx.lease();
        let mut inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let reports = [(lease, outcome)];
        let result = match report_many(&mut inner, &reports).await {
            Ok(applied) if applied.first() == Some(&true) => Ok(()),
            Ok(_) => Err(Error::lease_lost(&reports[0].0)),
            Err(e) => Err(e),
        };
        close_savepoint(inner, result).await?;
        let [(_, outcome)] = reports;
        note_reported_in_transaction(ctx, outcome);
        Ok(())
    }

    /// Records durable step `name` of `ctx`'s attempt with `output` inside
    /// `tx`, the application's open transaction (the clients of
    /// [`PostgresStore::enqueue_in`]): the step's own writes and its record
    /// commit together, or neither does, which makes the step exactly once
    /// (check [`JobContext::recorded`] first). `lease-lost` when the attempt
    /// no longer holds the job (roll back); a name already recorded keeps
    /// its first record (`Ok`, nothing written).
    ///
    /// ```no_run
    /// # async fn debit(store: &duraq_store_postgres::PostgresStore, ctx: &duraq_core::JobContext,
    /// #     client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let tx = client.transaction().await?;
    /// tx.execute("UPDATE accounts SET balance = balance - 10 WHERE id = $1", &[&7i64]).await?;
    /// store.record_step_in(&tx, ctx, "debit", &90).await?;
    /// tx.commit().await?; // the debit and its record, or neither
    /// # Ok(()) }
    /// ```
    pub async fn record_step_in<'a, T: serde::Serialize>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        ctx: &JobContext,
        name: &str,
        output: &T,
    ) -> Result<()> {
        let write = duraq_core::driver::step_write(ctx, name, output)?;
        let inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let result = match crate::steps::record(&inner.db, &write, inner.now).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(Error::lease_lost(&write.lease)),
            Err(e) => Err(e),
        };
        close_savepoint(inner, result).await
    }

    /// Makes `job` the owner of schedule key `key` inside `tx` (the clients
    /// of [`PostgresStore::enqueue_in`]), as [`duraq_core::Producer::replace_scheduled`]
    /// does with [`RunningOwner::KeepRunning`]: a queued owner is cancelled,
    /// a running one keeps running. Both commit with the caller's writes or
    /// not at all; a refused job rolls back to its savepoint, `tx` usable.
    ///
    /// ```no_run
    /// # async fn demo(store: duraq_store_postgres::PostgresStore, client: &mut tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use duraq_core::{EnqueueOptions, NewJob, ScheduleKey};
    /// let tx = client.transaction().await?;
    /// tx.execute("UPDATE trials SET ends_at = now() + interval '14 days' WHERE user_id = 7", &[]).await?;
    /// let reminder = NewJob::new("trial_reminder", serde_json::json!([7]), EnqueueOptions::new())?;
    /// store.replace_scheduled_in(&tx, &ScheduleKey::new("trial:7")?, reminder).await?;
    /// tx.commit().await?; // the new end and its one reminder, or neither
    /// # Ok(()) }
    /// ```
    pub async fn replace_scheduled_in<'a>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        key: &ScheduleKey,
        job: NewJob,
    ) -> Result<ReplaceOutcome> {
        self.forget_hints_before([&job]);
        let mut inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let result = replace(&mut inner, key, &job, RunningOwner::KeepRunning).await;
        close_savepoint(inner, result).await
    }

    /// Cancels schedule key `key`'s queued owner inside `tx`, as
    /// [`duraq_core::Producer::cancel_scheduled`] does with [`RunningOwner::KeepRunning`]
    /// (a running owner keeps running and only releases the key).
    pub async fn cancel_scheduled_in<'a>(
        &self,
        tx: impl Into<AppTransaction<'a>>,
        key: &ScheduleKey,
    ) -> Result<KeyedOutcome<CancelOutcome>> {
        let mut inner = open_savepoint(self.app_db(tx.into()), self.now()).await?;
        let result = cancel(&mut inner, key, RunningOwner::KeepRunning).await;
        close_savepoint(inner, result).await
    }

    /// The caller's transaction as the store's statements run on it, for
    /// as long as both it and the store are borrowed.
    fn app_db<'x, 't: 'x>(&'x self, tx: AppTransaction<'t>) -> Db<'x> {
        let shared = self.shared();
        let conn = match tx {
            AppTransaction::TokioPostgres(tx) => Conn::Borrowed(tx),
            AppTransaction::Executor(executor) => {
                let executor: &'x mut (dyn Executor + 'x) = executor;
                Conn::External(External {
                    executor: tokio::sync::Mutex::new(executor),
                    describer: &shared.describer,
                })
            }
        };
        Db {
            conn,
            names: &shared.names,
        }
    }
}

/// Opens the savepoint a call's statements run in, on the caller's
/// transaction.
async fn open_savepoint(db: Db<'_>, now: i64) -> Result<Tx<'_>> {
    db.batch("SAVEPOINT duraq_enqueue").await?;
    Ok(Tx::new(db, now, SESSION_SHARD))
}

/// Ends the savepoint: on success the call's count change and wake-up are
/// recorded in the caller's transaction and the savepoint released; a failure
/// is rolled back to it, leaving the caller's transaction as it was.
async fn close_savepoint<T>(mut inner: Tx<'_>, result: Result<T>) -> Result<T> {
    let result = match result {
        Ok(value) => record(&mut inner).await.map(|()| value),
        Err(e) => Err(e),
    };
    let closing = match &result {
        Ok(_) => "RELEASE SAVEPOINT duraq_enqueue",
        Err(_) => "ROLLBACK TO SAVEPOINT duraq_enqueue; RELEASE SAVEPOINT duraq_enqueue",
    };
    inner.db.batch(closing).await?;
    result
}

/// Settles the dependents of jobs the call finished and writes its count
/// change and wake-up into the caller's transaction.
async fn record(inner: &mut Tx<'_>) -> Result<()> {
    inner.release_dependents().await?;
    // Origin "": our own listener announces it once the caller commits.
    inner.record(Some("")).await?;
    Ok(())
}
