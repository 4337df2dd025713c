//! The files `duraq workflows enqueue` and `append` read: a workflow
//! `{"name", "idempotencyKey"?, "steps": [...]}` and a steps file
//! `{"idempotencyKey"?, "steps": [...]}`, parsed by
//! [`duraq_web::workflow_file`], the parser `POST /api/v1/workflows` uses
//! too, so a file is read and refused the same way by both. This module reads
//! the file, gives the parser the program's check of built-in jobs' args
//! ([`crate::builtin::check_args`], which knows `duraq.mail.deliver`) and
//! turns its refusals into [`CliError`]s with the same codes and messages
//! (`invalid-workflow-file` naming the key and the step, an option's flag
//! code, `invalid-args`), all before the database is opened.

use std::path::Path;

use anyhow::Result;
use duraq_core::Workflow;
use duraq_web::workflow_file as file;

use crate::error::CliError;

pub use file::Steps;

/// The text of a workflow or steps file (`-`: standard input):
/// `file-not-found` or `file-unreadable` naming the path.
pub fn read_file(file: &Path) -> Result<String> {
    if file.as_os_str() == "-" {
        return std::io::read_to_string(std::io::stdin())
            .map_err(|e| CliError::new("file-unreadable", format!("standard input: {e}")).into());
    }
    std::fs::read_to_string(file).map_err(|e| crate::error::file_error(file, &e).into())
}

/// The workflow a file describes, checked as a whole: every error before any
/// store call.
pub fn parse_workflow(text: &str) -> Result<Workflow> {
    Ok(file::parse_workflow(text, crate::builtin::check_args).map_err(CliError::from)?)
}

/// The steps a file adds to a workflow; every error of the file itself
/// before any store call.
pub fn parse_steps(text: &str) -> Result<Steps> {
    Ok(file::parse_steps(text, crate::builtin::check_args).map_err(CliError::from)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program's check reaches the parser: a mail job's bad payload is
    /// refused as `invalid-args`, as `duraq enqueue` refuses it.
    #[test]
    fn the_programs_args_check_is_the_files() {
        let text = r#"{"name": "w", "steps": [
            {"step": "a", "job": "duraq.mail.deliver", "args": {"payload": {}}}]}"#;
        let err = parse_workflow(text).unwrap_err();
        assert_eq!(err.downcast_ref::<CliError>().unwrap().code, "invalid-args");
        let text = r#"{"steps": [{"step": "a", "job": "j", "x": 1}]}"#;
        let err = parse_steps(text).map(drop).unwrap_err();
        let code = err.downcast_ref::<CliError>().unwrap().code;
        assert_eq!(code, file::INVALID);
    }
}
