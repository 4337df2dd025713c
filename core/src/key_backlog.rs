//! How much each fairness key of a queue has waiting
//! ([`crate::Inspect::fairness_keys`]): what an operator asks first when one
//! tenant floods a queue. Bounded whatever the backlog: at most
//! [`MAX_KEYS_LISTED`] keys, each counted up to [`KEY_COUNT_CAP`] queued jobs,
//! so a store reads at most one index range per key and never a whole
//! million-job backlog.

use serde::{Deserialize, Serialize};

use crate::job::{Job, JobStatus};

/// The most keys [`crate::Inspect::fairness_keys`] lists (the first, in byte
/// order).
pub const MAX_KEYS_LISTED: usize = 100;

/// The most queued jobs counted per key; past it the count says "more".
pub const KEY_COUNT_CAP: u64 = 10_000;

/// One fairness key of a queue and its queued jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyBacklog {
    /// The fairness key.
    pub key: String,
    /// Its queued jobs (due or not), up to [`KEY_COUNT_CAP`].
    pub queued: u64,
    /// Whether it has more than [`KEY_COUNT_CAP`].
    pub more: bool,
}

impl KeyBacklog {
    /// A key's entry from a count read with a limit of one past the cap.
    pub fn counted(key: String, counted: u64) -> Self {
        Self {
            key,
            queued: counted.min(KEY_COUNT_CAP),
            more: counted > KEY_COUNT_CAP,
        }
    }
}

/// [`crate::Inspect::fairness_keys`] over `jobs` (the memory store's, and
/// the reference every store is tested against).
pub fn key_backlogs<'a>(jobs: impl Iterator<Item = &'a Job>, queue: &str) -> Vec<KeyBacklog> {
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for job in jobs {
        if let (JobStatus::Queued, Some(key)) = (job.status, &job.fairness_key) {
            if job.queue == queue {
                *counts.entry(key.as_str()).or_default() += 1;
            }
        }
    }
    (counts.into_iter().take(MAX_KEYS_LISTED))
        .map(|(key, n)| KeyBacklog::counted(key.to_owned(), n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_the_cap_says_more() {
        let at_cap = KeyBacklog::counted("a".into(), KEY_COUNT_CAP);
        assert_eq!((at_cap.queued, at_cap.more), (KEY_COUNT_CAP, false));
        let past = KeyBacklog::counted("a".into(), KEY_COUNT_CAP + 1);
        assert_eq!((past.queued, past.more), (KEY_COUNT_CAP, true));
    }
}
