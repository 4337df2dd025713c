//! Signals: a named payload delivered to a job from outside
//! ([`crate::Producer::signal`]), kept once per (job, name), and what a
//! delivery does: store it, replay it, or refuse it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::journal::{MAX_STEP_NAME_BYTES, RESERVED_PREFIX};
use crate::error::{Error, ErrorCode};
use crate::job::Job;
use crate::Result;

/// One delivered signal, as [`crate::Inspect::job_signals`] reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalRecord {
    /// The signal's name, unique within its job.
    pub name: String,
    /// Its payload.
    pub payload: Value,
    /// When it was delivered (ms since the epoch, the store's clock).
    pub at_ms: i64,
}

/// What a delivery did ([`crate::Producer::signal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signalled {
    /// The same payload was already delivered under this name: nothing
    /// changed.
    pub replayed: bool,
    /// The job was waiting for this signal and is now `queued`, due now.
    pub woke: bool,
}

/// What a store does with a delivery, as [`plan_signal`] decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalPlan {
    /// The same payload is stored already: write nothing.
    Replay,
    /// Store the signal; when `wake`, end the job's wait ([`crate::driver::transitions::end_wait`]).
    Store {
        /// The job waits for this very signal.
        wake: bool,
    },
}

/// `invalid-signal` unless `name` is 1 to 200 bytes without control
/// characters, outside the `duraq.` prefix (a child's outcome comes to its
/// parent as such a signal), and `payload` at most 256 KiB of JSON. Checked before anything
/// is read.
pub fn check_signal(name: &str, payload: &Value) -> Result<()> {
    let problem = if name.is_empty() || name.len() > MAX_STEP_NAME_BYTES {
        format!("a signal name must be 1 to {MAX_STEP_NAME_BYTES} bytes")
    } else if name.chars().any(char::is_control) {
        "a signal name must not hold control characters".to_owned()
    } else if name.starts_with(RESERVED_PREFIX) {
        format!(
            "a signal name must not start with {RESERVED_PREFIX:?}, which duraq's own signals use"
        )
    } else if crate::transitions::output_size_error(payload).is_some() {
        let max = crate::transitions::MAX_OUTPUT_BYTES;
        format!("signal {name:?}'s payload is over {max} bytes of JSON")
    } else {
        return Ok(());
    };
    Err(Error::invalid(ErrorCode::InvalidSignal, problem))
}

/// Decides a delivery of `payload` as signal `name` to job `id`, given the
/// job (`None`: no such job) and the payload already stored under that
/// name: `job-not-found`; a replay when the same payload is stored (even
/// once the job has finished: a retried delivery is answered alike);
/// `signal-conflict` when another is; `job-finished` for a new signal to a
/// terminal job; else store it, waking the job when it waits for this
/// signal.
///
/// ```
/// use duraq_core::driver::rules::{plan_signal, SignalPlan};
/// use serde_json::json;
/// let plan = plan_signal("j1", None, "shipped", &json!(1), None);
/// assert_eq!(plan.unwrap_err().code().as_str(), "job-not-found");
/// ```
pub fn plan_signal(
    id: &str,
    job: Option<&Job>,
    name: &str,
    payload: &Value,
    stored: Option<&Value>,
) -> Result<SignalPlan> {
    let job = job.ok_or_else(|| Error::job_not_found(id))?;
    match stored {
        Some(same) if same == payload => Ok(SignalPlan::Replay),
        Some(_) => Err(Error::conflict(
            ErrorCode::SignalConflict,
            format!("job {id} already received signal {name:?} with another payload"),
        )),
        None if job.status.is_terminal() => Err(Error::conflict(
            ErrorCode::JobFinished,
            format!(
                "job {id} is {}: a finished job takes no new signal",
                job.status
            ),
        )),
        None => Ok(SignalPlan::Store {
            wake: job.is_awaiting_signal() && job.awaiting_signal.as_deref() == Some(name),
        }),
    }
}
