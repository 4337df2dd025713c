//! The kit's one error type. Store and worker errors pass through with their
//! own stable codes; the kit adds the two ways a test can ask for something
//! that cannot happen (a drain that never settles, a job that did not run).

use duraq_core::WorkerError;

/// Why a kit call failed; [`Error::code`] is stable, kebab-case.
///
/// ```
/// use duraq_testkit::Error;
/// let err = Error::Unsettled { rounds: 1000 };
/// assert_eq!(err.code(), "drain-unsettled");
/// let store = Error::from(duraq_core::Error::job_not_found("01a2"));
/// assert_eq!(store.code(), "job-not-found");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A store error (its own code: `invalid-args`, `job-not-found`, …).
    #[error(transparent)]
    Store(#[from] duraq_core::Error),
    /// A worker error: building the kit's worker, or running due jobs (its
    /// own code: `duplicate-handler`, `invalid-worker-config`, …).
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// A drain ran this many rounds and jobs kept becoming due (a job that
    /// reschedules or retries itself forever): `drain-unsettled`.
    #[error("drain did not settle after {rounds} rounds: jobs keep becoming due")]
    Unsettled {
        /// The rounds run before giving up.
        rounds: usize,
    },
    /// [`crate::TestKit::perform`] enqueued a job that the kit could not run:
    /// no handler for its name, a paused queue, a queue the worker does not
    /// serve, or a job not due (`job-not-run`).
    #[error("job {job_id} ({job_name}) did not run: {reason}")]
    NotRun {
        /// The enqueued job's id.
        job_id: String,
        /// Its name.
        job_name: String,
        /// What the kit saw.
        reason: String,
    },
}

impl Error {
    /// The stable machine code: the store's or worker's own, or one of the
    /// kit's (`drain-unsettled`, `job-not-run`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(e) => e.code().as_str(),
            Self::Worker(e) => e.code().as_str(),
            Self::Unsettled { .. } => "drain-unsettled",
            Self::NotRun { .. } => "job-not-run",
        }
    }
}
