//! Which count changes this process has announced, per counter shard, so that a
//! lost announcement is noticed and made good from the shard rows.
//!
//! Announcements travel after commit ([`crate::backend::notify`]), so one can be lost: the
//! process dies between its commit and its NOTIFY, or the LISTEN connection is
//! down. Every shard's revision grows by exactly one per committed change on it,
//! which makes a loss visible: the mirror remembers, per shard, the revision up to
//! which every change was announced here (`base`), the counts that far, and any
//! later revisions that arrived out of order (announcements of different
//! processes race). A shard row whose revision stays ahead of `base` for a whole
//! check interval has a change nobody announced; the listener then announces the
//! difference between the row and the mirror as one corrective delta, and
//! afterwards ignores late announcements of revisions the correction covered.
//! Deltas subscribers see therefore always add up to the real counts.

use std::collections::BTreeSet;

use duraq_core::driver::STATUS_COUNT;
use duraq_core::inspect::{CountDelta, StatusCounts};

use crate::counts::Entry;

#[derive(Clone, Debug, Default)]
struct ShardView {
    /// Every change up to this shard revision is accounted for.
    base: i64,
    /// Counts including every accounted change (also those above `base`).
    counts: [i64; STATUS_COUNT],
    /// Accounted revisions above `base` (they arrived before a predecessor).
    ahead: BTreeSet<i64>,
    /// A row revision seen ahead of `base` at the previous check.
    suspect: Option<i64>,
}

/// Per-shard bookkeeping of announced changes; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    shards: Vec<ShardView>,
}

impl Mirror {
    /// Starts from the shard rows as read (`(shard, revision, counts)`).
    pub fn reset(&mut self, rows: &[(i32, i64, [i64; STATUS_COUNT])]) {
        self.shards.clear();
        for (shard, revision, counts) in rows {
            let view = self.view(*shard);
            *view = ShardView {
                base: *revision,
                counts: *counts,
                ..ShardView::default()
            };
        }
    }

    fn view(&mut self, shard: i32) -> &mut ShardView {
        let i = usize::try_from(shard).unwrap_or(0);
        if self.shards.len() <= i {
            self.shards.resize_with(i + 1, ShardView::default);
        }
        &mut self.shards[i]
    }

    /// Accounts for `entry`; `false` when it was already accounted (announced
    /// before, or covered by a correction), so it must not be announced again.
    pub fn apply(&mut self, entry: &Entry) -> bool {
        let view = self.view(entry.shard);
        let rev = entry.shard_revision;
        if rev <= view.base || view.ahead.contains(&rev) {
            return false;
        }
        view.ahead.insert(rev);
        while view.ahead.remove(&(view.base + 1)) {
            view.base += 1;
        }
        for (total, d) in view.counts.iter_mut().zip(entry.deltas) {
            *total += d;
        }
        true
    }

    /// Compares with freshly read shard rows. Shards whose row was already ahead
    /// of `base` at the previous check and still is are brought up to the row;
    /// returns the summed correction (revision: the rows' total) if any.
    pub fn check(&mut self, rows: &[(i32, i64, [i64; STATUS_COUNT])]) -> Option<CountDelta> {
        let total: i64 = rows.iter().map(|(_, r, _)| r).sum();
        let mut correction = [0i64; STATUS_COUNT];
        let mut corrected = false;
        for (shard, revision, counts) in rows {
            let view = self.view(*shard);
            if *revision <= view.base {
                view.suspect = None;
                continue;
            }
            match view.suspect {
                Some(seen) if view.base < seen => {
                    for (i, c) in correction.iter_mut().enumerate() {
                        *c += counts[i] - view.counts[i];
                    }
                    view.base = *revision;
                    view.counts = *counts;
                    view.ahead = view.ahead.split_off(&(revision + 1));
                    // Later out-of-order arrivals are counted on top of the row.
                    view.suspect = None;
                    corrected = true;
                }
                _ => view.suspect = Some(*revision),
            }
        }
        corrected.then(|| CountDelta {
            deltas: StatusCounts::from_array(correction),
            revision: total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(shard: i32, shard_revision: i64, queued: i64) -> Entry {
        Entry {
            shard,
            shard_revision,
            revision: 0,
            deltas: [queued, 0, 0, 0, 0, 0, 0],
        }
    }

    #[test]
    fn out_of_order_and_repeated_entries_count_once() {
        let mut m = Mirror::default();
        m.reset(&[(0, 0, [0; STATUS_COUNT]), (1, 0, [0; STATUS_COUNT])]);
        assert!(m.apply(&entry(0, 2, 1)));
        assert!(m.apply(&entry(0, 1, 1)));
        assert!(!m.apply(&entry(0, 2, 1)));
        assert!(!m.apply(&entry(0, 1, 1)));
        // Rows that match the mirror need no correction.
        assert_eq!(
            m.check(&[(0, 2, [2, 0, 0, 0, 0, 0, 0]), (1, 0, [0; STATUS_COUNT])]),
            None
        );
        assert_eq!(
            m.check(&[(0, 2, [2, 0, 0, 0, 0, 0, 0]), (1, 0, [0; STATUS_COUNT])]),
            None
        );
    }

    #[test]
    fn a_lost_entry_is_corrected_after_one_interval_and_not_counted_twice() {
        let mut m = Mirror::default();
        m.reset(&[(0, 0, [0; STATUS_COUNT])]);
        assert!(m.apply(&entry(0, 2, 1))); // revision 1 was lost
        let rows = [(0, 3, [3, 0, 0, 0, 0, 0, 0])]; // revision 3 still in flight
        assert_eq!(m.check(&rows), None, "give in-flight entries a chance");
        let fix = m.check(&rows).expect("corrected");
        assert_eq!((fix.deltas.queued, fix.revision), (2, 3));
        assert!(!m.apply(&entry(0, 3, 1)), "covered by the correction");
        assert!(!m.apply(&entry(0, 1, 1)), "covered by the correction");
        assert!(m.apply(&entry(0, 4, 1)));
        assert_eq!(m.check(&[(0, 4, [4, 0, 0, 0, 0, 0, 0])]), None);
    }

    #[test]
    fn a_shard_that_keeps_moving_but_loses_nothing_is_left_alone() {
        let mut m = Mirror::default();
        m.reset(&[(0, 0, [0; STATUS_COUNT])]);
        assert_eq!(m.check(&[(0, 1, [1, 0, 0, 0, 0, 0, 0])]), None);
        assert!(m.apply(&entry(0, 1, 1)));
        assert_eq!(m.check(&[(0, 2, [2, 0, 0, 0, 0, 0, 0])]), None);
        assert!(m.apply(&entry(0, 2, 1)));
        assert_eq!(m.check(&[(0, 3, [3, 0, 0, 0, 0, 0, 0])]), None);
    }
}
