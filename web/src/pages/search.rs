//! The jobs search as a query string: what `GET /jobs`, the bulk confirmation
//! and its POST all read, so that a search is a link and every page of it, and
//! the "apply to all matching" action, select the same jobs.
//!
//! [`Search`] holds the raw text of each field exactly as the form sent it
//! (so a page shows back what was typed, even when it is wrong);
//! [`Search::filter`] turns it into core's [`JobFilter`] and is the only place
//! a field is judged: a status that is no status is `invalid-status` (core's
//! parser), args that are not JSON `invalid-args`, a time that is no time
//! `invalid-scheduled-at`. Times are read as UTC (`2026-12-04T10:30`, seconds
//! optional, or a bare date), the form of `<input type="datetime-local">`.

use duraq_core::inspect::JobFilter;
use duraq_core::{Error, ErrorCode, JobStatus};

/// Statuses whose list shows each job's last error.
pub const ERROR_STATUSES: [JobStatus; 3] =
    [JobStatus::Failed, JobStatus::Cancelled, JobStatus::Orphaned];

/// The search fields of the jobs page, as text (empty means unset).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Search {
    /// `status`, repeated (a checkbox each).
    pub statuses: Vec<String>,
    /// `queue`.
    pub queue: String,
    /// `name`.
    pub name: String,
    /// `key` (schedule key).
    pub key: String,
    /// `sequence` (sequence key).
    pub sequence: String,
    /// `fairness` (fairness key).
    pub fairness: String,
    /// `error`: text the last error contains.
    pub error: String,
    /// `args`: JSON the args contain.
    pub args: String,
    /// `created_after`, `created_before`, `finished_after`, `finished_before`.
    pub created_after: String,
    /// See [`Search::created_after`].
    pub created_before: String,
    /// See [`Search::created_after`].
    pub finished_after: String,
    /// See [`Search::created_after`].
    pub finished_before: String,
}

/// The names of the single-valued fields, in form order.
const FIELDS: [&str; 11] = [
    "queue",
    "name",
    "key",
    "sequence",
    "fairness",
    "error",
    "args",
    "created_after",
    "created_before",
    "finished_after",
    "finished_before",
];

impl Search {
    /// Reads the search fields from form or query pairs; other keys are left
    /// to the caller.
    pub fn from_pairs(pairs: &[(String, String)]) -> Self {
        let mut s = Search::default();
        for (k, v) in pairs {
            let v = v.trim();
            if k == "status" {
                if !v.is_empty() && !s.statuses.iter().any(|x| x == v) {
                    s.statuses.push(v.to_string());
                }
            } else if let Some(slot) = s.field_mut(k) {
                *slot = v.to_string();
            }
        }
        s
    }

    fn field_mut(&mut self, name: &str) -> Option<&mut String> {
        Some(match name {
            "queue" => &mut self.queue,
            "name" => &mut self.name,
            "key" => &mut self.key,
            "sequence" => &mut self.sequence,
            "fairness" => &mut self.fairness,
            "error" => &mut self.error,
            "args" => &mut self.args,
            "created_after" => &mut self.created_after,
            "created_before" => &mut self.created_before,
            "finished_after" => &mut self.finished_after,
            "finished_before" => &mut self.finished_before,
            _ => return None,
        })
    }

    /// The field `name` (one of the single-valued ones), as text.
    pub fn field(&self, name: &str) -> &str {
        match name {
            "queue" => &self.queue,
            "name" => &self.name,
            "key" => &self.key,
            "sequence" => &self.sequence,
            "fairness" => &self.fairness,
            "error" => &self.error,
            "args" => &self.args,
            "created_after" => &self.created_after,
            "created_before" => &self.created_before,
            "finished_after" => &self.finished_after,
            "finished_before" => &self.finished_before,
            _ => "",
        }
    }

    /// The set fields as pairs, statuses first: what a link or a hidden form
    /// field carries.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = self
            .statuses
            .iter()
            .map(|s| ("status", s.clone()))
            .collect();
        for name in FIELDS {
            let v = self.field(name);
            if !v.is_empty() {
                out.push((name, v.to_string()));
            }
        }
        out
    }

    /// The set fields as a query string (no leading `?`).
    pub fn query(&self) -> String {
        serde_urlencoded::to_string(self.pairs()).unwrap_or_default()
    }

    /// Whether any field is set (then "apply to all matching" is offered).
    pub fn is_set(&self) -> bool {
        !self.pairs().is_empty()
    }

    /// The statuses parsed, in the order given.
    ///
    /// Errors: `invalid-status` for a word that is no status.
    pub fn parsed_statuses(&self) -> Result<Vec<JobStatus>, Error> {
        let mut out: Vec<JobStatus> = Vec::new();
        for s in &self.statuses {
            let st = s.parse::<JobStatus>()?;
            if !out.contains(&st) {
                out.push(st);
            }
        }
        Ok(out)
    }

    /// Whether the list is one of failed, cancelled or orphaned jobs only.
    pub fn shows_errors(&self) -> bool {
        matches!(self.parsed_statuses(), Ok(s) if !s.is_empty()
            && s.iter().all(|st| ERROR_STATUSES.contains(st)))
    }

    /// The filter these fields stand for (no `after`, no `limit`).
    ///
    /// Errors: `invalid-status`, `invalid-args` (not JSON),
    /// `invalid-scheduled-at` (a time that is not `YYYY-MM-DD[THH:MM[:SS]]`).
    pub fn filter(&self) -> Result<JobFilter, Error> {
        let statuses = self.parsed_statuses()?;
        let text = |v: &str| (!v.is_empty()).then(|| v.to_string());
        let args = match self.args.as_str() {
            "" => None,
            raw => Some(serde_json::from_str::<serde_json::Value>(raw).map_err(|e| {
                Error::invalid(
                    ErrorCode::InvalidArgs,
                    format!("args to search for must be JSON: {e}"),
                )
            })?),
        };
        let bound = |name: &str, v: &str| -> Result<Option<i64>, Error> {
            match v {
                "" => Ok(None),
                v => duraq_core::inspect::parse_time_ms(v)
                    .map(Some)
                    .map_err(|_| {
                        Error::invalid(
                            ErrorCode::InvalidTime,
                            format!("{name} must be a UTC time like 2026-12-04T10:30, not {v:?}"),
                        )
                    }),
            }
        };
        Ok(JobFilter {
            statuses,
            job_name: text(&self.name),
            queue: text(&self.queue),
            schedule_key: text(&self.key),
            sequence_key: text(&self.sequence),
            fairness_key: text(&self.fairness),
            error_contains: text(&self.error),
            args_contains: args,
            created_after_ms: bound("created after", &self.created_after)?,
            created_before_ms: bound("created before", &self.created_before)?,
            finished_after_ms: bound("finished after", &self.finished_after)?,
            finished_before_ms: bound("finished before", &self.finished_before)?,
            ..JobFilter::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_search_round_trips_through_its_query() {
        let s = Search::from_pairs(&pairs(&[
            ("status", "failed"),
            ("status", "cancelled"),
            ("status", "failed"),
            ("queue", " mail "),
            ("args", "{\"user\":1}"),
            ("after", "x"),
        ]));
        assert_eq!(s.statuses, ["failed", "cancelled"]);
        assert_eq!(s.queue, "mail");
        assert!(s.shows_errors() && s.is_set());
        let back: Vec<(String, String)> = serde_urlencoded::from_str(&s.query()).unwrap();
        assert_eq!(Search::from_pairs(&back), s);
        assert!(!Search::default().is_set());
    }

    #[test]
    fn bad_fields_are_typed_errors() {
        let code = |list: &[(&str, &str)]| {
            Search::from_pairs(&pairs(list))
                .filter()
                .unwrap_err()
                .code()
        };
        assert_eq!(code(&[("status", "bogus")]), ErrorCode::InvalidStatus);
        assert_eq!(code(&[("args", "{nope")]), ErrorCode::InvalidArgs);
        assert_eq!(code(&[("created_after", "soon")]), ErrorCode::InvalidTime);
    }
}
