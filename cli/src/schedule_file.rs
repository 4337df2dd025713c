//! `duraq worker --schedule FILE.toml`: periodic built-in jobs declared in a
//! file, for operators who run `duraq worker` and write no Rust. Each `[[job]]`
//! entry becomes a core [`PeriodicJob`](duraq_core::PeriodicJob) on the
//! worker's builder, so ticks are enqueued exactly as an application's periodic
//! jobs are (one job per tick across every process, by the idempotency key
//! `periodic:<name>:<tick ms>`).
//!
//! The whole file is checked before the worker opens the database: TOML syntax
//! and unknown keys, the schedule (`every` or `cron`, `zone`), the job (a
//! built-in this worker runs), its args (as the built-in's handler reads them)
//! and its enqueue options (core's own validation of a tick's job). Every
//! mistake is one [`ScheduleError`] whose message starts with `FILE:LINE:COLUMN:`
//! and whose code is the one the same mistake has elsewhere (`invalid-cron`,
//! `invalid-time-zone`, `invalid-duration`, `invalid-args`, `invalid-queue`, …),
//! or `invalid-schedule-file` for what only a schedule file can get wrong.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use duraq_core::{Registry, WorkerError};
use serde::Deserialize;
use toml::Spanned;

use crate::error::CliError;

mod entry;

/// The code of a file that is no schedule file: unreadable, not TOML, an
/// unknown key, a missing or duplicate field, a job that is no built-in.
pub const INVALID: &str = "invalid-schedule-file";

/// The file's top level: only `[[job]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    job: Vec<Spanned<entry::Entry>>,
}

/// One mistake in a schedule file, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    /// The stable code, printed as `error[<code>]`.
    pub code: &'static str,
    /// The file as the operator named it.
    pub file: String,
    /// 1-based line and column of the mistake (`None`: the file as a whole,
    /// e.g. it cannot be read).
    pub at: Option<(usize, usize)>,
    /// What is wrong, without the location.
    pub message: String,
}

/// `FILE:LINE:COLUMN: message`, the form compilers and editors understand.
impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((line, column)) => write!(f, "{}:{line}:{column}: ", self.file)?,
            None => write!(f, "{}: ", self.file)?,
        }
        f.write_str(&self.message)
    }
}

impl From<ScheduleError> for CliError {
    fn from(e: ScheduleError) -> Self {
        CliError::new(e.code, e.to_string())
    }
}

/// One parsed file's text, to turn byte spans into lines.
pub(crate) struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

impl Source<'_> {
    /// An error at `span` (a byte range of the text).
    pub(crate) fn error(
        &self,
        code: &'static str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> ScheduleError {
        ScheduleError {
            code,
            file: self.file.to_owned(),
            at: Some(self.line_column(span.start)),
            message: message.into(),
        }
    }

    /// The 1-based line and column of the byte at `offset`.
    fn line_column(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line, column)
    }
}

/// Reads and checks every file in `paths` (in order), for a worker whose
/// handlers are `registry`: the periodic jobs to register. A name used twice,
/// in one file or across files, is an error at its second use.
pub fn load(
    paths: &[impl AsRef<Path>],
    registry: &Registry,
) -> Result<Vec<duraq_core::PeriodicJob>, ScheduleError> {
    let mut seen = HashMap::new();
    let mut jobs = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let found = crate::error::file_error(path, &e);
            ScheduleError {
                code: found.code,
                file: file.clone(),
                at: None,
                message: format!("cannot read the schedule file: {e}"),
            }
        })?;
        jobs.extend(parse(&file, &text, registry, &mut seen)?);
    }
    Ok(jobs)
}

/// Checks one file's `text` (`file` names it in errors). `seen` maps each
/// name already declared to where (`FILE:LINE`), across files.
pub fn parse(
    file: &str,
    text: &str,
    registry: &Registry,
    seen: &mut HashMap<String, String>,
) -> Result<Vec<duraq_core::PeriodicJob>, ScheduleError> {
    let src = Source { file, text };
    let parsed: File = toml::from_str(text).map_err(|e| {
        // The message's first line is the reason; the rest is the TOML
        // crate's drawing of the line, which the location replaces.
        let reason = e.message().lines().next().unwrap_or("").trim().to_owned();
        match e.span() {
            Some(span) => src.error(INVALID, span, reason),
            None => ScheduleError {
                code: INVALID,
                file: file.to_owned(),
                at: None,
                message: reason,
            },
        }
    })?;
    if parsed.job.is_empty() {
        return Err(src.error(
            INVALID,
            0..0,
            "the file declares no [[job]] entry (see docs/periodic.md)",
        ));
    }
    let mut jobs = Vec::with_capacity(parsed.job.len());
    for entry in &parsed.job {
        let job = entry::build(&src, entry, registry)?;
        let name_span = entry.get_ref().name.span();
        let (line, _) = src.line_column(name_span.start);
        if let Some(first) = seen.get(job.name()) {
            return Err(src.error(
                INVALID,
                name_span,
                format!(
                    "name {:?} is already used at {first}: each periodic job needs its own name",
                    job.name()
                ),
            ));
        }
        seen.insert(job.name().to_owned(), format!("{file}:{line}"));
        jobs.push(job);
    }
    Ok(jobs)
}

/// A worker error from a core constructor, as a schedule error at `span`.
pub(crate) fn at(src: &Source<'_>, span: Range<usize>, e: WorkerError) -> ScheduleError {
    let code = match &e {
        WorkerError::InvalidConfig(_) => INVALID,
        other => other.code().as_str(),
    };
    src.error(code, span, duraq_core::inspect::error_chain(&e))
}

#[cfg(test)]
mod tests;
