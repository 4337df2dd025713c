//! `duraq-store-postgres`: the store traits ([`duraq_core::Store`]) on
//! PostgreSQL, for any number of producer and worker processes on any number of
//! hosts sharing one database.
//!
//! - One transaction per call (READ COMMITTED), retried on serialization failures
//!   and deadlocks; every value is a bound parameter ([`map_pg_error`] is the one
//!   place SQLSTATEs become duraq errors).
//! - Claims use `FOR UPDATE SKIP LOCKED` and take exact concurrency reservations.
//! - Counts live in sharded counter rows: constant-cost snapshots, no single row
//!   every producer waits for.
//! - Committed changes are announced with `NOTIFY` after commit, coalesced by one
//!   notifier task per store; one `LISTEN` connection per store feeds
//!   [`duraq_core::Inspect::subscribe_counts`] and
//!   [`duraq_core::WorkerStore::work_signal`] with other processes' changes, and
//!   makes good lost announcements from the counter rows.
//! - Tenant-per-schema: [`PostgresOptions::schema`] puts every table in one schema.
//! - Transactional enqueue: [`PostgresStore::enqueue_in`] enqueues inside the
//!   application's own transaction, so the job exists only if its data commits.
//!
//! ```no_run
//! # async fn demo() -> duraq_core::Result<()> {
//! use duraq_store_postgres::{PostgresOptions, PostgresStore};
//! let options = PostgresOptions { schema: Some("tenant_acme".into()), ..PostgresOptions::default() };
//! let store = PostgresStore::connect("postgres://app@db/app", options).await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! ## Module map
//!
//! Both database crates use the same file for the same role; mechanics of the
//! database itself live under `backend/`. The modules' `use crate::…` imports
//! form no cycle. SQL lives in the role modules, none in `store_impl.rs`.
//!
//! - `lib.rs`: [`PostgresStore`], [`PostgresOptions`], publishing committed effects.
//! - `store_impl.rs`: the store traits, one `impl` per trait; each call is one
//!   transaction or one pooled read handed to a role module (no SQL).
//! - `error.rs`: PostgreSQL failures to duraq errors ([`map_pg_error`]).
//! - `tx.rs`: one call as one retried transaction (`write_tx!`, `pipelined_tx!`).
//! - `columns.rs`: the job table's columns, described once; the select list,
//!   fresh rows' arrays and `COPY` fields, and the write-back derive from it.
//! - `rows.rs`: job rows read into `Job` and written back.
//! - `insert.rs`: fresh job rows, many per statement.
//! - `copy.rs`: fresh job rows of a large batch through `COPY`.
//! - `enqueue.rs`: enqueue and batches (replay, dedupe, checks, insert).
//! - `enqueue_plain.rs`: plain enqueues (nothing to check) in one statement.
//! - `transactional.rs`: [`PostgresStore::enqueue_in`].
//! - `dedupe.rs`: dedupe scopes and the duplicate lookup.
//! - `dependencies.rs`: how a job with dependencies starts, its edges, and
//!   giving dependents back on an operator retry.
//! - `release.rs`: settling dependents when a job finishes, within the bound.
//! - `backlog.rs`: the release backlog, continued a bounded step at a time.
//! - `schedule.rs`: schedule keys (replace, cancel, wake, get).
//! - `claim.rs`: claiming, and the next due time for the worker's timer.
//! - `rate.rs`: the rate-limit windows and start log.
//! - `report.rs`: fenced reports, heartbeats, lease checks, lost-lease recovery.
//! - `complete.rs`: a batch of completions in one statement.
//! - `ownership.rs`: what a job holds besides its row (concurrency
//!   reservation, schedule-key ownership, the key lock), given back around
//!   transitions.
//! - `admin.rs`: operator retry and cancel, listing, pruning, reconciliation.
//! - `bulk.rs`: bulk operator actions (retry, cancel, delete many jobs).
//! - `pause.rs`: paused queues.
//! - `counts.rs`: sharded counter rows and snapshots.
//! - `operations.rs`: the mailer's durable operation records.
//! - `workers.rs`: visible workers and due-job groups.
//! - `schema.rs`: migrations and the ledger; `schema_def.rs`: the declared
//!   schema; `versions.rs`: the schema's versions ([`SCHEMA_VERSIONS`]).
//! - `backend/connect.rs`: opening a store (pool, schema, listener, notifier).
//! - `backend/db.rs`: the pool and one way to run a statement (`{s}` templates).
//! - `backend/plans.rs`: planner settings the claim and reports send.
//! - `backend/listener.rs`: the LISTEN connection for other processes' changes.
//! - `backend/notify.rs`: the notifier task, NOTIFY after commit, coalesced.
//! - `backend/count_mirror.rs`: count changes announced here, per shard, so a
//!   lost announcement is made good.
//! - `backend/enqueue_group.rs`: concurrent plain enqueues grouped into one
//!   statement.

#![warn(missing_docs)]

mod admin;
mod admission;
mod aging;
mod backend;
mod backlog;
mod bulk;
mod claim;
pub mod client;
mod columns;
mod complete;
mod copy;
mod counts;
mod dedupe;
mod dependencies;
mod enqueue;
mod enqueue_plain;
mod enqueue_waiting;
mod ephemeral;
mod error;
mod expiry;
mod history;
mod insert;
mod key_backlog;
mod operations;
mod ownership;
mod pause;
mod progress;
mod rate;
mod reclaim;
mod release;
mod report;
mod rows;
mod schedule;
mod schema;
mod schema_def;
mod search;
mod signals;
mod steps;
mod store_impl;
mod transactional;
mod tx;
mod versions;
mod workers;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use duraq_core::inspect::CountDelta;
use duraq_core::Clock;
use tokio::sync::{broadcast, watch};

pub use backend::connect::{migrate, MigrationReport};
pub use counts::SHARDS;
#[cfg(feature = "plan-tests")]
pub use enqueue_plain::{plain_enqueue_columns, plain_enqueue_sql};
pub use error::{map_pg_error, map_pool_error, map_sqlstate};
pub use reclaim::{
    reclaim_due, DeadRows, RECLAIM_DUTY_DIVISOR, RECLAIM_MIN_DEAD, RECLAIM_MIN_INTERVAL_MS,
};
pub use schema::{LEDGER_TABLE, MIGRATION_SCOPE};
#[cfg(feature = "plan-tests")]
pub use search::search_candidate_sql;
pub use versions::{SchemaVersion, SCHEMA_VERSION, SCHEMA_VERSIONS};

/// How to open a [`PostgresStore`].
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// The schema holding duraq's tables (created if missing); `None` means the
    /// connection's current schema (normally `public`). Must be a plain
    /// identifier: letters, digits and `_`.
    pub schema: Option<String>,
    /// Pooled connections for store calls (the LISTEN connection is extra).
    pub pool_size: usize,
    /// How often to poll for other processes' changes while the LISTEN
    /// connection is down (it is re-established in the meantime).
    pub fallback_poll_ms: u64,
    /// Whether to open the LISTEN connection that brings other processes'
    /// changes to [`duraq_core::Inspect::subscribe_counts`] and
    /// [`duraq_core::WorkerStore::work_signal`]. Workers and count watchers need it.
    /// A process that only enqueues (a web server) can turn it off: it saves a
    /// connection, and the server no longer delivers every process's
    /// announcements to it. Its own changes are announced to others either way.
    pub listen: bool,
    /// Where the LISTEN connection goes, when not to the store's URL: a direct
    /// server address when the store's URL is a transaction-mode pooler, which
    /// cannot hold a LISTEN (`DURAQ_LISTEN_URL` for the `duraq` program; see
    /// `docs/postgres.md`). Without it, a LISTEN that hears nothing (such a
    /// pooler) is noticed once at start and the store polls instead.
    pub listen_url: Option<String>,
    /// Whether statements are prepared by name and kept per connection (the
    /// default, and the fastest). Turn off behind a transaction-mode pooler
    /// that does not keep prepared statements (PgBouncer before 1.21, or
    /// without `max_prepared_statements`): every statement then runs unnamed,
    /// in one round trip, with parameter types described once per process.
    pub prepared_statements: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: None,
            pool_size: 8,
            fallback_poll_ms: 500,
            listen: true,
            listen_url: None,
            prepared_statements: true,
        }
    }
}

/// State shared by the store and its listener task.
pub(crate) struct Shared {
    pub pool: backend::db::Pool,
    pub names: backend::db::Names,
    pub deltas: broadcast::Sender<CountDelta>,
    pub work: watch::Sender<u64>,
    /// Moves when a commit through this store left a release backlog entry.
    pub backlog: watch::Sender<u64>,
    pub listening: std::sync::atomic::AtomicBool,
    /// How many times the LISTEN connection was re-established.
    pub reconnects: AtomicU64,
    /// Count changes announced in this process, per shard.
    pub mirror: std::sync::Mutex<backend::count_mirror::Mirror>,
    /// Hands committed announcements to the notifier task.
    pub notifier: tokio::sync::mpsc::UnboundedSender<backend::notify::Message>,
    /// Running jobs cancelled (by this process at once, by others via NOTIFY).
    pub cancels: broadcast::Sender<String>,
    /// How long this store's last reclaim took (ms), -1 before the first
    /// (`reclaim.rs`: reclaims are spaced by their own cost).
    pub last_reclaim_ms: std::sync::atomic::AtomicI64,
    /// Describes the statements run on an application's client
    /// ([`client`]); the same as `names.unnamed` when that is set.
    pub describer: Arc<backend::unnamed::Describer>,
    /// Where this process's claims last left each keyed lane.
    pub lane_hints: claim::LaneHints,
}

impl Shared {
    /// Announces `entry` in this process unless the mirror already accounted for it.
    pub(crate) fn announce(&self, entry: &counts::Entry) {
        let fresh = self
            .mirror
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .apply(entry);
        if fresh {
            let _ = self.deltas.send(entry.delta());
        }
    }
}

struct Inner {
    shared: Arc<Shared>,
    clock: Arc<dyn Clock>,
    shard_seq: AtomicU64,
    migration: backend::connect::MigrationReport,
    pool_size: usize,
    group: backend::enqueue_group::Group,
    listener: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
    }
}

/// The PostgreSQL job store. Cloning shares the pool and the listener.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

impl PostgresStore {
    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    pub(crate) fn is_listening_enabled(&self) -> bool {
        self.inner.listener.is_some()
    }

    pub(crate) fn group(&self) -> &backend::enqueue_group::Group {
        &self.inner.group
    }

    pub(crate) fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// The counter shard for the next mutation: spread round-robin from a
    /// per-process offset, so processes start on different shards.
    pub(crate) fn next_shard(&self) -> i32 {
        let n = self.inner.shard_seq.fetch_add(1, Ordering::Relaxed);
        (n % SHARDS as u64) as i32
    }

    /// Forgets this process's lane hints when `jobs` hold a keyed job due at
    /// a given time not after now: it may stand before a hint, which a claim
    /// would then start after (see [`claim::LaneHints`]).
    pub(crate) fn forget_hints_before<'j>(
        &self,
        jobs: impl IntoIterator<Item = &'j duraq_core::NewJob>,
    ) {
        let now = self.now();
        let before = |j: &duraq_core::NewJob| {
            j.fairness_key().is_some() && j.scheduled_at_ms().is_some_and(|at| at <= now)
        };
        if jobs.into_iter().any(before) {
            self.shared().lane_hints.clear();
        }
    }

    /// Announces a committed transaction's effects in this process at once, and
    /// to other processes through the notifier.
    pub(crate) fn publish(&self, effects: counts::Effects) {
        let shared = self.shared();
        if let Some(entry) = &effects.entry {
            shared.announce(entry);
        }
        if effects.work {
            shared.work.send_modify(|n| *n = n.wrapping_add(1));
        }
        if effects.backlog {
            shared.backlog.send_modify(|n| *n = n.wrapping_add(1));
        }
        if effects.requeued {
            shared.lane_hints.clear();
        }
        if effects.entry.is_some() || effects.work {
            let _ = shared.notifier.send(backend::notify::Message::Announce(
                backend::notify::Announcement {
                    entry: effects.entry,
                    work: effects.work,
                    cancelled: Vec::new(),
                },
            ));
        }
    }

    /// Tells the workers running `job_id` (which a committed call just
    /// cancelled) to stop it: in this process at once, elsewhere by NOTIFY.
    pub(crate) fn announce_cancelled(&self, job_id: &str) {
        let shared = self.shared();
        let _ = shared.cancels.send(job_id.to_owned());
        let _ = shared.notifier.send(backend::notify::Message::Announce(
            backend::notify::Announcement {
                cancelled: vec![job_id.to_owned()],
                ..Default::default()
            },
        ));
    }

    /// Sends what the notifier holds, then stops it, the listener and the pool;
    /// see [`duraq_core::Producer::close`].
    pub(crate) async fn close_all(&self) {
        let (done, sent) = tokio::sync::oneshot::channel();
        if self
            .shared()
            .notifier
            .send(backend::notify::Message::Close(done))
            .is_ok()
        {
            let _ = sent.await;
        }
        if let Some(listener) = &self.inner.listener {
            listener.abort();
        }
        self.shared().listening.store(false, Ordering::Relaxed);
        self.shared().pool.pool.close();
    }

    /// The LISTEN/NOTIFY channel this store's schema uses (derived from the schema name).
    pub fn notify_channel(&self) -> &str {
        &self.shared().names.channel
    }

    /// The schema this store's tables live in.
    pub fn schema(&self) -> &str {
        &self.shared().names.schema
    }
}
