//! The reference model's outcome totals and history samples: the same rules the
//! stores keep in their counter rows and `duraq_history` tables
//! (`docs/history.md`), on the in-memory state.

use super::State;
use crate::history::{
    history_baseline, history_cutoff, history_minute, HistorySample, OutcomeTotals, QueueTotals,
};

impl State {
    /// Every queue's totals, by name.
    pub(super) fn outcome_totals(&self) -> Vec<QueueTotals> {
        self.queue_totals
            .iter()
            .map(|(queue, totals)| QueueTotals {
                queue: queue.clone(),
                totals: *totals,
            })
            .collect()
    }

    /// Samples every queue for the minute of `now` unless that minute has
    /// samples, and drops samples older than the retention; the first sample
    /// ever comes after a zero baseline ([`history_baseline`]).
    pub(super) fn record_history(&mut self, now: i64) -> bool {
        let minute = history_minute(now);
        let cutoff = history_cutoff(now);
        let first_ever = self.history.is_empty();
        self.history.retain(|(m, _), _| *m >= cutoff);
        let taken = self
            .history
            .range((minute, String::new())..)
            .next()
            .is_some_and(|((m, _), _)| *m == minute);
        if taken || self.queue_totals.is_empty() {
            return false;
        }
        if first_ever {
            let oldest = self.jobs.values().map(|j| j.created_at_ms).min();
            let base = history_baseline(minute, oldest);
            for queue in self.queue_totals.keys() {
                self.history
                    .insert((base, queue.clone()), OutcomeTotals::default());
            }
        }
        for (queue, totals) in &self.queue_totals {
            self.history.insert((minute, queue.clone()), *totals);
        }
        true
    }

    /// Samples of minutes from `since_ms` on, by minute then queue.
    pub(super) fn history_since(&self, since_ms: i64) -> Vec<HistorySample> {
        self.history
            .range((since_ms, String::new())..)
            .map(|((minute, queue), totals)| HistorySample {
                minute_ms: *minute,
                queue: queue.clone(),
                totals: *totals,
            })
            .collect()
    }
}
