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
//! The same task is a history sampler (`docs/history.md`): once per minute it
//! calls [`Operate::record_history`], so the stored history has samples while
//! a dashboard runs even without workers, and when the counts or the minute
//! move it reads the last hour of the stored history, so the event carries the
//! per-minute throughput and the minute, and the page's script redraws the
//! chart from the server. Nothing of the history lives in this process: two
//! dashboards, or one restarted, show the same numbers.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State as AxumState;
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use duraq_core::inspect::{
    history_minute, throughput, with_current, CountSnapshot, HistoryRange, QueueSnapshot,
    StatusCounts, ThroughputPoint,
};
use duraq_core::{Inspect, Operate};
use futures_util::stream;
use serde::Serialize;
use tokio::sync::{watch, Semaphore};

use crate::State;

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
    /// Jobs finished (completed, failed, cancelled or orphaned) per minute of
    /// the last hour, from the stored history, oldest first, the current
    /// minute last.
    pub throughput: Vec<u64>,
    /// The minute the history was read for (ms since the epoch): a new value
    /// tells the page to redraw its chart.
    pub minute_ms: i64,
    /// When the counts were read (ms since the epoch).
    pub at_ms: i64,
}

/// The per-router live state.
pub struct Live {
    store: Arc<dyn Operate>,
    every: Duration,
    tx: watch::Sender<Option<Arc<LiveCounts>>>,
    /// The minute this dashboard last sampled the history in.
    sampled: Mutex<Option<i64>>,
    started: OnceLock<()>,
    /// One permit per open `/events` stream ([`crate::WebOptions::max_live_streams`]).
    streams: Arc<Semaphore>,
}

impl Live {
    pub fn new(store: Arc<dyn Operate>, every: Duration, max_streams: usize) -> Arc<Self> {
        Arc::new(Self {
            streams: Arc::new(Semaphore::new(max_streams)),
            store,
            every,
            tx: watch::channel(None).0,
            sampled: Mutex::new(None),
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

    /// Samples the history once per minute of `now_ms` (the store keeps the
    /// first sample of a minute, whoever takes it).
    pub async fn sample(&self, now_ms: i64) {
        let minute = history_minute(now_ms);
        {
            let mut sampled = self.sampled.lock().unwrap_or_else(|e| e.into_inner());
            if *sampled == Some(minute) {
                return;
            }
            *sampled = Some(minute);
        }
        if let Err(e) = self.store.record_history().await {
            tracing::warn!("dashboard: sampling the history failed: {e}");
        }
    }
}

/// The throughput points of `range` as of `now_ms`, from the stored history
/// and the live totals (the newest point runs to now).
pub async fn history_points(
    store: &dyn Inspect,
    range: HistoryRange,
    now_ms: i64,
) -> duraq_core::Result<Vec<ThroughputPoint>> {
    let samples = store.history(range.read_from(now_ms)).await?;
    let current = store.outcome_totals().await?;
    Ok(throughput(
        &with_current(samples, &current, now_ms),
        None,
        range,
        now_ms,
    ))
}

fn finished_per_point(points: &[ThroughputPoint]) -> Vec<u64> {
    points
        .iter()
        .map(|p| {
            p.counts.map_or(0, |c| {
                u64::try_from(c.completed + c.failed + c.cancelled + c.orphaned).unwrap_or(0)
            })
        })
        .collect()
}

fn live_counts(queues: &QueueSnapshot, throughput: Vec<u64>, at_ms: i64) -> LiveCounts {
    let snap = &queues.count_snapshot();
    LiveCounts {
        revision: snap.revision,
        counts: counts_json(snap),
        queues: queues
            .queues
            .iter()
            .map(|q| (q.queue.clone(), status_json(&q.counts).into()))
            .collect(),
        throughput,
        minute_ms: history_minute(at_ms),
        at_ms,
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

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn poll(weak: Weak<Live>, store: Arc<dyn Operate>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(live) = weak.upgrade() else { return };
        let at = now_ms();
        live.sample(at).await;
        // One O(number of queues) read for every browser: the global and the
        // per-queue counts share its revision.
        let snap = match store.queue_snapshot().await {
            Ok(snap) => snap,
            Err(e) => {
                tracing::warn!("dashboard: reading the counts failed: {e}");
                continue;
            }
        };
        let minute = history_minute(at);
        let stale = live
            .tx
            .borrow()
            .as_deref()
            .is_none_or(|c| c.revision != snap.revision || c.minute_ms != minute);
        if !stale {
            continue;
        }
        // The history is read only when the counts or the minute moved.
        let points = match history_points(store.as_ref(), HistoryRange::Hour, at).await {
            Ok(points) => points,
            Err(e) => {
                tracing::warn!("dashboard: reading the history failed: {e}");
                continue;
            }
        };
        let next = live_counts(&snap, finished_per_point(&points), at);
        live.tx.send_replace(Some(Arc::new(next)));
    }
}

/// `GET /events`: `text/event-stream`, one `counts` event (JSON [`LiveCounts`])
/// now and one per change after; 503 when the router already serves its cap of
/// streams (each holds a connection and some memory for as long as a page is
/// open), freed when a stream's client leaves.
pub async fn events(AxumState(state): AxumState<State>) -> Response {
    let Ok(permit) = state.live.streams.clone().try_acquire_owned() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "30")],
            "too many live-update streams are open\n",
        )
            .into_response();
    };
    state.live.ensure_started();
    let mut rx = state.live.tx.subscribe();
    rx.mark_changed();
    let stream = stream::unfold((rx, permit), |(mut rx, permit)| async move {
        loop {
            rx.changed().await.ok()?;
            let current = rx.borrow_and_update().clone();
            if let Some(counts) = current {
                let data = serde_json::to_string(&*counts).unwrap_or_default();
                let event = Event::default().event("counts").data(data);
                return Some((Ok::<_, Infallible>(event), (rx, permit)));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
