//! What a tenant error may print: its cause, on one line, and never a password.
//!
//! Backend errors do not say much in their own `Display`: a
//! `tokio_postgres::Error` prints `db error` or `error connecting to server`
//! and keeps the server's message or the refused connection in its source, and
//! a failed SQLite call keeps its result code there. A tenant error that printed
//! only that told an operator nothing, so every message of this crate is built
//! with [`with_cause`], which renders the whole chain (`outer: cause: root`,
//! the server's message with its SQLSTATE, detail and hint, newlines folded)
//! into the message itself. Database URLs and PostgreSQL targets are printed
//! through [`redact_url`] and [`pg_target`], which leave the password out, and
//! so is the `Debug` of [`Tenant`](crate::Tenant) and
//! [`TenantSource`](crate::TenantSource).

use std::error::Error as StdError;
use std::fmt::Display;

use tokio_postgres::error::DbError;

/// A boxed source error from a backend.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `context: <cause chain>` (just `context` without a cause, or when it already
/// ends with the rendered cause).
pub(crate) fn with_cause(context: impl Display, cause: Option<&BoxError>) -> String {
    let context = context.to_string();
    let Some(cause) = cause else { return context };
    let described = describe(cause.as_ref());
    if context.is_empty() {
        described
    } else if described.is_empty() || context.ends_with(&described) {
        context
    } else {
        format!("{context}: {described}")
    }
}

/// An error and its sources as one line; a link whose text the line already ends
/// with is skipped, so a wrapper that repeats its source is not printed twice.
pub(crate) fn describe(err: &(dyn StdError + 'static)) -> String {
    let mut out = String::new();
    let mut next = Some(err);
    while let Some(link) = next {
        let (text, last) = render(link);
        let text = text.replace("\r\n", "; ").replace('\n', "; ");
        if !text.is_empty() && !out.ends_with(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        next = if last { None } else { link.source() };
    }
    out
}

/// One link's text, and whether it already said everything below it.
fn render(link: &(dyn StdError + 'static)) -> (String, bool) {
    if let Some(pg) = link.downcast_ref::<tokio_postgres::Error>() {
        if let Some(db) = pg.as_db_error() {
            return (server_message(db), true);
        }
    }
    if let Some(db) = link.downcast_ref::<DbError>() {
        return (server_message(db), true);
    }
    if let Some(rusqlite::Error::SqliteFailure(code, Some(message))) =
        link.downcast_ref::<rusqlite::Error>()
    {
        let text = format!(
            "{message} (SQLite {:?}, code {})",
            code.code, code.extended_code
        );
        return (text, true);
    }
    (link.to_string(), false)
}

/// `relation "x" does not exist (SQLSTATE 42P01); detail: …; hint: …`.
fn server_message(db: &DbError) -> String {
    let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
    if let Some(detail) = db.detail() {
        text.push_str(&format!("; detail: {detail}"));
    }
    if let Some(hint) = db.hint() {
        text.push_str(&format!("; hint: {hint}"));
    }
    text
}

/// `url` with the password of its user info and any `password=` parameter
/// replaced by `***`.
///
/// `postgres://u:secret@h/db?password=x` → `postgres://u:***@h/db?password=***`.
pub(crate) fn redact_url(url: &str) -> String {
    let (main, fragment) = match url.split_once('#') {
        Some((m, f)) => (m, Some(f)),
        None => (url, None),
    };
    let (base, query) = match main.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (main, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => authority.to_string(),
                },
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => base.to_string(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Where a PostgreSQL config connects, without its password:
/// `user@host:port/dbname` (hosts joined by `,`).
pub(crate) fn pg_target(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost".to_string()
    } else {
        hosts.join(",")
    };
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let dbname = config.get_dbname().unwrap_or_default();
    format!("{user}{hosts}/{dbname}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        let url = "postgres://u:se%3Acret@h:5/db?sslmode=disable&password=x#s";
        assert_eq!(
            redact_url(url),
            "postgres://u:***@h:5/db?sslmode=disable&password=***#s"
        );
        assert_eq!(redact_url("sqlite:a.db"), "sqlite:a.db");
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        let config: tokio_postgres::Config = url.parse().unwrap();
        assert_eq!(pg_target(&config), "u@h:5/db");
    }

    #[test]
    fn a_cause_is_not_repeated() {
        let io: BoxError = Box::new(std::io::Error::other("connection refused"));
        assert_eq!(
            with_cause("connect", Some(&io)),
            "connect: connection refused"
        );
        assert_eq!(
            with_cause("connect: connection refused", Some(&io)),
            "connect: connection refused"
        );
        assert_eq!(with_cause("ctx", None), "ctx");
    }
}
