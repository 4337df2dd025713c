//! The one LISTEN connection per store: other processes' committed changes.
//!
//! Every store announces its committed changes on the schema's channel after
//! commit ([`crate::backend::notify`]): entries (shard, shard revision, delta, revision)
//! and whether work may be available. This task turns other stores' entries into
//! [`duraq_core::inspect::CountDelta`]s (through the [`crate::backend::count_mirror`], so none is counted
//! twice), work-signal bumps and cancellations of running jobs (for the
//! workers running them); its own store's were published in-process right
//! after commit. Every [`CHECK_INTERVAL`] it reads the counter rows, so that an
//! announcement lost to a crash between commit and NOTIFY is made good (one
//! corrective delta, and a work-signal bump). If the connection drops, the task
//! keeps checking every `fallback_poll_ms` (bumping the work signal when the
//! revision moved) while it reconnects.
//!
//! Behind a transaction-mode pooler a LISTEN is accepted but hears nothing: the
//! pooler hands the session's server connection to others between statements.
//! So unless the LISTEN goes to a direct URL ([`crate::PostgresOptions::listen_url`]),
//! the first connection is probed: a NOTIFY sent through the pool must come back
//! within [`PROBE_TIMEOUT`]. When it does not, the task says so once and polls
//! every `fallback_poll_ms` for good.

use std::future::poll_fn;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duraq_core::Result;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Notification};

use crate::backend::db::{pooled, quote_identifier, Conn, Db};
use crate::counts::{shard_rows, Entry};
use crate::error::map_pg_error_at;
use crate::Shared;

/// How often a healthy listener compares the counter rows with what it heard.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long the probe NOTIFY may take to come back on a new LISTEN connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// A live LISTEN connection and the notifications it receives.
struct Listening {
    _client: Client,
    rx: mpsc::UnboundedReceiver<Notification>,
    driver: JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Listening {
    async fn open(
        config: &Config,
        channel: &str,
    ) -> std::result::Result<Self, tokio_postgres::Error> {
        let (client, mut connection) = config.connect(NoTls).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let driver = tokio::spawn(async move {
            while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        if tx.send(n).is_err() {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN {}", quote_identifier(channel)))
            .await?;
        Ok(Self {
            _client: client,
            rx,
            driver,
        })
    }
}

/// Listens (before returning, so nothing committed afterwards is missed) and
/// spawns the task that keeps listening.
pub(crate) async fn start(
    config: Config,
    direct: bool,
    shared: Arc<Shared>,
    poll_ms: u64,
) -> Result<JoinHandle<()>> {
    let mut config = config;
    // Notice a silently dead LISTEN connection within about a minute.
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .keepalives_interval(Duration::from_secs(10));
    config.keepalives_retries(3);
    let mut first = Listening::open(&config, &shared.names.channel)
        .await
        .map_err(|e| map_pg_error_at(e, &shared.pool.target))?;
    if !direct && !hears(&mut first, &shared).await? {
        tracing::warn!(
            schema = %shared.names.schema,
            "duraq: a LISTEN through {} hears nothing (a transaction-mode pooler such as \
             PgBouncer?); polling every {poll_ms} ms instead. Set DURAQ_LISTEN_URL \
             (PostgresOptions::listen_url) to a direct server address for immediate wake-ups",
            shared.pool.target
        );
        let _ = first._client.batch_execute("UNLISTEN *").await;
        drop(first);
        let rows = read_rows(&shared).await?;
        lock_mirror(&shared).reset(&rows);
        return Ok(tokio::spawn(poll_forever(shared, poll_ms)));
    }
    shared.listening.store(true, Ordering::Relaxed);
    // Everything committed before this read is in the mirror's starting point;
    // everything after it will be heard.
    let rows = read_rows(&shared).await?;
    lock_mirror(&shared).reset(&rows);
    Ok(tokio::spawn(run(config, shared, poll_ms, first)))
}

fn lock_mirror(shared: &Shared) -> std::sync::MutexGuard<'_, crate::backend::count_mirror::Mirror> {
    shared
        .mirror
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn read_rows(
    shared: &Shared,
) -> Result<Vec<(i32, i64, [i64; duraq_core::driver::STATUS_COUNT])>> {
    let client = pooled(&shared.pool).await?;
    let db = Db {
        conn: Conn::Client(&client),
        names: &shared.names,
    };
    shard_rows(&db).await
}

/// Whether `listening` hears a NOTIFY sent through the pool (see the module
/// docs); what else it hears meanwhile is handled as usual.
async fn hears(listening: &mut Listening, shared: &Shared) -> Result<bool> {
    let probe = serde_json::json!({ "probe": duraq_core::driver::new_job_id() }).to_string();
    {
        let client = pooled(&shared.pool).await?;
        let db = Db {
            conn: Conn::Client(&client),
            names: &shared.names,
        };
        db.query("SELECT pg_notify($1, $2)", &[&shared.names.channel, &probe])
            .await?;
    }
    let deadline = tokio::time::Instant::now() + PROBE_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, listening.rx.recv()).await {
            Ok(Some(n)) if n.payload() == probe => return Ok(true),
            Ok(Some(n)) => handle(shared, n.payload()),
            Ok(None) | Err(_) => return Ok(false),
        }
    }
}

/// Without a LISTEN: reads the counter rows every `poll_ms`; every change
/// another process made arrives as a correction and wakes the workers.
async fn poll_forever(shared: Arc<Shared>, poll_ms: u64) {
    let mut tick = tokio::time::interval(Duration::from_millis(poll_ms.max(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = check_quietly(&shared, true).await {
            tracing::debug!("duraq count check failed: {e}");
        }
    }
}

/// Compares the counter rows with the mirror, announcing a correction if one
/// is due; returns the revision read.
async fn check(shared: &Shared) -> Result<i64> {
    check_quietly(shared, false).await
}

/// [`check`], logging a correction only when it is not expected (`polling`
/// expects one for every change another process made).
async fn check_quietly(shared: &Shared, polling: bool) -> Result<i64> {
    let rows = read_rows(shared).await?;
    let correction = lock_mirror(shared).check(&rows);
    if let Some(delta) = correction {
        if !polling {
            tracing::info!(
                revision = delta.revision,
                "duraq: counts corrected after a lost announcement"
            );
        }
        let _ = shared.deltas.send(delta);
        bump_work(shared);
    }
    Ok(rows.iter().map(|(_, r, _)| r).sum())
}

async fn run(config: Config, shared: Arc<Shared>, poll_ms: u64, mut current: Listening) {
    let mut tick = tokio::time::interval(CHECK_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        loop {
            tokio::select! {
                notification = current.rx.recv() => match notification {
                    Some(n) => handle(&shared, n.payload()),
                    None => break,
                },
                _ = tick.tick() => {
                    if let Err(e) = check(&shared).await {
                        tracing::debug!("duraq count check failed: {e}");
                    }
                }
            }
        }
        shared.listening.store(false, Ordering::Relaxed);
        drop(current);
        tracing::warn!(schema = %shared.names.schema, "duraq LISTEN connection lost; polling until it is back");
        current = reconnect(&config, &shared, poll_ms).await;
        shared.listening.store(true, Ordering::Relaxed);
        shared.reconnects.fetch_add(1, Ordering::Relaxed);
        // Anything may have happened while we were deaf.
        bump_work(&shared);
    }
}

async fn reconnect(config: &Config, shared: &Shared, poll_ms: u64) -> Listening {
    let mut tick = tokio::time::interval(Duration::from_millis(poll_ms.max(10)));
    let mut last_revision = None;
    loop {
        tick.tick().await;
        if let Ok(listening) = Listening::open(config, &shared.names.channel).await {
            return listening;
        }
        if let Ok(revision) = check(shared).await {
            if last_revision.is_some_and(|r| r != revision) {
                bump_work(shared);
            }
            last_revision = Some(revision);
        }
    }
}

fn bump_work(shared: &Shared) {
    shared.work.send_modify(|n| *n = n.wrapping_add(1));
}

/// Applies one NOTIFY payload (see [`crate::backend::notify::payloads`]).
fn handle(shared: &Shared, payload: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(payload) else {
        return;
    };
    if value["o"].as_str() == Some(shared.names.origin.as_str()) {
        return;
    }
    if let Some(entries) = value["e"].as_array() {
        for entry in entries.iter().filter_map(Entry::from_json) {
            shared.announce(&entry);
        }
    }
    if value["w"].as_bool() == Some(true) {
        bump_work(shared);
    }
    if let Some(ids) = value["c"].as_array() {
        for id in ids.iter().filter_map(|v| v.as_str()) {
            let _ = shared.cancels.send(id.to_owned());
        }
    }
}
