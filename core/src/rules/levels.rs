//! The queue-priority levels of a claim: each level is a set of queues,
//! visited from the highest queue priority down, and within a level each job
//! priority from the highest down. A store walks its candidates level by
//! level, so a queue's priority comes before any job's.

use std::collections::BTreeMap;

use crate::requests::ClaimRequest;

/// Which queues one level of a claim covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueSet {
    /// These queues.
    In(Vec<String>),
    /// Every queue but these (the queues given a priority of their own).
    NotIn(Vec<String>),
}

impl QueueSet {
    /// Whether `queue` belongs to the set.
    pub fn contains(&self, queue: &str) -> bool {
        match self {
            Self::In(qs) => qs.iter().any(|q| q == queue),
            Self::NotIn(qs) => !qs.iter().any(|q| q == queue),
        }
    }
}

/// The levels of `req`, highest queue priority first.
///
/// ```
/// use duraq_core::driver::rules::{claim_levels, QueueSet};
/// use duraq_core::driver::ClaimRequest;
/// use duraq_core::QueueConfig;
/// let mut req = ClaimRequest::default();
/// req.queue_config.insert("urgent".into(), QueueConfig { priority: 5, ..QueueConfig::default() });
/// assert_eq!(
///     claim_levels(&req),
///     [QueueSet::In(vec!["urgent".into()]), QueueSet::NotIn(vec!["urgent".into()])]
/// );
/// ```
pub fn claim_levels(req: &ClaimRequest) -> Vec<QueueSet> {
    let priority = |q: &str| req.queue_config.get(q).map_or(0, |c| c.priority);
    let mut by_priority: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    match &req.queues {
        Some(queues) => {
            for q in queues {
                by_priority.entry(priority(q)).or_default().push(q.clone());
            }
            by_priority
                .into_iter()
                .rev()
                .map(|(_, qs)| QueueSet::In(qs))
                .collect()
        }
        None => {
            let prioritized: Vec<(&String, i64)> = req
                .queue_config
                .iter()
                .filter(|(_, c)| c.priority != 0)
                .map(|(q, c)| (q, c.priority))
                .collect();
            for (q, p) in &prioritized {
                by_priority.entry(*p).or_default().push((*q).clone());
            }
            let others = prioritized.iter().map(|(q, _)| (*q).clone()).collect();
            let mut levels: Vec<(i64, QueueSet)> = by_priority
                .into_iter()
                .map(|(p, qs)| (p, QueueSet::In(qs)))
                .collect();
            levels.push((0, QueueSet::NotIn(others)));
            levels.sort_by_key(|(p, _)| std::cmp::Reverse(*p));
            levels.into_iter().map(|(_, level)| level).collect()
        }
    }
}
