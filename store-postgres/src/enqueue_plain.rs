//! Plain enqueues (no idempotency key, dedupe, operation, concurrency cap or rate limit) in
//! one statement.
//!
//! Such an enqueue needs no reads and no decisions: insert the rows and add them
//! to a counter shard. Done as one statement on a pooled connection (an implicit
//! transaction: both writes or neither), it costs one round trip instead of four
//! (`BEGIN`, insert, counts, `COMMIT`), which is most of a single-row enqueue's
//! time apart from the WAL flush. A large batch is the exception: there the
//! server's work on the rows outweighs the round trips, and it goes through
//! `COPY` in a transaction ([`crate::copy`]). Every other enqueue takes the
//! general path in [`crate::enqueue`].

use std::sync::OnceLock;

use duraq_core::driver::transitions::new_job_row;
use duraq_core::driver::CountChange;
use duraq_core::{EnqueueOutcome, JobStatus, NewJob, Result};
use tokio_postgres::types::ToSql;

use crate::backend::db::{pooled, Conn, Db};
use crate::columns::ArgsText;
use crate::copy::COPY_MIN_ROWS;
use crate::counts::{update_sql, Effects, Entry, QueueDeltas, SHARDS, SHARD_CTE};
use crate::enqueue::enqueue_many;
use crate::insert::{chosen_ids, insert_jobs_sql, taken_ids_guard_sql, NewRows};
use crate::tx::write_tx;
use crate::PostgresStore;

/// Shard parameters `$1`..`$9` (as in [`crate::counts`]), rows from `$10`
/// ([`NewRows::COUNT`] of them), the queue arrays, then, when `guarded`, the
/// chosen ids (see [`chosen_ids`] on why the guard is left out otherwise).
fn sql(guarded: bool) -> &'static str {
    static SQL: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    SQL[usize::from(guarded)].get_or_init(|| {
        let queues = 10 + NewRows::COUNT;
        let guard = if guarded {
            format!("{}, ", taken_ids_guard_sql(queues + QueueDeltas::ARRAYS))
        } else {
            String::new()
        };
        format!(
            "WITH {SHARD_CTE}, {guard}i AS ({} RETURNING 1), {}",
            insert_jobs_sql(10),
            update_sql(queues)
        )
    })
}

/// The statement a plain enqueue sends on `schema`, for the plan tests
/// (`tests/plans.rs`, feature `plan-tests`): not an API.
#[cfg(feature = "plan-tests")]
pub fn plain_enqueue_sql(schema: &str, guarded: bool) -> String {
    sql(guarded).replace("{s}", &crate::backend::db::quote_identifier(schema))
}

/// The columns whose arrays [`plain_enqueue_sql`] binds after the nine shard
/// parameters, as (name, element type), for the plan tests: not an API.
#[cfg(feature = "plan-tests")]
pub fn plain_enqueue_columns() -> Vec<(&'static str, &'static str)> {
    (crate::columns::statements::bound())
        .map(|c| (c.name, c.kind.param()))
        .collect()
}

/// Enqueues plain `jobs` (see [`NewJob::is_plain`]) with one statement, then
/// announces; from [`COPY_MIN_ROWS`] jobs on, in a transaction through `COPY`
/// ([`crate::copy`]), where the server's share of the work is smaller.
pub(crate) async fn enqueue_plain(
    store: &PostgresStore,
    jobs: &[NewJob],
) -> Result<Vec<EnqueueOutcome>> {
    if jobs.len() >= COPY_MIN_ROWS {
        return write_tx!(store, store.now(), |tx| {
            enqueue_many(&mut tx, jobs).await
        });
    }
    let now = store.now();
    let rows: Vec<_> = jobs.iter().map(|j| new_job_row(j, now)).collect();
    let args: Vec<ArgsText> = jobs.iter().map(ArgsText::of).collect();
    let new_rows = NewRows::new(&rows, &args);
    let chosen = chosen_ids(jobs);
    let mut change = CountChange::default();
    for row in &rows {
        change.added(&row.queue, JobStatus::Queued);
    }
    let queues = QueueDeltas::new(&change);
    let d = change.per_status();
    let shard = store.next_shard();
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &shard, &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &d[6], &SHARDS,
    ];
    params.extend(new_rows.params());
    params.extend(queues.params());
    if !chosen.is_empty() {
        params.push(&chosen);
    }
    let shared = store.shared();
    let row = {
        let client = pooled(&shared.pool).await?;
        let db = Db {
            conn: Conn::Client(&client),
            names: &shared.names,
        };
        db.query_one(sql(!chosen.is_empty()), &params).await?
    };
    store.publish(Effects {
        entry: Some(Entry {
            shard: row.get(0),
            shard_revision: row.get(1),
            revision: row.get(2),
            deltas: d,
        }),
        work: true,
        backlog: false,
        requeued: false,
    });
    Ok(rows
        .into_iter()
        .map(|r| EnqueueOutcome::Created(r.id))
        .collect())
}
