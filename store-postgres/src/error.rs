//! The one place where PostgreSQL failures become duraq errors.
//!
//! Callers match on [`duraq_core::ErrorCode`], never on SQLSTATEs or message text,
//! so every driver and pool error passes through [`map_pg_error`] /
//! [`map_pool_error`]. Serialization failures and deadlocks become
//! [`Error::Busy`], which the transaction runner retries before giving up.

use duraq_core::{Error, ErrorCode};
use tokio_postgres::error::SqlState;

/// Maps a driver error to the duraq error kind its SQLSTATE stands for.
pub fn map_pg_error(err: tokio_postgres::Error) -> Error {
    let Some(state) = err.code().cloned() else {
        return Error::backend("PostgreSQL connection failed", err);
    };
    let message = err
        .as_db_error()
        .map_or_else(|| err.to_string(), |db| db.message().to_owned());
    match state {
        // Lost a serialization race or a deadlock: retried by the caller.
        SqlState::T_R_SERIALIZATION_FAILURE
        | SqlState::T_R_DEADLOCK_DETECTED
        | SqlState::LOCK_NOT_AVAILABLE => Error::Busy {
            message: format!("{} ({})", message, state.code()),
        },
        // A row that must be unique already exists: the only ones duraq does not
        // resolve with ON CONFLICT are job ids and operation keys.
        SqlState::UNIQUE_VIOLATION => Error::conflict(ErrorCode::IdempotencyConflict, message),
        SqlState::UNDEFINED_TABLE | SqlState::UNDEFINED_COLUMN | SqlState::INVALID_SCHEMA_NAME => {
            Error::schema(message)
        }
        _ => Error::backend(format!("PostgreSQL error {}: {message}", state.code()), err),
    }
}

/// Maps a pool error (no free connection, the server unreachable) to `Backend`,
/// keeping a database error's SQLSTATE mapping when there is one.
pub fn map_pool_error(err: deadpool_postgres::PoolError) -> Error {
    match err {
        deadpool_postgres::PoolError::Backend(e) => map_pg_error(e),
        other => Error::backend("PostgreSQL pool", other),
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
