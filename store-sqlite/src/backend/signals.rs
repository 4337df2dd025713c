//! In-process notification channels: count deltas, the work signal and the
//! release backlog signal, sent
//! by the writer after commit and by the poller for other processes' work,
//! received by the store's subscribers. Kept apart so that the writer and the
//! poller both depend on it and not on each other.

use duraq_core::inspect::CountDelta;
use tokio::sync::{broadcast, watch};

/// In-process notification channels, shared by the writer, the poller and the store.
pub(crate) struct Signals {
    pub(crate) counts: broadcast::Sender<CountDelta>,
    pub(crate) work: watch::Sender<u64>,
    /// Moves when a commit left a release backlog entry.
    pub(crate) backlog: watch::Sender<u64>,
}

impl Signals {
    pub(crate) fn new() -> Self {
        Self {
            counts: broadcast::channel(1024).0,
            work: watch::channel(0).0,
            backlog: watch::channel(0).0,
        }
    }

    /// Moves the work counter.
    pub(crate) fn bump_work(&self) {
        self.work.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Publishes committed effects.
    pub(crate) fn publish(&self, deltas: Vec<CountDelta>, work: bool, backlog: bool) {
        for delta in deltas {
            let _ = self.counts.send(delta);
        }
        if work {
            self.bump_work();
        }
        if backlog {
            self.backlog.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}
