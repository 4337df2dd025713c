//! Transactional enqueue: a job that exists only if the application's own
//! transaction commits (the outbox pattern without an outbox).
//!
//! The enqueue runs on the caller's transaction inside a SAVEPOINT, so a refused
//! enqueue (`idempotency-conflict`, a cap conflict) is rolled back on its own and
//! leaves the caller's transaction usable. The count change and NOTIFY ride in
//! the same transaction; this process learns of them through its LISTEN
//! connection once the caller commits, like any other process does.

use duraq_core::{EnqueueOutcome, NewJob, Result};

use crate::backend::db::{Conn, Db};
use crate::enqueue::enqueue_one;
use crate::tx::Tx;

/// The counter shard of the caller's session (see [`crate::counts`]).
const SESSION_SHARD: i32 = -1;
use crate::PostgresStore;

impl PostgresStore {
    /// Enqueues `job` inside `tx`, the application's open transaction on the same
    /// database. Nothing is visible to workers until `tx` commits, and nothing
    /// remains if it rolls back.
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
    pub async fn enqueue_in(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        job: NewJob,
    ) -> Result<EnqueueOutcome> {
        let db = Db {
            conn: Conn::Borrowed(tx),
            names: &self.shared().names,
        };
        db.batch("SAVEPOINT duraq_enqueue").await?;
        let mut inner = Tx::new(db, self.now(), SESSION_SHARD);
        let result: Result<EnqueueOutcome> = async {
            let outcome = enqueue_one(&mut inner, &job).await?;
            // Origin "": our own listener announces it once the caller commits.
            inner.record(Some("")).await?;
            Ok(outcome)
        }
        .await;
        match result {
            Ok(outcome) => {
                inner.db.batch("RELEASE SAVEPOINT duraq_enqueue").await?;
                Ok(outcome)
            }
            Err(e) => {
                inner
                    .db
                    .batch("ROLLBACK TO SAVEPOINT duraq_enqueue; RELEASE SAVEPOINT duraq_enqueue")
                    .await?;
                Err(e)
            }
        }
    }
}
