//! The search flags `jobs list` and `jobs retry|cancel|delete` share,
//! parsed into core's [`JobFilter`] before any database
//! is opened: bad JSON is `invalid-args`, a bad time `invalid-time`, a bad
//! status `invalid-status`, each a usage error that writes nothing.

use clap::Args;
use duraq_core::inspect::JobFilter;
use duraq_core::JobStatus;

use crate::error::CliError;
use crate::parse::{duration_ms, queue_name, rfc3339_ms};

/// The filter flags' ids, for clap's "ids or a filter" rule.
pub const FILTER_IDS: [&str; 12] = [
    "status",
    "queue",
    "name",
    "key",
    "sequence",
    "fairness_key",
    "error_contains",
    "args_contains",
    "created_after",
    "created_before",
    "finished_after",
    "finished_before",
];

/// Which jobs: every flag given must match (AND).
#[derive(Debug, Default, Args)]
pub struct FilterFlags {
    /// Jobs in any of these statuses (comma-separated: `failed,cancelled`;
    /// `running` is `handed_off`).
    #[arg(long, value_name = "STATUSES", value_delimiter = ',')]
    pub status: Vec<String>,
    /// Jobs in this queue.
    #[arg(long)]
    pub queue: Option<String>,
    /// Jobs with this job name, e.g. `duraq.http`.
    #[arg(long)]
    pub name: Option<String>,
    /// Jobs that carry this schedule key (its owner and its history).
    #[arg(long)]
    pub key: Option<String>,
    /// Jobs of this sequence (`enqueue --sequence`), the one in its way first
    /// when sorted by creation.
    #[arg(long, value_name = "KEY")]
    pub sequence: Option<String>,
    /// Jobs of this fairness key (`enqueue --fairness-key`).
    #[arg(long, value_name = "KEY")]
    pub fairness_key: Option<String>,
    /// Jobs whose last error contains TEXT, ignoring case.
    #[arg(long, value_name = "TEXT")]
    pub error_contains: Option<String>,
    /// Jobs whose args contain this JSON, as PostgreSQL's `@>` says: objects
    /// contain sub-objects, arrays their elements, scalars equal ones
    /// (`'{"user":{"id":7}}'`).
    #[arg(long, value_name = "JSON")]
    pub args_contains: Option<String>,
    /// Jobs created at or after TIME: RFC 3339 (`2026-01-02T03:04:05Z`) or an
    /// age meaning that long ago (`2h`, `7d`).
    #[arg(long, value_name = "TIME")]
    pub created_after: Option<String>,
    /// Jobs created before TIME (RFC 3339, or an age: `7d` is 7 days ago).
    #[arg(long, value_name = "TIME")]
    pub created_before: Option<String>,
    /// Finished jobs whose terminal time is at or after TIME (RFC 3339, or an
    /// age: `2h` is 2 hours ago).
    #[arg(long, value_name = "TIME")]
    pub finished_after: Option<String>,
    /// Finished jobs whose terminal time is before TIME (RFC 3339, or an age).
    #[arg(long, value_name = "TIME")]
    pub finished_before: Option<String>,
    /// Rows read per request at most (default 10,000); a search by error
    /// text, args or finished time that reads that many stops early and
    /// says where to continue.
    #[arg(long, value_name = "N")]
    pub scan_limit: Option<usize>,
}

impl FilterFlags {
    /// The filter these flags stand for, ages counted back from `now_ms`.
    pub fn filter(&self, now_ms: i64) -> Result<JobFilter, CliError> {
        let statuses = (self.status.iter())
            .map(|s| parse_status(s))
            .collect::<Result<Vec<_>, _>>()?;
        let queue = (self.queue.as_deref())
            .map(|q| queue_name("--queue", q).map(String::from))
            .transpose()?;
        let args_contains = (self.args_contains.as_deref())
            .map(|raw| {
                serde_json::from_str(raw).map_err(|e| {
                    CliError::new(
                        "invalid-args",
                        format!("--args-contains is not valid JSON: {e}"),
                    )
                })
            })
            .transpose()?;
        let time = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .map(|raw| time_ms(flag, raw, now_ms))
                .transpose()
        };
        if self.scan_limit == Some(0) {
            return Err(CliError::new(
                "invalid-limit",
                "--scan-limit must be at least 1",
            ));
        }
        Ok(JobFilter {
            statuses,
            job_name: self.name.clone(),
            queue,
            schedule_key: self.key.clone(),
            sequence_key: self.sequence.clone(),
            fairness_key: self.fairness_key.clone(),
            error_contains: self.error_contains.clone(),
            args_contains,
            created_after_ms: time("--created-after", &self.created_after)?,
            created_before_ms: time("--created-before", &self.created_before)?,
            finished_after_ms: time("--finished-after", &self.finished_after)?,
            finished_before_ms: time("--finished-before", &self.finished_before)?,
            scan_limit: self.scan_limit,
            ..JobFilter::default()
        })
    }
}

/// A time flag: an age (`2h`, `7d`: that long before `now_ms`) or an RFC 3339
/// time; anything else is `invalid-time`.
pub fn time_ms(flag: &str, raw: &str, now_ms: i64) -> Result<i64, CliError> {
    if raw.trim().starts_with(|c: char| c.is_ascii_digit()) && !raw.contains(['-', ':']) {
        let age = duration_ms(flag, raw).map_err(|_| {
            CliError::new(
                "invalid-time",
                format!("{flag} {raw:?} is neither an age like 2h or 7d nor an RFC 3339 time"),
            )
        })?;
        return Ok(now_ms.saturating_sub(age));
    }
    rfc3339_ms(flag, raw).map_err(|_| {
        CliError::new(
            "invalid-time",
            format!(
                "{flag} {raw:?} is neither an age like 2h or 7d nor an RFC 3339 time \
                 like 2026-01-02T03:04:05Z"
            ),
        )
    })
}

/// `--status` of `jobs list` and the bulk actions (`running` is `handed_off`).
fn parse_status(s: &str) -> Result<JobStatus, CliError> {
    s.trim().parse::<JobStatus>().map_err(|e| {
        CliError::new(
            e.code().as_str(),
            format!(
                "--status {s:?} is not a status; expected one of queued, running (or \
                 handed_off), completed, failed, cancelled, orphaned"
            ),
        )
    })
}
