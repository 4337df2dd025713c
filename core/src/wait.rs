//! Awaiting a job: [`crate::Inspect::wait_for`] answers once the job is
//! finished or the time is up.
//!
//! Written once for every store over two things each has: its count deltas
//! ([`crate::Inspect::subscribe_counts`]), which move with every status
//! change this process sees (its own writes; on PostgreSQL every process's,
//! through NOTIFY), and reading one job by id. A job changes status only with
//! a count change, so a delta is the moment to read it again. What no delta
//! announces (on SQLite, another process's commit) is caught by reading the
//! job at least every [`POLL`]: a bounded wait, at the cost of one
//! primary-key read per waiter per interval.

use std::time::Duration;

use std::future::Future;

use tokio::sync::broadcast::{self, error::RecvError};

use crate::counts::CountDelta;
use crate::{Error, Job, Result};

/// The longest a waiter goes without reading its job.
pub const POLL: Duration = Duration::from_millis(100);

/// How a wait ended ([`crate::Inspect::wait_for`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Waited {
    /// The job is finished (`completed`, `failed`, `cancelled` or
    /// `orphaned`): its status, output and last error are final.
    Finished(Job),
    /// The job was deleted while waited for: an ephemeral job that completed
    /// (`keepCompleted = false`), or a prune or delete.
    Deleted,
    /// The time ran out; the job as it was last read.
    TimedOut(Job),
}

/// The wait behind [`crate::Inspect::wait_for`], over the store's count
/// deltas (subscribed before the first read, so no change after it is
/// missed) and a read of job `id`.
pub(crate) async fn wait_for<F, R>(
    mut deltas: broadcast::Receiver<CountDelta>,
    mut read: R,
    id: &str,
    timeout: Duration,
) -> Result<Waited>
where
    R: FnMut() -> F,
    F: Future<Output = Result<Option<Job>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut deltas_open = true;
    let mut job = read().await?.ok_or_else(|| Error::job_not_found(id))?;
    loop {
        if job.status.is_terminal() {
            return Ok(Waited::Finished(job));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(Waited::TimedOut(job));
        }
        let next_read = deadline.min(now + POLL);
        tokio::select! {
            () = tokio::time::sleep_until(next_read) => {}
            got = deltas.recv(), if deltas_open => {
                deltas_open = !matches!(got, Err(RecvError::Closed));
            }
        }
        match read().await? {
            Some(now) => job = now,
            None => return Ok(Waited::Deleted),
        }
    }
}
