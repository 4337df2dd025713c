//! Job search: the filter every list, search and bulk selection speaks, the
//! page it answers with, and the one rule of which job a filter matches.
//!
//! Stores narrow by the conditions their indexes serve (statuses, queue, name,
//! schedule key, created range, the keyset cursor) and hand the candidate rows
//! to [`crate::rules::SearchScan`], which applies [`JobFilter::matches`] to
//! the rest (error text, args containment, finished range) and stops after the
//! filter's scan budget, so a search that matches little never reads the whole
//! table: the page then says where to go on ([`JobPage::resume`]).

use serde_json::Value;

use crate::job::{Job, JobStatus};

/// Rows a search reads per request when [`JobFilter::scan_limit`] is unset.
pub const DEFAULT_SCAN_LIMIT: usize = 10_000;

/// Which jobs to list; results are newest first (`createdAtMs`, then `id`,
/// desc). Every set field must match (they combine with AND); the default
/// matches every job.
///
/// Time bounds are half-open: `*_after_ms` is inclusive, `*_before_ms`
/// exclusive. "Finished" is the terminal timestamp
/// ([`Job::terminal_at_ms`]), so a job that is not terminal never matches a
/// finished bound.
///
/// ```
/// use duraq_core::JobStatus;
/// use duraq_core::inspect::{JobCursor, JobFilter};
/// let page = JobFilter {
///     statuses: vec![JobStatus::Failed, JobStatus::Orphaned],
///     queue: Some("mail".into()),
///     error_contains: Some("timeout".into()),
///     args_contains: Some(serde_json::json!({"user": {"id": 7}})),
///     limit: Some(50),
///     // the next page starts after the last job of the previous one
///     after: Some(JobCursor { created_at_ms: 1_700_000_000_000, id: "01a2…".into() }),
///     ..JobFilter::default()
/// };
/// assert_eq!(page.limit, Some(50));
/// assert_eq!(page.scan_budget(), duraq_core::limits::DEFAULT_SCAN_LIMIT);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only jobs in one of these statuses (empty: every status).
    pub statuses: Vec<JobStatus>,
    /// Only jobs of this name.
    pub job_name: Option<String>,
    /// Only jobs in this queue.
    pub queue: Option<String>,
    /// Only jobs that carry this schedule key (owners and history alike).
    pub schedule_key: Option<String>,
    /// Only the steps of this workflow.
    pub workflow_id: Option<String>,
    /// Only the jobs of this sequence ([`Job::sequence_key`]).
    pub sequence_key: Option<String>,
    /// Only the jobs of this fairness key ([`Job::fairness_key`]).
    pub fairness_key: Option<String>,
    /// Only jobs whose last error contains this text, ignoring case.
    pub error_contains: Option<String>,
    /// Only jobs whose args contain this JSON value ([`json_contains`], the
    /// semantics of PostgreSQL's `@>`).
    pub args_contains: Option<Value>,
    /// Only jobs created at or after this instant (ms since the epoch).
    pub created_after_ms: Option<i64>,
    /// Only jobs created before this instant.
    pub created_before_ms: Option<i64>,
    /// Only terminal jobs that finished at or after this instant.
    pub finished_after_ms: Option<i64>,
    /// Only terminal jobs that finished before this instant.
    pub finished_before_ms: Option<i64>,
    /// Only jobs after this one in list order (strictly older): keyset paging,
    /// stable while jobs are added or change status.
    pub after: Option<JobCursor>,
    /// At most this many jobs.
    pub limit: Option<usize>,
    /// At most this many candidate rows read by one request (default
    /// [`DEFAULT_SCAN_LIMIT`], min 1); see [`JobPage::resume`].
    pub scan_limit: Option<usize>,
}

impl JobFilter {
    /// The rows one request may read: `scan_limit`, else [`DEFAULT_SCAN_LIMIT`].
    pub fn scan_budget(&self) -> usize {
        self.scan_limit.unwrap_or(DEFAULT_SCAN_LIMIT).max(1)
    }

    /// Whether the filter has conditions no index serves (error text, args,
    /// finished range): only then can a candidate row fail [`JobFilter::matches`].
    pub fn has_residual(&self) -> bool {
        self.error_contains.is_some()
            || self.args_contains.is_some()
            || self.finished_after_ms.is_some()
            || self.finished_before_ms.is_some()
    }

    /// Whether `job` matches every condition (the cursor included). The one
    /// rule: stores narrow by what they can index and ask this of the rest.
    pub fn matches(&self, job: &Job) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        (self.statuses.is_empty() || self.statuses.contains(&job.status))
            && eq(&self.job_name, &job.job_name)
            && eq(&self.queue, &job.queue)
            && (self.schedule_key.is_none() || self.schedule_key == job.schedule_key)
            && (self.workflow_id.is_none() || self.workflow_id == job.workflow_id)
            && (self.sequence_key.is_none() || self.sequence_key == job.sequence_key)
            && (self.fairness_key.is_none() || self.fairness_key == job.fairness_key)
            && self.created_after_ms.is_none_or(|t| job.created_at_ms >= t)
            && self.created_before_ms.is_none_or(|t| job.created_at_ms < t)
            && self.after.as_ref().is_none_or(|c| c.precedes(job))
            && self.matches_residual(job)
    }

    /// The conditions of [`JobFilter::has_residual`] alone.
    pub fn matches_residual(&self, job: &Job) -> bool {
        let finished = job.terminal_at_ms();
        let bounded = self.finished_after_ms.is_some() || self.finished_before_ms.is_some();
        if bounded && finished.is_none() {
            return false;
        }
        let at = finished.unwrap_or_default();
        self.finished_after_ms.is_none_or(|t| at >= t)
            && self.finished_before_ms.is_none_or(|t| at < t)
            && self.error_contains.as_deref().is_none_or(|needle| {
                job.last_error
                    .as_deref()
                    .is_some_and(|e| contains_ignoring_case(e, needle))
            })
            && self
                .args_contains
                .as_ref()
                .is_none_or(|needle| json_contains(&job.args, needle))
    }
}

/// Whether `haystack` contains `needle`, ignoring case (Unicode lower case).
pub fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// JSON containment with the semantics of PostgreSQL's `jsonb @>`: an object
/// contains an object whose every key it has with a contained value; an array
/// contains an array whose every element some element of it contains (and,
/// at the top level only, a scalar it holds as an element); scalars contain
/// equal scalars (numbers compare by value).
///
/// ```
/// use duraq_core::driver::json_contains;
/// use serde_json::json;
/// let args = json!({"user": {"id": 7, "tags": ["a", "b"]}, "n": 1});
/// assert!(json_contains(&args, &json!({"user": {"tags": ["b"]}})));
/// assert!(json_contains(&args, &json!({})));
/// assert!(!json_contains(&args, &json!({"user": {"id": 8}})));
/// assert!(json_contains(&json!([1, [2, 3]]), &json!([[3]])));
/// assert!(json_contains(&json!(["a", "b"]), &json!("a")));
/// ```
pub fn json_contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::Array(items), n) if !n.is_array() && !n.is_object() => {
            items.iter().any(|i| scalar_eq(i, n))
        }
        _ => contains(haystack, needle),
    }
}

fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, nv)| h.get(k).is_some_and(|hv| contains(hv, nv))),
        (Value::Array(h), Value::Array(n)) => n.iter().all(|nv| match nv {
            Value::Array(_) | Value::Object(_) => h.iter().any(|hv| contains(hv, nv)),
            _ => h.iter().any(|hv| scalar_eq(hv, nv)),
        }),
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (h, n) => scalar_eq(h, n),
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => {
            match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => a.as_f64() == b.as_f64(),
            }
        }
        _ => a == b,
    }
}

/// A position in list order: the last job of the previous page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobCursor {
    /// That job's `createdAtMs`.
    pub created_at_ms: i64,
    /// That job's id.
    pub id: String,
}

impl JobCursor {
    /// The cursor just past `job`.
    pub fn after(job: &Job) -> Self {
        Self {
            created_at_ms: job.created_at_ms,
            id: job.id.clone(),
        }
    }

    /// Whether `job` comes after this cursor in list order.
    pub fn precedes(&self, job: &Job) -> bool {
        (job.created_at_ms, job.id.as_bytes()) < (self.created_at_ms, self.id.as_bytes())
    }
}

/// One answer of [`crate::Inspect::search_jobs`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobPage {
    /// The matching jobs, in list order, at most the filter's `limit`.
    pub jobs: Vec<Job>,
    /// Candidate rows read to find them (at most the scan budget).
    pub scanned: usize,
    /// `Some` when the scan budget ran out before `limit` matches were found:
    /// continue with `after = resume` (the last row read). `None`: the page is
    /// complete (page on from its last job as usual).
    pub resume: Option<JobCursor>,
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
