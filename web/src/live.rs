//! Live counts: one polling task per router, fanned out to every browser.
//!
//! Why polling: a store publishes count deltas only to its own process (SQLite)
//! or through LISTEN (PostgreSQL), and `duraq web` usually runs beside the
//! workers, not inside them. `queue_snapshot` reads counter rows (its cost grows
//! with the number of queues, never with jobs), so one read
//! about once a second is cheap whatever the table size. Why one task: the
//! newest snapshot goes into a `watch` channel that every `/events` stream
//! reads, so a hundred open tabs cost the store exactly what one does, and a
//! slow browser simply skips to the newest value.
//!
//! The same task keeps the throughput of the last hour: jobs that reached a
//! terminal status per minute, from the growth of the terminal counts between
//! two polls (a prune in between shrinks them; such a poll counts 0, never less).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State as AxumState;
use axum::response::sse::{Event, KeepAlive, Sse};
use duraq_core::{CountSnapshot, Inspect, QueueSnapshot, StatusCounts};
use futures_util::stream::{self, Stream};
use serde::Serialize;
use tokio::sync::watch;

use crate::State;

/// Minutes of throughput kept (the chart's width).
pub const MINUTES: usize = 60;

/// What every browser is sent: the counts, the revision, and the chart.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveCounts {
    /// Count revision of `counts`.
    pub revision: i64,
    /// Per status, plus `total`.
    pub counts: serde_json::Map<String, serde_json::Value>,
    /// Per queue, its counts per status (the `data-queue-count` keys), from the
    /// same snapshot and revision as `counts`.
    pub queues: serde_json::Map<String, serde_json::Value>,
    /// Jobs finished per minute, oldest first, the current minute last.
    pub throughput: Vec<u64>,
    /// When the counts were read (ms since the epoch).
    pub at_ms: i64,
}

/// The per-router live state.
pub struct Live {
    store: Arc<dyn Inspect>,
    every: Duration,
    tx: watch::Sender<Option<Arc<LiveCounts>>>,
    history: Mutex<History>,
    started: OnceLock<()>,
}

#[derive(Default)]
struct History {
    /// (minute since the epoch, jobs finished in it), oldest first.
    minutes: VecDeque<(i64, u64)>,
    last_finished: Option<i64>,
}

impl Live {
    pub fn new(store: Arc<dyn Inspect>, every: Duration) -> Arc<Self> {
        Arc::new(Self {
            store,
            every,
            tx: watch::channel(None).0,
            history: Mutex::new(History::default()),
            started: OnceLock::new(),
        })
    }

    /// Starts the polling task once (needs a Tokio runtime); it stops when the
    /// router (and with it this `Live`) is dropped.
    pub fn ensure_started(self: &Arc<Self>) {
        self.started.get_or_init(|| {
            let weak = Arc::downgrade(self);
            let store = self.store.clone();
            let every = self.every;
            tokio::spawn(poll(weak, store, every));
        });
    }

    /// The chart as of now (the counts of the page come from a fresh snapshot).
    pub fn throughput(&self, now_ms: i64) -> Vec<u64> {
        let history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        series(&history.minutes, now_ms)
    }

    fn record(&self, queues: &QueueSnapshot, at_ms: i64) -> LiveCounts {
        let snap = &queues.count_snapshot();
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        let c = snap.counts;
        let finished = c.completed + c.failed + c.cancelled + c.orphaned;
        let grew = history
            .last_finished
            .map_or(0, |last| u64::try_from(finished - last).unwrap_or(0));
        history.last_finished = Some(finished);
        let minute = at_ms.div_euclid(60_000);
        match history.minutes.back_mut() {
            Some((m, n)) if *m == minute => *n += grew,
            _ => history.minutes.push_back((minute, grew)),
        }
        while history.minutes.len() > MINUTES {
            history.minutes.pop_front();
        }
        LiveCounts {
            revision: snap.revision,
            counts: counts_json(snap),
            queues: queues
                .queues
                .iter()
                .map(|q| (q.queue.clone(), status_json(&q.counts).into()))
                .collect(),
            throughput: series(&history.minutes, at_ms),
            at_ms,
        }
    }
}

/// The counts as `{"queued":…, …, "total":…}` (the `data-count` keys).
pub fn counts_json(snap: &CountSnapshot) -> serde_json::Map<String, serde_json::Value> {
    let mut map = status_json(&snap.counts);
    map.insert("total".into(), snap.total.into());
    map
}

fn status_json(counts: &StatusCounts) -> serde_json::Map<String, serde_json::Value> {
    duraq_core::JobStatus::ALL
        .iter()
        .map(|status| (status.as_str().to_string(), counts.get(*status).into()))
        .collect()
}

/// Exactly [`MINUTES`] values ending at the minute of `now_ms`.
fn series(minutes: &VecDeque<(i64, u64)>, now_ms: i64) -> Vec<u64> {
    let current = now_ms.div_euclid(60_000);
    (0..MINUTES as i64)
        .rev()
        .map(|back| {
            let m = current - back;
            minutes.iter().find(|(x, _)| *x == m).map_or(0, |(_, n)| *n)
        })
        .collect()
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn poll(weak: Weak<Live>, store: Arc<dyn Inspect>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        // One O(number of queues) read for every browser: the global and the
        // per-queue counts share its revision.
        let result = store.queue_snapshot().await;
        let Some(live) = weak.upgrade() else { return };
        match result {
            Ok(snap) => {
                let next = live.record(&snap, now_ms());
                // One event per change: a new revision or a new minute on the chart.
                live.tx.send_if_modified(|current| {
                    let changed = current.as_deref().is_none_or(|c| {
                        c.revision != next.revision || c.throughput != next.throughput
                    });
                    if changed {
                        *current = Some(Arc::new(next));
                    }
                    changed
                });
            }
            Err(e) => tracing::warn!("dashboard: reading the counts failed: {e}"),
        }
    }
}

/// `GET /events`: `text/event-stream`, one `counts` event (JSON [`LiveCounts`])
/// now and one per change after.
pub async fn events(
    AxumState(state): AxumState<State>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    state.live.ensure_started();
    let mut rx = state.live.tx.subscribe();
    rx.mark_changed();
    let stream = stream::unfold(rx, |mut rx| async move {
        loop {
            rx.changed().await.ok()?;
            let current = rx.borrow_and_update().clone();
            if let Some(counts) = current {
                let data = serde_json::to_string(&*counts).unwrap_or_default();
                return Some((Ok(Event::default().event("counts").data(data)), rx));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
