//! Taking a schema back to an older version by hand, and the checks every
//! upgrade from it shares.
//!
//! Shipped code never downgrades a schema, so an upgrade test cannot open an
//! old release; instead it creates today's schema, writes jobs through
//! today's store, then undoes with plain SQL what the later versions created
//! and forgets them in the migration ledger. Reopening the schema then runs
//! exactly those versions' migrations over the rows left behind.

use duraq_core::prelude::*;
use duraq_core::NewJob;
use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};
use tokio_postgres::Client;

use crate::common::{filenodes, open_existing, raw_client};

/// The id of the job `new`, enqueued on `store`.
pub async fn enqueued(store: &PostgresStore, new: NewJob) -> String {
    store.enqueue(new).await.unwrap().job_id().to_owned()
}

/// Closes `store`, then takes its schema `s` back to before `version`: runs
/// `sql` (statements, without a final `;`, that remove what `version`
/// and later versions created) and deletes those versions from the ledger.
/// Returns the raw client it used, to look at the tables around the upgrade.
pub async fn undo(store: PostgresStore, s: &str, version: i64, sql: &str) -> Client {
    store.close().await.unwrap();
    drop(store);
    let client = raw_client().await;
    client
        .batch_execute(&format!(
            "{sql}; DELETE FROM {s}.duraq_migrations WHERE version >= {version}"
        ))
        .await
        .unwrap();
    client
}

/// Reopens the schema `s` that [`undo`] took back to before `version`, and
/// checks that the upgrade applied `version` and every later one, and that it
/// altered `tables` in place: none of them was rewritten.
pub async fn upgrade_in_place(
    client: &Client,
    s: &str,
    version: i64,
    tables: &[&str],
) -> PostgresStore {
    let before = filenodes(client, s, tables).await;
    let store = open_existing(s).await.unwrap();
    assert_eq!(
        store.migration().applied,
        (version..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(
        filenodes(client, s, tables).await,
        before,
        "no table rewrite"
    );
    store
}

/// The indexes on `table` of schema `s`: (name, definition), by name.
pub async fn job_indexes(client: &Client, s: &str, table: &str) -> Vec<(String, String)> {
    let rows = client
        .query(
            "SELECT indexname::text, indexdef FROM pg_indexes WHERE schemaname = $1 \
             AND tablename = $2 ORDER BY indexname",
            &[&s, &table],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}
