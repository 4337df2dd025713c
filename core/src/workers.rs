//! Visible workers: what a worker process records about itself, how a listing
//! reads, and which due jobs no live worker handles. The rules (alive or stale,
//! which worker handles which job) are written here once; a store only reads and
//! writes rows (`duraq_workers`, and a bounded read of the oldest due jobs).

use serde::{Deserialize, Serialize};

/// How many of the oldest due queued jobs [`crate::Inspect::unhandled_jobs`]
/// looks at. Jobs that no worker claims stay at the front of the due order
/// while handled ones leave it, so a bounded read of the front finds them and
/// costs the same whatever the backlog.
pub const UNHANDLED_SCAN_LIMIT: usize = 10_000;

/// How long a worker that stopped heartbeating stays listed (as stale) before
/// recovery forgets it: a day, or the stale timeout if that is longer.
pub const FORGET_WORKERS_AFTER_MS: i64 = 24 * 3_600_000;

/// The heartbeat cutoff below which [`crate::WorkerStore::recover_stale`] deletes a
/// worker's row: `now_ms - max(stale_after_ms, FORGET_WORKERS_AFTER_MS)`, so a
/// row is never forgotten while its worker could still count as alive.
///
/// ```
/// use duraq_core::driver::worker_forget_cutoff_ms;
/// use duraq_core::limits::FORGET_WORKERS_AFTER_MS;
/// assert_eq!(worker_forget_cutoff_ms(100_000_000, 60_000), 100_000_000 - FORGET_WORKERS_AFTER_MS);
/// assert_eq!(worker_forget_cutoff_ms(i64::MIN, 60_000), i64::MIN);
/// ```
pub fn worker_forget_cutoff_ms(now_ms: i64, stale_after_ms: i64) -> i64 {
    now_ms.saturating_sub(stale_after_ms.max(FORGET_WORKERS_AFTER_MS))
}

/// What a worker process records when it starts
/// ([`crate::WorkerStore::register_worker`]). The store adds `startedAtMs` and the
/// heartbeats.
///
/// ```
/// use duraq_core::driver::WorkerInfo;
/// let info = WorkerInfo {
///     worker_id: "w-1".into(),
///     host: "app-1".into(),
///     pid: 4242,
///     queues: Some(vec!["mail".into()]),
///     job_names: vec!["send_receipt".into()],
///     slots: 10,
/// };
/// assert!(info.handles("mail", "send_receipt"));
/// assert!(!info.handles("default", "send_receipt"));
/// assert!(!info.handles("mail", "send_reciept"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerInfo {
    /// The worker's id (the `workerId` its claims carry).
    pub worker_id: String,
    /// The host name of its machine.
    pub host: String,
    /// Its operating-system process id.
    pub pid: u32,
    /// The queues it claims from; `None`: every queue.
    pub queues: Option<Vec<String>>,
    /// The job names it has handlers for.
    pub job_names: Vec<String>,
    /// How many jobs it runs at once.
    pub slots: u64,
}

impl WorkerInfo {
    /// Whether this worker claims jobs named `job_name` in `queue`.
    pub fn handles(&self, queue: &str, job_name: &str) -> bool {
        self.job_names.iter().any(|n| n == job_name)
            && self
                .queues
                .as_ref()
                .is_none_or(|qs| qs.iter().any(|q| q == queue))
    }
}

/// Whether a worker is heartbeating.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Its last heartbeat is within the stale timeout.
    Alive,
    /// Its last heartbeat is older than the stale timeout: it is gone (or
    /// stuck), and recovery returns its jobs to the queue.
    Stale,
}

impl WorkerState {
    /// The state of a worker last heard from at `last_heartbeat_ms`, as of
    /// `now_ms`: alive while `last_heartbeat_ms >= now_ms - stale_after_ms`,
    /// the same boundary at which recovery takes its leases.
    ///
    /// ```
    /// use duraq_core::inspect::WorkerState;
    /// assert_eq!(WorkerState::at(1_000, 61_000, 60_000), WorkerState::Alive);
    /// assert_eq!(WorkerState::at(999, 61_000, 60_000), WorkerState::Stale);
    /// ```
    pub fn at(last_heartbeat_ms: i64, now_ms: i64, stale_after_ms: i64) -> Self {
        if last_heartbeat_ms >= now_ms.saturating_sub(stale_after_ms) {
            Self::Alive
        } else {
            Self::Stale
        }
    }

    /// `alive` or `stale`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Alive => "alive",
            Self::Stale => "stale",
        }
    }
}

/// A job a worker holds (`handed_off` to it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningJob {
    /// The job's id.
    pub id: String,
    /// The job's name.
    pub job_name: String,
}

/// A registered worker as [`crate::Inspect::list_workers`] reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerRecord {
    /// What it registered.
    #[serde(flatten)]
    pub info: WorkerInfo,
    /// When it registered (ms since the epoch).
    pub started_at_ms: i64,
    /// Its last heartbeat (ms since the epoch).
    pub last_heartbeat_ms: i64,
    /// Alive or stale, as of the listing.
    pub state: WorkerState,
    /// The jobs handed off to it, by id.
    pub running: Vec<RunningJob>,
}

impl WorkerRecord {
    /// Builds a record from its stored parts, deciding its state with
    /// [`WorkerState::at`] and sorting `running` by id (byte order).
    pub fn new(
        info: WorkerInfo,
        started_at_ms: i64,
        last_heartbeat_ms: i64,
        now_ms: i64,
        stale_after_ms: i64,
        mut running: Vec<RunningJob>,
    ) -> Self {
        running.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
        Self {
            info,
            started_at_ms,
            last_heartbeat_ms,
            state: WorkerState::at(last_heartbeat_ms, now_ms, stale_after_ms),
            running,
        }
    }
}

/// Due queued jobs of one (queue, job name), among the oldest due ones
/// ([`crate::Inspect::due_job_names`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DueJobGroup {
    /// The jobs' queue.
    pub queue: String,
    /// The jobs' name.
    pub job_name: String,
    /// How many of them were read.
    pub due: u64,
    /// The earliest `scheduledAtMs` among them.
    pub oldest_scheduled_at_ms: i64,
}

/// The groups that no alive worker in `workers` handles, in the order given
/// (stores give them by queue, then job name). A stale worker handles
/// nothing: its claims stopped.
pub fn unhandled_groups(groups: Vec<DueJobGroup>, workers: &[WorkerRecord]) -> Vec<DueJobGroup> {
    groups
        .into_iter()
        .filter(|g| {
            !workers
                .iter()
                .any(|w| w.state == WorkerState::Alive && w.info.handles(&g.queue, &g.job_name))
        })
        .collect()
}

/// This machine's host name for [`WorkerInfo::host`] (empty when the system
/// does not say, or it is not UTF-8).
pub(crate) fn this_host() -> String {
    hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(queues: Option<&[&str]>, names: &[&str], state: WorkerState) -> WorkerRecord {
        WorkerRecord {
            info: WorkerInfo {
                worker_id: "w".into(),
                host: "h".into(),
                pid: 1,
                queues: queues.map(|qs| qs.iter().map(|q| q.to_string()).collect()),
                job_names: names.iter().map(|n| n.to_string()).collect(),
                slots: 1,
            },
            started_at_ms: 0,
            last_heartbeat_ms: 0,
            state,
            running: Vec::new(),
        }
    }

    fn group(queue: &str, name: &str) -> DueJobGroup {
        DueJobGroup {
            queue: queue.into(),
            job_name: name.into(),
            due: 1,
            oldest_scheduled_at_ms: 0,
        }
    }

    #[test]
    fn only_alive_workers_of_the_queue_and_name_handle_a_group() {
        let groups = vec![group("a", "x"), group("b", "x"), group("a", "y")];
        let alive = worker(Some(&["a"]), &["x"], WorkerState::Alive);
        let stale = worker(None, &["y"], WorkerState::Stale);
        let left = unhandled_groups(groups.clone(), &[alive, stale]);
        assert_eq!(left, vec![group("b", "x"), group("a", "y")]);
        let every_queue = worker(None, &["x", "y"], WorkerState::Alive);
        assert!(unhandled_groups(groups, &[every_queue]).is_empty());
    }

    #[test]
    fn the_stale_boundary_matches_recovery() {
        assert_eq!(WorkerState::at(40, 100, 60), WorkerState::Alive);
        assert_eq!(WorkerState::at(39, 100, 60), WorkerState::Stale);
        assert_eq!(WorkerState::at(i64::MIN, i64::MIN, 60), WorkerState::Alive);
    }
}
