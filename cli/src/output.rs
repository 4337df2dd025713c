//! Everything the program prints: one JSON object per command on stdout, plain
//! tables for humans, and errors as `error[<code>]: <message>` (or a JSON error
//! object) on stderr. Keeping this in one place keeps the output contract of
//! `docs/cli.md` stable and testable. Text for humans passes through
//! [`crate::display`] (no control characters reach the terminal), and every error
//! is printed with its cause chain and without any configured secret.
//! The tables of jobs themselves are drawn in [`crate::job_view`].

use std::sync::OnceLock;

use duraq_core::inspect::error_chain;
use duraq_mailer::{Scrubber, Secret};
use serde_json::{json, Value};

use crate::display::terminal_safe;
use crate::error::{CliError, Interrupted};

/// The secrets this process was configured with, scrubbed from every printed
/// error as a last line of defence (the stores and backends already keep them
/// out of their messages): the mail credentials in clear and in the base64
/// forms an SMTP AUTH echo carries (the mailer's [`Scrubber`]), the database
/// password and the web token where they occur whole
/// ([`duraq_web::mask_secrets`]: a short secret must not mask letters of
/// other words, which garbles the message and reveals the secret).
static SECRETS: OnceLock<(Scrubber, Vec<String>)> = OnceLock::new();

/// Remembers the secrets (empty ones are ignored) for [`scrub`]. First call wins.
pub fn register_secrets(
    mail: impl IntoIterator<Item = String>,
    whole: impl IntoIterator<Item = String>,
) {
    let scrubber = mail.into_iter().fold(Scrubber::new(), |s, secret| {
        s.with_secret(&Secret::new(secret))
    });
    let whole = whole.into_iter().filter(|s| !s.is_empty()).collect();
    let _ = SECRETS.set((scrubber, whole));
}

/// `text` with every registered secret replaced by `***`.
pub fn scrub(text: &str) -> String {
    match SECRETS.get() {
        Some((scrubber, whole)) => {
            duraq_web::mask_secrets(&scrubber.scrub(text), whole.iter().map(String::as_str))
        }
        None => text.to_string(),
    }
}

/// The stable code and message of any error that reaches `main`: the message
/// carries the whole cause chain (`backend error: sqlite: file is not a database`).
pub fn error_parts(err: &anyhow::Error) -> (String, String) {
    let (code, message) = if let Some(e) = err.downcast_ref::<CliError>() {
        (e.code.to_string(), e.message.clone())
    } else if let Some(e) = err.downcast_ref::<Interrupted>() {
        (e.error.code().as_str().to_string(), e.to_string())
    } else if let Some(e) = err.downcast_ref::<duraq_core::Error>() {
        (e.code().as_str().to_string(), error_chain(e))
    } else if let Some(e) = err.downcast_ref::<duraq_core::WorkerError>() {
        (e.code().to_string(), error_chain(e))
    } else if let Some(e) = err.downcast_ref::<duraq_tenants::Error>() {
        (e.code().as_str().to_string(), error_chain(e))
    } else {
        ("internal-error".to_string(), format!("{err:#}"))
    };
    (code, scrub(&message))
}

/// Prints `err` to stderr in the requested form (JSON escapes control
/// characters itself; the text form escapes them for the terminal).
pub fn print_error(err: &anyhow::Error, json: bool) {
    let (code, message) = error_parts(err);
    if json {
        let mut error = json!({"code": code, "message": message});
        if let Some(e) = err.downcast_ref::<Interrupted>() {
            error["progress"] = e.progress_json();
        }
        eprintln!("{}", json!({ "error": error }));
    } else {
        eprintln!("error[{code}]: {}", terminal_safe(&message));
    }
}

/// Prints a usage error (exit status 2) in the `--json` error form.
pub fn print_usage_error(message: &str) {
    let message = scrub(message);
    eprintln!(
        "{}",
        json!({"error": {"code": "usage", "message": message}})
    );
}

/// Prints one JSON object on stdout.
pub fn print_json(value: &Value) {
    println!("{value}");
}

/// Serializes any serde value (never fails for duraq's own types).
pub fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Renders rows as left-aligned columns separated by two spaces; every cell is
/// made [`terminal_safe`] first, so no stored value can steer the terminal.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|c| terminal_safe(c).into_owned()).collect())
        .collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(padded.join("  ").trim_end());
        out.push('\n');
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(&["A", "BB"], &[vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\n");
    }

    #[test]
    fn table_cells_cannot_steer_the_terminal() {
        let t = table(&["Q"], &[vec!["a\u{1b}[2J".into()]]);
        assert!(!t.contains('\u{1b}'), "{t:?}");
        assert!(t.contains("a\\u{1b}[2J"), "{t:?}");
    }
}
