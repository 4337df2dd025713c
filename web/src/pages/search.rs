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

use duraq_core::{Error, ErrorCode, JobFilter, JobStatus};

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
const FIELDS: [&str; 9] = [
    "queue",
    "name",
    "key",
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
                v => parse_utc(v).map(Some).ok_or_else(|| {
                    Error::invalid(
                        ErrorCode::InvalidScheduledAt,
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

/// `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM`, `YYYY-MM-DDTHH:MM:SS` (a space for `T`
/// and a trailing `Z` allowed), read as UTC, in ms since the epoch.
pub fn parse_utc(text: &str) -> Option<i64> {
    let text = text.trim().trim_end_matches(['Z', 'z']);
    let (date, time) = match text.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let num = |s: &str, len: usize| -> Option<i64> {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let mut d = date.split('-');
    let (y, m, day) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=days_in(y, m)).contains(&day) {
        return None;
    }
    let (mut h, mut min, mut s) = (0, 0, 0);
    if let Some(t) = time {
        let mut parts = t.split(':');
        h = num(parts.next()?, 2)?;
        min = num(parts.next()?, 2)?;
        if let Some(sec) = parts.next() {
            s = num(sec, 2)?;
        }
        if parts.next().is_some() || h > 23 || min > 59 || s > 59 {
            return None;
        }
    }
    Some((days_from_civil(y, m, day) * 86_400 + h * 3600 + min * 60 + s) * 1000)
}

fn days_in(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    fn utc_times_parse_and_bad_ones_do_not() {
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        assert_eq!(parse_utc("2000-02-29T00:00"), Some(951_782_400_000));
        assert_eq!(parse_utc("2023-11-14 22:13:20Z"), Some(1_700_000_000_000));
        for bad in [
            "2023-02-29",
            "2023-13-01",
            "2023-1-01",
            "yesterday",
            "2023-01-01T24:00",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
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
        assert_eq!(
            code(&[("created_after", "soon")]),
            ErrorCode::InvalidScheduledAt
        );
    }
}
