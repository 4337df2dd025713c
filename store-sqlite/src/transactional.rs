//! Transactional enqueue: a job that exists only if the application's own
//! transaction commits (the outbox pattern without an outbox). The enqueue runs
//! on the caller's connection inside a SAVEPOINT with the same rules as the
//! writer's ([`crate::enqueue`]).

use duraq_core::{EnqueueOutcome, Error, ErrorCode, NewJob, Result};
use rusqlite::Connection;

use crate::enqueue::enqueue;
use crate::error::SqlResult;
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
        if conn.is_autocommit() {
            return Err(Error::invalid(
                ErrorCode::UnsupportedOption,
                "enqueue_in_transaction needs a connection inside an open transaction",
            ));
        }
        conn.execute_batch("SAVEPOINT duraq_enqueue").db()?;
        let mut tx = Tx::new(conn, self.now());
        let result = enqueue(&mut tx, job).and_then(|outcome| {
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
