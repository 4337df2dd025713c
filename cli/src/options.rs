//! The options of a new job on the command line: `enqueue` and `schedule
//! replace` take [`JobArgs`], the job's `--args` plus the shared
//! [`JobOptions`] flattened (`duraq_web::job_options`, the one parser of
//! options as people write them, which workflow and schedule files and the
//! HTTP API read too). This module turns that parser's refusals into
//! [`CliError`]s with the same codes and messages.

use clap::Args;
use duraq_core::EnqueueOptions;
use serde_json::Value;

pub use duraq_web::job_options::{enqueue_options, JobOptions, Spelling};

use crate::error::CliError;
use crate::parse::json_args;

/// The flags that shape any new job: `--args` and the [`JobOptions`].
#[derive(Debug, Args, Default)]
pub struct JobArgs {
    /// Job arguments as JSON, handed to the handler (default `[]`).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    #[command(flatten)]
    pub options: JobOptions,
    /// Not a flag: `--delay` is refused with the real one's name (`--run-in`).
    #[arg(long, hide = true, value_name = "DURATION", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --delay: use --run-in DURATION (10s, 5m) or --run-at TIME"))]
    pub delay: Option<String>,
    /// Not a flag: `--retries` is refused with the real one's name (`--max-retries`).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --retries: use --max-retries N"))]
    pub retries: Option<String>,
}

impl From<duraq_web::job_options::values::ValueError> for CliError {
    fn from(e: duraq_web::job_options::values::ValueError) -> Self {
        CliError::new(e.code, e.message)
    }
}

impl From<duraq_web::job_options::OptionError> for CliError {
    fn from(e: duraq_web::job_options::OptionError) -> Self {
        e.error.into()
    }
}

/// Builds `(args, options)` from the shared job flags.
/// Core validation of the options (retries, concurrency, timeout) happens
/// later in `NewJob::new`.
pub fn job_options(a: &JobArgs) -> Result<(Value, EnqueueOptions), CliError> {
    let args = json_args(a.args.as_deref())?;
    let opts = enqueue_options(&a.options, Spelling::Flag)?;
    Ok((args, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_mistake_keeps_its_code_and_names_the_flag() {
        let a = JobArgs {
            options: JobOptions {
                run_in: Some("-5s".into()),
                ..JobOptions::default()
            },
            ..JobArgs::default()
        };
        let err = job_options(&a).unwrap_err();
        assert_eq!(err.code, "invalid-duration");
        assert!(err.message.starts_with("--run-in "), "{}", err.message);
        let a = JobArgs {
            args: Some("{".into()),
            ..JobArgs::default()
        };
        assert_eq!(job_options(&a).unwrap_err().code, "invalid-args");
    }
}
