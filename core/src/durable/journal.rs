//! What one attempt knows of its job's recorded steps: loaded once, on the
//! attempt's first step, and the names the attempt has used so far.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::job::Lease;
use crate::worker::JobError;
use crate::ErrorCode;

/// The longest step name, in bytes.
pub(crate) const MAX_STEP_NAME_BYTES: usize = 200;

/// Step names that start with this are duraq's own (its sleeps and waits).
pub(crate) const RESERVED_PREFIX: &str = "duraq.";

/// One recorded step of a job, as [`crate::Inspect::job_steps`] reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// The step's name, unique within its job. A durable sleep is recorded
    /// as `duraq.sleep.N` (the Nth sleep of the handler), its output
    /// `{"untilMs": …}`.
    pub name: String,
    /// What the step returned, as JSON.
    pub output: Value,
    /// When it was recorded (ms since the epoch, the store's clock).
    pub at_ms: i64,
    /// The attempt that recorded it (1-based).
    pub attempt: i64,
}

/// A step's output to record under an attempt's lease
/// ([`crate::WorkerStore::record_step`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StepWrite {
    /// The attempt that ran the step.
    pub lease: Lease,
    /// Its attempt number (1-based).
    pub attempt: i64,
    /// The step's name.
    pub name: String,
    /// What it returned.
    pub output: Value,
    /// Whether the job keeps its row after it completes
    /// ([`crate::Job::keep_completed`]). A store that deletes an ephemeral
    /// job in its completion may note, when such a job records a step, that
    /// the job has steps to delete with it, so that the completions of
    /// ephemeral jobs without steps never look for any. Built by the worker
    /// from the job it runs ([`crate::driver::step_write`]); a write that
    /// says `true` for an ephemeral job may leave its steps behind.
    pub keep_completed: bool,
}

/// The steps an attempt has seen: the job's records (read on first use) and
/// the names this attempt used, so that a name used twice is refused.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    recorded: Option<HashMap<String, Value>>,
    used: HashSet<String>,
    sleeps: u32,
}

impl Journal {
    /// Marks `name` used by this attempt; `duplicate-step` when it was.
    pub(crate) fn use_name(&mut self, name: &str) -> Result<(), JobError> {
        if self.used.insert(name.to_owned()) {
            return Ok(());
        }
        Err(JobError::coded(
            ErrorCode::DuplicateStep,
            format!("step {name:?} ran twice in one attempt; each step needs a name of its own"),
        )
        .discard())
    }

    /// The next sleep's step name (`duraq.sleep.1`, `duraq.sleep.2`, …).
    pub(crate) fn next_sleep(&mut self) -> String {
        self.sleeps += 1;
        format!("{RESERVED_PREFIX}sleep.{}", self.sleeps)
    }

    pub(crate) fn is_loaded(&self) -> bool {
        self.recorded.is_some()
    }

    pub(crate) fn load(&mut self, records: Vec<StepRecord>) {
        let map = records.into_iter().map(|r| (r.name, r.output));
        self.recorded = Some(map.collect());
    }

    /// The recorded output of `name`, if an earlier attempt recorded it.
    pub(crate) fn recorded(&self, name: &str) -> Option<Value> {
        self.recorded.as_ref()?.get(name).cloned()
    }
}

/// `invalid-step-name` unless `name` is 1 to [`MAX_STEP_NAME_BYTES`] bytes
/// without control characters and outside the reserved `duraq.` prefix.
pub(crate) fn check_name(name: &str) -> Result<(), JobError> {
    let problem = if name.is_empty() || name.len() > MAX_STEP_NAME_BYTES {
        Some(format!("must be 1 to {MAX_STEP_NAME_BYTES} bytes"))
    } else if name.chars().any(char::is_control) {
        Some("must not hold control characters".to_owned())
    } else if name.starts_with(RESERVED_PREFIX) {
        Some(format!(
            "must not start with {RESERVED_PREFIX:?}, which duraq's own steps use"
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(why) => Err(JobError::coded(
            ErrorCode::InvalidStepName,
            format!("step name {name:?} {why}"),
        )
        .discard()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_used_once_per_attempt() {
        let mut journal = Journal::default();
        journal.use_name("charge").unwrap();
        let twice = journal.use_name("charge").unwrap_err();
        assert_eq!(twice.code(), Some(ErrorCode::DuplicateStep));
        assert_eq!(
            (journal.next_sleep(), journal.next_sleep()),
            ("duraq.sleep.1".to_owned(), "duraq.sleep.2".to_owned())
        );
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "duraq.sleep.1", "a\nb", &"x".repeat(201)] {
            let err = check_name(bad).unwrap_err();
            assert_eq!(err.code(), Some(ErrorCode::InvalidStepName), "{bad:?}");
            assert!(err.is_discard());
        }
        check_name(&"x".repeat(200)).unwrap();
        check_name("charge card").unwrap();
    }
}
