//! The one LISTEN connection per store: other processes' committed changes.
//!
//! Every mutating transaction NOTIFYs the schema's channel with its delta, the
//! revision and whether work may be available; PostgreSQL delivers it on commit,
//! in commit order. This task turns those into [`duraq_core::CountDelta`]s and
//! work-signal bumps. Its own store's notifications are skipped (they were
//! published in-process right after commit). If the connection drops, the task
//! polls the revision every `fallback_poll_ms` (bumping the work signal when it
//! moved) while it reconnects; deltas committed meanwhile by other processes are
//! not replayed, so a subscriber should re-snapshot when revisions skip.

use std::future::poll_fn;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duraq_core::{CountDelta, Result, StatusCounts};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Notification};

use crate::db::{pooled, quote_identifier, Conn, Db};
use crate::error::map_pg_error;
use crate::Shared;

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
    let first = Listening::open(&config, &shared.names.channel)
        .await
        .map_err(map_pg_error)?;
    shared.listening.store(true, Ordering::Relaxed);
    Ok(tokio::spawn(run(config, shared, poll_ms, first)))
}

async fn run(config: Config, shared: Arc<Shared>, poll_ms: u64, mut current: Listening) {
    loop {
        while let Some(notification) = current.rx.recv().await {
            handle(&shared, notification.payload());
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
        if let Ok(revision) = poll_revision(shared).await {
            if last_revision.is_some_and(|r| r != revision) {
                bump_work(shared);
            }
            last_revision = Some(revision);
        }
    }
}

async fn poll_revision(shared: &Shared) -> Result<i64> {
    let client = pooled(&shared.pool).await?;
    let db = Db {
        conn: Conn::Client(&client),
        names: &shared.names,
    };
    Ok(db
        .query_one(
            "SELECT COALESCE(sum(revision), 0)::int8 FROM {s}.duraq_count_shards",
            &[],
        )
        .await?
        .get(0))
}

fn bump_work(shared: &Shared) {
    shared.work.send_modify(|n| *n = n.wrapping_add(1));
}

/// Applies one NOTIFY payload (see [`crate::counts::payload`]).
fn handle(shared: &Shared, payload: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(payload) else {
        return;
    };
    if value["o"].as_str() == Some(shared.names.origin.as_str()) {
        return;
    }
    if let (Some(revision), Some(deltas)) = (value["r"].as_i64(), value["d"].as_array()) {
        let numbers: Vec<i64> = deltas
            .iter()
            .filter_map(serde_json::Value::as_i64)
            .collect();
        if let Ok(per_status) = <[i64; 6]>::try_from(numbers) {
            let _ = shared.deltas.send(CountDelta {
                deltas: StatusCounts::from_array(per_status),
                revision,
            });
        }
    }
    if value["w"].as_bool() == Some(true) {
        bump_work(shared);
    }
}
