//! The errors the CLI raises itself, each with a stable machine code
//! (`docs/cli.md`): a bad value caught before any store call ([`CliError`]),
//! and a bulk action stopped part-way ([`Interrupted`]), which says how far it
//! got. They sit below every command so that parsing, the commands and the
//! printing in [`crate::output`] all speak of the same types.

use std::fmt;

use duraq_core::inspect::BulkReport;
use duraq_core::Error;
use serde_json::json;

/// A failure detected by the CLI itself (bad input before any store call), with a
/// stable machine code like `invalid-args`.
#[derive(Debug)]
pub struct CliError {
    pub code: &'static str,
    pub message: String,
}

impl CliError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// A file that could not be read: `file-not-found` when it does not exist,
/// else `file-unreadable` (a folder, no permission, not UTF-8), naming the path.
pub fn file_error(path: &std::path::Path, e: &std::io::Error) -> CliError {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => "file-not-found",
        _ => "file-unreadable",
    };
    CliError::new(code, format!("{}: {e}", path.display()))
}

/// A bulk action stopped by `error` after `progress` (what the committed
/// batches did). Printed with the error's own code, and with `progress` as
/// `{matched, changed, skipped, batchesCommitted}` in the `--json` error.
#[derive(Debug)]
pub struct Interrupted {
    pub progress: BulkReport,
    pub error: Error,
}

impl Interrupted {
    /// `progress` as the `--json` error's `progress` object.
    pub fn progress_json(&self) -> serde_json::Value {
        let p = &self.progress;
        json!({
            "matched": p.matched,
            "changed": p.changed,
            "skipped": p.skipped,
            "batchesCommitted": p.batches,
        })
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.progress;
        write!(
            f,
            "{}; before it stopped: {} matched, {} changed, {} skipped, {} {} committed \
             (running the same command again is safe: it skips what is done)",
            duraq_core::inspect::error_chain(&self.error),
            p.matched,
            p.changed,
            p.skipped,
            p.batches,
            if p.batches == 1 { "batch" } else { "batches" },
        )
    }
}

impl std::error::Error for Interrupted {}
