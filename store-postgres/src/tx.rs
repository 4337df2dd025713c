//! Running one store call as one transaction, retried when PostgreSQL reports a
//! serialization failure or deadlock.
//!
//! [`write_tx!`] takes a pooled connection, begins a READ COMMITTED transaction,
//! runs the body with a [`Tx`] (the connection, the call's single `now`, and the
//! count change the body accumulates), records the counts, commits, and only then
//! announces the change (delta broadcast and work signal here, NOTIFY elsewhere). A body that fails
//! leaves nothing behind: the transaction is rolled back when dropped. Bodies must
//! only borrow their inputs, because a retry runs them again.

use std::time::Duration;

use duraq_core::{CountChange, Result};

use crate::counts::{record, Effects};
use crate::db::{Conn, Db, Names};
use crate::error::map_pg_error;

/// Retries after a serialization failure or deadlock before `database-busy`.
pub(crate) const MAX_RETRIES: u32 = 10;

/// One store call's transaction.
pub(crate) struct Tx<'a> {
    pub db: Db<'a>,
    /// The call's clock reading, used for every timestamp and comparison.
    pub now: i64,
    /// Net status changes so far.
    pub change: CountChange,
    /// Whether work may have become available.
    pub work: bool,
    shard: i32,
    /// The counts, when the body wrote them itself with its last statements
    /// (see [`Tx::counts_recorded`]).
    recorded: Option<Effects>,
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

    pub fn new(db: Db<'a>, now: i64, shard: i32) -> Self {
        Self {
            db,
            now,
            change: CountChange::default(),
            work: false,
            shard,
            recorded: None,
        }
    }

    /// Writes the count change into the transaction (without committing); with
    /// `notify_origin`, NOTIFYs it inside the transaction too.
    pub async fn record(&self, notify_origin: Option<&str>) -> Result<Effects> {
        record(&self.db, self.shard, &self.change, self.work, notify_origin).await
    }

    /// Keeps `effects`, the counts the body wrote itself with its last
    /// statements (in one round trip with them: a worker's claim ends so, a
    /// round trip fewer before its commit); [`Tx::commit`] then only commits.
    /// The body changes no status after that.
    pub fn counts_recorded(&mut self, effects: Effects) {
        self.recorded = Some(effects);
    }

    /// Records counts (unless the body did, see [`Tx::counts_recorded`]), then
    /// commits a pooled transaction; the caller announces the returned effects
    /// after commit.
    pub async fn commit(mut self) -> Result<Effects> {
        let effects = match self.recorded.take() {
            Some(effects) => effects,
            None => self.record(None).await?,
        };
        if let Conn::Pooled(tx) = self.db.conn {
            tx.commit().await.map_err(map_pg_error)?;
        }
        Ok(effects)
    }
}

/// A short, growing pause between retries, spread by `salt`.
pub(crate) async fn pause(attempt: u32, salt: u64) {
    let base = 1u64 << attempt.min(7);
    tokio::time::sleep(Duration::from_millis(base + salt % (base + 1))).await;
}

/// `write_tx!(store, now, |tx| { ...; Ok(value) })`: see the module docs.
macro_rules! write_tx {
    ($store:expr, $now:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::PostgresStore = $store;
        let now: i64 = $now;
        let mut attempt: u32 = 0;
        loop {
            let result: duraq_core::Result<_> = async {
                let shared = store.shared();
                let mut client = $crate::db::pooled(&shared.pool).await?;
                #[allow(unused_mut)]
                let mut $tx =
                    $crate::tx::Tx::begin(&mut client, &shared.names, now, store.next_shard())
                        .await?;
                let value: duraq_core::Result<_> = async { $body }.await;
                let value = value?;
                let effects = $tx.commit().await?;
                Ok((value, effects))
            }
            .await;
            match result {
                Ok((value, effects)) => {
                    store.publish(effects);
                    break Ok(value);
                }
                Err(e) if $crate::error::is_retryable(&e) && attempt < $crate::tx::MAX_RETRIES => {
                    attempt += 1;
                    $crate::tx::pause(attempt, store.next_shard() as u64).await;
                }
                Err(e) => break Err(e),
            }
        }
    }};
}
pub(crate) use write_tx;
