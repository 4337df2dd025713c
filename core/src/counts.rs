//! Count snapshots and deltas.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::history::OutcomeTotals;
use crate::job::{JobStatus, STATUS_COUNT};
use crate::requests::Outcome;

/// Jobs per status; `all` is their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct StatusCounts {
    /// Jobs waiting to be claimed (due or not).
    pub queued: i64,
    /// Jobs claimed by a worker and not yet reported.
    pub handed_off: i64,
    /// Jobs that succeeded.
    pub completed: i64,
    /// Jobs whose last attempt failed with no retries left (or discarded).
    pub failed: i64,
    /// Jobs cancelled by an operator or a schedule-key replace.
    pub cancelled: i64,
    /// Jobs whose worker died with no retries left.
    pub orphaned: i64,
    /// Jobs waiting for their dependencies (`docs/workflows.md`).
    #[serde(default)]
    pub pending: i64,
    /// The sum of the seven statuses.
    pub all: i64,
}

impl StatusCounts {
    /// Builds counts from one number per status in [`JobStatus::ALL`] order.
    pub fn from_array(per_status: [i64; STATUS_COUNT]) -> Self {
        let [queued, handed_off, completed, failed, cancelled, orphaned, pending] = per_status;
        Self {
            queued,
            handed_off,
            completed,
            failed,
            cancelled,
            orphaned,
            pending,
            all: per_status.iter().sum(),
        }
    }

    /// The count of one status.
    pub fn get(&self, status: JobStatus) -> i64 {
        self.as_array()[status.index()]
    }

    /// One number per status in [`JobStatus::ALL`] order.
    pub fn as_array(&self) -> [i64; STATUS_COUNT] {
        [
            self.queued,
            self.handed_off,
            self.completed,
            self.failed,
            self.cancelled,
            self.orphaned,
            self.pending,
        ]
    }

    /// Whether every status count is zero.
    pub fn is_zero(&self) -> bool {
        self.as_array().iter().all(|n| *n == 0)
    }
}

/// An exact, consistent snapshot: `counts` as of `revision`; `total` = `counts.all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountSnapshot {
    /// The count of each status.
    pub counts: StatusCounts,
    /// The store's count revision these counts are exact for.
    pub revision: i64,
    /// Every job, whatever its status (`counts.all`).
    pub total: i64,
}

impl CountSnapshot {
    /// A snapshot from per-status counts.
    pub fn new(per_status: [i64; STATUS_COUNT], revision: i64) -> Self {
        let counts = StatusCounts::from_array(per_status);
        Self {
            counts,
            revision,
            total: counts.all,
        }
    }
}

/// The net count change of one committed mutation, and the revision it produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountDelta {
    /// The signed change of each status (and of `all`).
    pub deltas: StatusCounts,
    /// The revision the mutation produced (the previous one plus 1).
    pub revision: i64,
}

/// Accumulates the per-status changes of one logical mutation, per queue.
///
/// Every row a mutation adds, deletes or moves belongs to one queue (a job never
/// changes queue), so the change is kept per queue and the global change is their
/// sum. This is the one place the rule lives: the stores only write what
/// [`CountChange::per_status`] and [`CountChange::per_queue`] say.
///
/// ```
/// use duraq_core::JobStatus;
/// use duraq_core::driver::CountChange;
/// let mut change = CountChange::default();
/// change.moved("mail", JobStatus::Queued, JobStatus::HandedOff);
/// change.added("mail", JobStatus::Queued);
/// assert_eq!(change.per_status(), [0, 1, 0, 0, 0, 0, 0]);
/// assert_eq!(change.per_queue().collect::<Vec<_>>(), [("mail", [0, 1, 0, 0, 0, 0, 0])]);
/// ```
///
/// It also accumulates each queue's monotonic [`OutcomeTotals`] (what entered
/// each outcome; the table of which transition counts as what is on that type):
/// [`CountChange::added`] counts an enqueue, [`CountChange::moved`] into a
/// terminal status counts that outcome, and the one move the statuses cannot
/// tell apart (an attempt back to `queued` because it failed or its worker was
/// lost, versus a reschedule or a shutdown return) is counted by
/// [`CountChange::reported`] and [`CountChange::recovered`]. Deleting a row and
/// an operator's retry count nothing.
///
/// ```
/// use duraq_core::{JobStatus, Outcome};
/// use duraq_core::driver::CountChange;
/// let mut change = CountChange::default();
/// change.added("mail", JobStatus::Queued);
/// change.reported("mail", &Outcome::failed("smtp down"), JobStatus::Queued);
/// let (_, totals) = change.totals().next().unwrap();
/// assert_eq!((totals.enqueued, totals.retried), (1, 1));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountChange {
    per_status: [i64; STATUS_COUNT],
    /// A row moved into `queued` from another status (see
    /// [`CountChange::requeued`]).
    requeued: bool,
    /// Per queue: its net count change and its outcome totals, in one entry
    /// (one key allocation per queue and mutation, as before the totals).
    queues: BTreeMap<String, ([i64; STATUS_COUNT], OutcomeTotals)>,
}

impl CountChange {
    fn entry(&mut self, queue: &str) -> &mut ([i64; STATUS_COUNT], OutcomeTotals) {
        if !self.queues.contains_key(queue) {
            self.queues.insert(queue.to_owned(), Default::default());
        }
        self.queues.get_mut(queue).expect("inserted above")
    }
    fn bump(&mut self, queue: &str, status: JobStatus, by: i64) {
        self.per_status[status.index()] += by;
        self.entry(queue).0[status.index()] += by;
    }
    fn total(&mut self, queue: &str) -> &mut OutcomeTotals {
        &mut self.entry(queue).1
    }
    /// A new row of `queue` in `status` (an enqueue).
    pub fn added(&mut self, queue: &str, status: JobStatus) {
        self.bump(queue, status, 1);
        self.total(queue).enqueued += 1;
    }
    /// A deleted row of `queue` that was in `status`.
    pub fn removed(&mut self, queue: &str, status: JobStatus) {
        self.bump(queue, status, -1);
    }
    /// Whether a row moved into `queued` from another status in this
    /// mutation (a retry, a reschedule, a wait that ended, an operator
    /// retry): unlike a fresh job, such a row may stand before jobs of its
    /// fairness key that were due as early, which a store that remembers
    /// where its claims left each key must forget.
    pub fn requeued(&self) -> bool {
        self.requeued
    }
    /// A row of `queue` moved between statuses (nothing when `from == to`).
    /// A move into `completed`, `failed`, `cancelled` or `orphaned` counts that
    /// outcome in the queue's totals.
    pub fn moved(&mut self, queue: &str, from: JobStatus, to: JobStatus) {
        if from == to {
            return;
        }
        self.requeued |= to == JobStatus::Queued;
        self.bump(queue, from, -1);
        self.bump(queue, to, 1);
        let total = self.total(queue);
        match to {
            JobStatus::Completed => total.completed += 1,
            JobStatus::Failed => total.failed += 1,
            JobStatus::Cancelled => total.cancelled += 1,
            JobStatus::Orphaned => total.orphaned += 1,
            JobStatus::Queued | JobStatus::HandedOff | JobStatus::Pending => {}
        }
    }
    /// A reported attempt of a `handed_off` row of `queue` that left it in `to`
    /// (after [`crate::transitions::apply_outcome`]): [`CountChange::moved`],
    /// and a retry when a failed attempt went back to `queued`.
    pub fn reported(&mut self, queue: &str, outcome: &Outcome, to: JobStatus) {
        self.moved(queue, JobStatus::HandedOff, to);
        if Self::is_retry(Some(outcome), to) {
            self.retried(queue);
        }
    }
    /// A `handed_off` row of `queue` whose worker was lost, left in `to` (after
    /// [`crate::transitions::recover_lost`]): back in `queued` is a retry.
    pub fn recovered(&mut self, queue: &str, to: JobStatus) {
        self.moved(queue, JobStatus::HandedOff, to);
        if Self::is_retry(None, to) {
            self.retried(queue);
        }
    }
    /// The retry rule: a `handed_off` row that went to `to` after `outcome`
    /// (`None`: its worker was lost) is a retry when it is back in `queued`
    /// because the attempt failed or was lost; a reschedule or a shutdown
    /// return is not.
    ///
    /// ```
    /// use duraq_core::{JobStatus, Outcome};
    /// use duraq_core::driver::CountChange;
    /// assert!(CountChange::is_retry(None, JobStatus::Queued));
    /// assert!(!CountChange::is_retry(Some(&Outcome::ReturnToQueue), JobStatus::Queued));
    /// assert!(!CountChange::is_retry(Some(&Outcome::failed("x")), JobStatus::Failed));
    /// ```
    pub fn is_retry(outcome: Option<&Outcome>, to: JobStatus) -> bool {
        to == JobStatus::Queued && outcome.is_none_or(|o| matches!(o, Outcome::Failed { .. }))
    }
    /// Counts one retry of `queue` (for a store that counts the move itself,
    /// when [`CountChange::is_retry`] says so).
    pub fn retried(&mut self, queue: &str) {
        self.total(queue).retried += 1;
    }
    /// Each queue's outcome totals added by this mutation (only queues with a
    /// non-zero one), by queue name.
    pub fn totals(&self) -> impl Iterator<Item = (&str, OutcomeTotals)> + '_ {
        self.queues
            .iter()
            .filter(|(_, (_, t))| !t.is_zero())
            .map(|(q, (_, t))| (q.as_str(), *t))
    }
    /// Each queue whose counts or totals changed, with both: what a store adds to
    /// its per-queue counter row (one row write per queue, totals in the same
    /// statement).
    pub fn per_queue_with_totals(
        &self,
    ) -> impl Iterator<Item = (&str, [i64; STATUS_COUNT], OutcomeTotals)> + '_ {
        self.queues
            .iter()
            .filter(|(_, (d, t))| d.iter().any(|n| *n != 0) || !t.is_zero())
            .map(|(q, (d, t))| (q.as_str(), *d, *t))
    }
    /// Net change per status, over every queue.
    pub fn per_status(&self) -> [i64; STATUS_COUNT] {
        self.per_status
    }
    /// Net change per status of each queue whose counts changed, by queue name.
    pub fn per_queue(&self) -> impl Iterator<Item = (&str, [i64; STATUS_COUNT])> + '_ {
        self.queues
            .iter()
            .filter(|(_, (d, _))| d.iter().any(|n| *n != 0))
            .map(|(q, (d, _))| (q.as_str(), *d))
    }
    /// Whether the mutation left every count as it was, global and per queue
    /// (then the revision stays). A report that requeues a job of one queue and a
    /// claim of another queue's job in the same mutation leave the global counts
    /// as they were but not the per-queue ones: that is a change.
    ///
    /// A change of the outcome totals alone is a change too (a failed attempt of
    /// queue A requeued and another job of A claimed in one `report_and_claim`
    /// leave A's counts as they were, but count a retry).
    pub fn is_zero(&self) -> bool {
        self.queues
            .values()
            .all(|(d, t)| d.iter().all(|n| *n == 0) && t.is_zero())
    }
    /// The delta to publish for `revision`.
    pub fn to_delta(&self, revision: i64) -> CountDelta {
        CountDelta {
            deltas: StatusCounts::from_array(self.per_status),
            revision,
        }
    }
}

/// One queue's counts in a [`QueueSnapshot`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounts {
    /// The queue's name.
    pub queue: String,
    /// Its jobs per status (`all`: every job of the queue).
    pub counts: StatusCounts,
    /// The age of the queue's oldest due `queued` job at the snapshot's `at_ms`
    /// (`at_ms - scheduledAtMs`, at least 0); `None` when no queued job of the
    /// queue is due (none queued, or all scheduled for later).
    pub latency_ms: Option<i64>,
    /// Whether the queue is paused: workers claim none of its jobs
    /// until it is resumed; jobs already running finish and report as usual.
    #[serde(default)]
    pub paused: bool,
}

impl QueueCounts {
    /// A queue's entry from its per-status counts and the earliest
    /// `scheduledAtMs` among its queued jobs (`oldest_queued_ms`, due or not), as
    /// of `now`. `None` for a queue whose counts are all zero: snapshots leave
    /// such queues out, whether or not a store keeps their (zero) counter rows.
    pub fn new(
        queue: String,
        per_status: [i64; STATUS_COUNT],
        oldest_queued_ms: Option<i64>,
        now: i64,
    ) -> Option<Self> {
        let counts = StatusCounts::from_array(per_status);
        if counts.is_zero() {
            return None;
        }
        let latency_ms = oldest_queued_ms
            .filter(|at| counts.queued > 0 && *at <= now)
            .map(|at| now - at);
        Some(Self {
            queue,
            counts,
            latency_ms,
            paused: false,
        })
    }
}

/// Counts per status and per queue, exact and consistent with one `revision`
/// (the same revision [`CountSnapshot`] reports), plus each queue's latency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSnapshot {
    /// The count of each status over every queue (as in [`CountSnapshot`]).
    pub counts: StatusCounts,
    /// The store's count revision these counts are exact for.
    pub revision: i64,
    /// Every job, whatever its status (`counts.all`).
    pub total: i64,
    /// Each queue that holds at least one job or is paused, by name (byte
    /// order); a paused queue without jobs has all-zero counts, so that an
    /// operator can still see and resume it.
    pub queues: Vec<QueueCounts>,
    /// The clock reading the latencies were measured at.
    pub at_ms: i64,
}

impl QueueSnapshot {
    /// A snapshot from the global per-status counts, the revision, the clock
    /// reading and the queues' entries (sorted here).
    pub fn new(
        per_status: [i64; STATUS_COUNT],
        revision: i64,
        at_ms: i64,
        mut queues: Vec<QueueCounts>,
    ) -> Self {
        let counts = StatusCounts::from_array(per_status);
        queues.sort_by(|a, b| a.queue.as_bytes().cmp(b.queue.as_bytes()));
        Self {
            counts,
            revision,
            total: counts.all,
            queues,
            at_ms,
        }
    }

    /// Marks the queues named in `paused` as paused, adding an all-zero entry
    /// for a paused queue that holds no job (every store builds its snapshot
    /// with this, from its table of paused queues).
    ///
    /// ```
    /// use duraq_core::inspect::QueueSnapshot;
    /// let snap = QueueSnapshot::new([0; 7], 0, 0, vec![]).with_paused(["mail".to_owned()]);
    /// assert!(snap.queue("mail").unwrap().paused);
    /// assert_eq!(snap.queue("mail").unwrap().counts.all, 0);
    /// ```
    pub fn with_paused(mut self, paused: impl IntoIterator<Item = String>) -> Self {
        for queue in paused {
            match self.queues.iter_mut().find(|q| q.queue == queue) {
                Some(entry) => entry.paused = true,
                None => self.queues.push(QueueCounts {
                    queue,
                    paused: true,
                    ..QueueCounts::default()
                }),
            }
        }
        self.queues
            .sort_by(|a, b| a.queue.as_bytes().cmp(b.queue.as_bytes()));
        self
    }

    /// The global part, as [`crate::Inspect::count_snapshot`] would return it.
    pub fn count_snapshot(&self) -> CountSnapshot {
        CountSnapshot {
            counts: self.counts,
            revision: self.revision,
            total: self.total,
        }
    }

    /// One queue's entry, if it holds any job or is paused.
    pub fn queue(&self, name: &str) -> Option<&QueueCounts> {
        self.queues.iter().find(|q| q.queue == name)
    }
}
