//! The one place where PostgreSQL failures become duraq errors.
//!
//! Callers match on [`duraq_core::ErrorCode`], never on SQLSTATEs or message text,
//! so every driver and pool error passes through [`map_pg_error`] /
//! [`map_pool_error`] (and, where the server's address is known, their `_at`
//! forms, which share the same mapping). Serialization failures and deadlocks
//! become [`Error::Busy`], which the transaction runner retries before giving up.
//!
//! Every mapped error keeps the driver's error as its `source()`, so
//! [`duraq_core::inspect::error_chain`] prints the cause ("connection refused", "password
//! authentication failed"); a failure to reach the server also says which server
//! ([`Target`]: host and port from the parsed config, or the socket path — never
//! the password, which a URL may carry). An unreachable server used to print
//! `PostgreSQL connection failed` and nothing else.

use std::fmt;

use duraq_core::{Error, ErrorCode};
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

/// Where a store connects, for messages: `host:port` (several joined with `,`; a
/// Unix socket as its path) and the database name. Built from the parsed config,
/// so it can never contain the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// `127.0.0.1:5432`, `db1:5432,db2:5433` or `/run/postgresql/.s.PGSQL.5432`.
    pub addr: String,
    /// The database name (the user name when the URL names none, as libpq does).
    pub dbname: String,
}

impl Target {
    pub(crate) fn new(config: &tokio_postgres::Config) -> Self {
        let ports = config.get_ports();
        let port = |i: usize| match ports {
            [] => 5432,
            [one] => *one,
            many => many.get(i).copied().unwrap_or(5432),
        };
        let mut addrs: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| match host {
                Host::Tcp(name) => format!("{name}:{}", port(i)),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}/.s.PGSQL.{}", dir.display(), port(i)),
            })
            .collect();
        if addrs.is_empty() {
            addrs = config
                .get_hostaddrs()
                .iter()
                .enumerate()
                .map(|(i, ip)| format!("{ip}:{}", port(i)))
                .collect();
        }
        let dbname = config
            .get_dbname()
            .or_else(|| config.get_user())
            .unwrap_or("postgres");
        Self {
            addr: addrs.join(","),
            dbname: dbname.to_owned(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.dbname)
    }
}

/// Maps a driver error to the duraq error kind its SQLSTATE stands for.
pub fn map_pg_error(err: tokio_postgres::Error) -> Error {
    map(err, None)
}

/// Maps a pool error (no free connection, the server unreachable) to `Backend`,
/// keeping a database error's SQLSTATE mapping when there is one.
pub fn map_pool_error(err: deadpool_postgres::PoolError) -> Error {
    map_pool(err, None)
}

/// [`map_pg_error`] for an error while connecting to `target`.
pub(crate) fn map_pg_error_at(err: tokio_postgres::Error, target: &Target) -> Error {
    map(err, Some(target))
}

/// [`map_pool_error`] for a pool of connections to `target`.
pub(crate) fn map_pool_error_at(err: deadpool_postgres::PoolError, target: &Target) -> Error {
    map_pool(err, Some(target))
}

/// The mapping. `connecting` is set where the error can only come from opening a
/// connection (the pool creating one, the LISTEN connection), so that it names
/// the server.
fn map(err: tokio_postgres::Error, connecting: Option<&Target>) -> Error {
    let Some(state) = err.code().cloned() else {
        // No SQLSTATE: the server was not reached, or the connection broke.
        let message = match connecting {
            Some(target) => format!("PostgreSQL connection to {} failed", target.addr),
            None => "PostgreSQL connection failed".to_owned(),
        };
        return Error::backend(message, err);
    };
    let message = err
        .as_db_error()
        .map_or_else(|| err.to_string(), |db| db.message().to_owned());
    by_state(&state, message, Box::new(err), connecting)
}

/// Maps an error another PostgreSQL client reported (an application's sqlx
/// connection running duraq's statements, see [`crate::client`]) by its
/// SQLSTATE `code`, with the server's `message`, exactly as a tokio-postgres
/// error with that SQLSTATE maps. `source` stays the error's `source()`.
pub fn map_sqlstate(
    code: &str,
    message: &str,
    source: Box<dyn std::error::Error + Send + Sync>,
) -> Error {
    by_state(&SqlState::from_code(code), message.to_owned(), source, None)
}

/// The mapping of a server error by its SQLSTATE.
fn by_state(
    state: &SqlState,
    message: String,
    err: Box<dyn std::error::Error + Send + Sync>,
    connecting: Option<&Target>,
) -> Error {
    match *state {
        // Lost a serialization race or a deadlock: retried by the caller.
        SqlState::T_R_SERIALIZATION_FAILURE
        | SqlState::T_R_DEADLOCK_DETECTED
        | SqlState::LOCK_NOT_AVAILABLE => Error::Busy {
            message: format!("{} ({})", message, state.code()),
        },
        // A row that must be unique already exists: the only ones duraq does not
        // resolve with ON CONFLICT are job ids and operation keys.
        SqlState::UNIQUE_VIOLATION => Error::conflict(ErrorCode::IdempotencyConflict, message),
        // 53100: the server's disk is full (data directory or WAL).
        SqlState::DISK_FULL => Error::storage_full(
            format!(
                "PostgreSQL's disk is full ({message}); free space on the database \
                 server's data directory or WAL volume, then retry"
            ),
            err,
        ),
        // 25P01: a call on the application's connection (`…_in`) opened its
        // savepoint outside any transaction; nothing was written.
        SqlState::NO_ACTIVE_SQL_TRANSACTION => Error::invalid(
            ErrorCode::UnsupportedOption,
            format!(
                "{message}: a call inside your transaction needs one open on the connection \
                 (`BEGIN`, or your client's transaction)"
            ),
        ),
        SqlState::UNDEFINED_TABLE | SqlState::UNDEFINED_COLUMN | SqlState::INVALID_SCHEMA_NAME => {
            Error::schema(message)
        }
        // The URL names a database the server does not have (3D000).
        SqlState::INVALID_CATALOG_NAME => Error::database_not_found(match connecting {
            Some(target) => format!(
                "PostgreSQL at {} has no database {:?} ({message}); create it, then run `duraq migrate`",
                target.addr, target.dbname
            ),
            None => format!("{message}; create the database, then run `duraq migrate`"),
        }),
        _ => match connecting {
            // The server answered but refused (authentication, too many clients).
            Some(target) => Error::backend(
                format!(
                    "PostgreSQL connection to {} failed (SQLSTATE {})",
                    target.addr,
                    state.code()
                ),
                err,
            ),
            None => Error::backend(format!("PostgreSQL error {}: {message}", state.code()), err),
        },
    }
}

fn map_pool(err: deadpool_postgres::PoolError, target: Option<&Target>) -> Error {
    use deadpool_postgres::{PoolError, TimeoutType};
    let addr = target.map_or_else(String::new, |t| format!(" to {}", t.addr));
    match err {
        PoolError::Backend(e) => map(e, target),
        // Opening a connection took longer than the create timeout: an address
        // that drops packets, a server that does not answer.
        PoolError::Timeout(TimeoutType::Create) => {
            Error::backend(format!("PostgreSQL connection{addr} failed"), err)
        }
        other => Error::backend(format!("PostgreSQL pool of connections{addr}"), other),
    }
}

/// Whether a failed transaction may simply be run again.
pub(crate) fn is_retryable(err: &Error) -> bool {
    matches!(err, Error::Busy { .. })
}

/// A stored value that duraq itself wrote but cannot read back.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::Backend {
        message: format!("unreadable row: {what}"),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real error with SQLSTATE 53100 from the server of `DATABASE_URL`
    /// (raised on purpose: filling a disk is not something a test can do).
    #[tokio::test]
    async fn disk_full_is_storage_full() {
        let url = std::env::var("DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .expect("DATABASE_URL is not set: run `cargo xtask pg` and export its URL");
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let err = client
            .batch_execute("DO $$ BEGIN RAISE EXCEPTION 'no space' USING ERRCODE = '53100'; END $$")
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::DISK_FULL));
        assert_eq!(map_pg_error(err).code(), ErrorCode::StorageFull);
    }

    #[test]
    fn targets_name_hosts_ports_sockets_and_never_the_password() {
        let target = |url: &str| Target::new(&url.parse().unwrap());
        let tcp = target("postgres://app:hunter2@127.0.0.1:9/jobs");
        assert_eq!(
            (tcp.addr.as_str(), tcp.dbname.as_str()),
            ("127.0.0.1:9", "jobs")
        );
        assert_eq!(tcp.to_string(), "127.0.0.1:9/jobs");
        let default_port = target("postgres://app:hunter2@db.internal");
        assert_eq!(default_port.to_string(), "db.internal:5432/app");
        let several = target("host=a,b port=1,2 user=u password=hunter2 dbname=d");
        assert_eq!(several.addr, "a:1,b:2");
        let socket = target("host=/run/postgresql user=u password=hunter2");
        assert_eq!(socket.addr, "/run/postgresql/.s.PGSQL.5432");
        for t in [tcp, default_port, several, socket] {
            assert!(!format!("{t} {t:?}").contains("hunter2"));
        }
    }
}
