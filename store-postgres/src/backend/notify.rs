//! The notifier: announces this store's committed changes to other processes.
//!
//! Why not `NOTIFY` inside each mutating transaction: PostgreSQL makes every
//! notifying transaction take one database-wide lock from just before its commit
//! until the commit is done (WAL flush included), so notifying commits of all
//! processes run one at a time — with 8 producers that cost two thirds of the
//! throughput. Instead, each store call hands its [`Announcement`] here after it
//! committed, and one task per store sends them on its own connection: everything
//! that piled up while the previous NOTIFY was in flight goes out in one
//! statement (entries packed into as few payloads as fit PostgreSQL's 8000-byte
//! limit), so the number of notifying transactions is bounded by how fast one
//! round trip is, not by the number of commits.
//!
//! One NOTIFY at most every [`PACE`] (5 ms): an announcement handed over
//! sooner after the previous NOTIFY waits for the rest of those 5 ms and goes
//! out with whatever joins it. A single producer enqueueing one job at a time
//! finishes a call in well under a millisecond, so without the pace every call
//! got a NOTIFY transaction of its own, and that transaction (a round trip, a
//! commit, the wake-ups of every listener) cost about a fifth of the producer's
//! throughput. The price is latency only while announcements stream: a
//! listener hears of a change at most 5 ms later than it would have, and only
//! when another NOTIFY went out less than 5 ms before it; the first change after
//! a quiet spell goes out at once, so an idle worker's wake-up is unchanged.
//! A close request is never held back.
//!
//! The notifying connection keeps the server's settings (`synchronous_commit`
//! included: turning it off for this connection alone was measured and gained
//! nothing here). An announcement lost to a crash or a broken connection is made
//! good by the listeners ([`crate::backend::count_mirror`], and their periodic check bumps the
//! work signal).

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, NoTls};

use crate::counts::Entry;

/// One committed call's announcement.
#[derive(Debug, Default)]
pub(crate) struct Announcement {
    pub entry: Option<Entry>,
    pub work: bool,
    /// Running jobs this call cancelled: their workers are told to stop them.
    pub cancelled: Vec<String>,
}

/// What the notifier task receives.
#[derive(Debug)]
pub(crate) enum Message {
    /// A committed call's effects, to announce.
    Announce(Announcement),
    /// Answered once everything handed over before it was sent (or given up
    /// on); then the task closes its connection and ends.
    Close(oneshot::Sender<()>),
}

/// The least time from one NOTIFY to the next: announcements handed over
/// sooner wait and go out together. See the module docs for the trade-off.
const PACE: Duration = Duration::from_millis(5);

/// Payloads stay under PostgreSQL's 8000-byte NOTIFY limit.
const MAX_PAYLOAD: usize = 7_000;
/// The most announcements folded into one NOTIFY statement.
const MAX_BATCH: usize = 4_096;

/// Starts the notifier task of one store.
pub(crate) fn spawn(
    config: Config,
    channel: String,
    origin: String,
) -> (mpsc::UnboundedSender<Message>, JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(config, channel, origin, rx));
    (tx, task)
}

/// The NOTIFY statement. Sent unnamed with its parameter types
/// (`query_typed`): one round trip like a prepared one, and it also runs
/// behind a transaction-mode pooler that keeps no prepared statements.
const NOTIFY: &str = "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p";

/// A connection and the task driving it.
struct Connection {
    client: Client,
    driver: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

async fn connect(config: &Config) -> Result<Connection, tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(Connection { client, driver })
}

async fn run(
    config: Config,
    channel: String,
    origin: String,
    mut rx: mpsc::UnboundedReceiver<Message>,
) {
    let mut conn: Option<Connection> = None;
    let mut last_sent: Option<Instant> = None;
    while let Some(first) = rx.recv().await {
        if let (Some(at), Message::Announce(_)) = (last_sent, &first) {
            if at + PACE > Instant::now() {
                tokio::time::sleep_until(at + PACE).await;
            }
        }
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut closing = false;
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Announce(a) => batch.push(a),
                Message::Close(done) => {
                    flushes.push(done);
                    closing = true;
                }
            }
            if closing {
                break;
            }
            next = if batch.len() < MAX_BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            send(&config, &channel, &mut conn, &payloads(&origin, &batch)).await;
            last_sent = Some(Instant::now());
        }
        // Messages keep their order, so every announcement handed over before
        // the close request was in this batch or an earlier one.
        if closing {
            drop(conn.take());
        }
        for done in flushes {
            let _ = done.send(());
        }
        if closing {
            return;
        }
    }
}

/// Sends `payloads`, with one retry on a fresh connection; after that the
/// listeners' checks make good what was lost.
async fn send(config: &Config, channel: &str, conn: &mut Option<Connection>, payloads: &[String]) {
    for attempt in 0..2 {
        if conn.is_none() {
            match connect(config).await {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    tracing::warn!("duraq notifier cannot connect: {e}");
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                    continue;
                }
            }
        }
        let c = conn.as_ref().expect("connected");
        let params: [(&(dyn tokio_postgres::types::ToSql + Sync), Type); 2] =
            [(&channel, Type::TEXT), (&payloads, Type::TEXT_ARRAY)];
        match c.client.query_typed(NOTIFY, &params).await {
            Ok(_) => return,
            Err(e) => {
                tracing::warn!("duraq NOTIFY failed: {e}");
                *conn = None;
            }
        }
    }
}

/// Packs the batch into payloads `{"o", "w", "e": [entry, ...]}`, plus
/// `{"o", "w": false, "e": [], "c": [job id, ...]}` for cancelled running jobs.
pub(crate) fn payloads(origin: &str, batch: &[Announcement]) -> Vec<String> {
    let mut out = if batch.iter().any(|a| a.entry.is_some() || a.work) {
        count_payloads(origin, batch)
    } else {
        Vec::new()
    };
    let mut ids: Vec<&str> = Vec::new();
    let mut size = 0;
    let flush = |ids: &mut Vec<&str>, out: &mut Vec<String>| {
        if !ids.is_empty() {
            let p = serde_json::json!({"o": origin, "w": false, "e": [], "c": ids});
            out.push(p.to_string());
            ids.clear();
        }
    };
    for id in batch.iter().flat_map(|a| a.cancelled.iter()) {
        if size + id.len() + 4 > MAX_PAYLOAD - origin.len() - 64 {
            flush(&mut ids, &mut out);
            size = 0;
        }
        size += id.len() + 4;
        ids.push(id);
    }
    flush(&mut ids, &mut out);
    out
}

/// The count-and-work payloads of [`payloads`].
fn count_payloads(origin: &str, batch: &[Announcement]) -> Vec<String> {
    let work = batch.iter().any(|a| a.work);
    let entries: Vec<String> = batch
        .iter()
        .filter_map(|a| a.entry.map(|e| e.to_json().to_string()))
        .collect();
    let head = serde_json::json!({"o": origin, "w": work}).to_string();
    let open = |head: &str| format!("{},\"e\":[", &head[..head.len() - 1]);
    let mut out = Vec::new();
    let mut current = open(&head);
    let mut count = 0;
    for e in entries {
        if count > 0 && current.len() + e.len() + 2 > MAX_PAYLOAD {
            current.push_str("]}");
            out.push(std::mem::replace(&mut current, open(&head)));
            count = 0;
        }
        if count > 0 {
            current.push(',');
        }
        current.push_str(&e);
        count += 1;
    }
    if count > 0 || out.is_empty() {
        current.push_str("]}");
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_fit_and_carry_every_entry() {
        let batch: Vec<Announcement> = (0..500)
            .map(|i| Announcement {
                entry: Some(Entry {
                    shard: i % 16,
                    shard_revision: i64::from(i) + 1_000_000,
                    revision: i64::from(i) + 10_000_000,
                    deltas: [-1, 1, 0, 0, 0, 0, 0],
                }),
                work: i == 7,
                cancelled: Vec::new(),
            })
            .collect();
        let out = payloads("origin", &batch);
        assert!(out.len() > 1);
        let mut seen = 0;
        for p in &out {
            assert!(p.len() <= MAX_PAYLOAD + 2);
            let v: serde_json::Value = serde_json::from_str(p).unwrap();
            assert_eq!(
                (v["o"].as_str(), v["w"].as_bool()),
                (Some("origin"), Some(true))
            );
            seen += v["e"].as_array().unwrap().len();
        }
        assert_eq!(seen, 500);
        let only_work = payloads(
            "o",
            &[Announcement {
                entry: None,
                work: true,
                cancelled: Vec::new(),
            }],
        );
        assert_eq!(only_work, vec![r#"{"o":"o","w":true,"e":[]}"#.to_owned()]);
    }

    #[test]
    fn an_entry_round_trips_and_one_from_before_pending_reads_as_no_pending_change() {
        let entry = Entry {
            shard: 3,
            shard_revision: 7,
            revision: 40,
            deltas: [-1, 0, 0, 0, 1, 0, 2],
        };
        assert_eq!(Entry::from_json(&entry.to_json()), Some(entry));
        let old = serde_json::json!([3, 7, 40, -1, 1, 0, 0, 0, 0]);
        let read = Entry::from_json(&old).unwrap();
        assert_eq!(read.deltas, [-1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(Entry::from_json(&serde_json::json!([3, 7, 40, 1])), None);
    }
}
