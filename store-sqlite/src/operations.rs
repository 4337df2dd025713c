//! Durable operation records (the mailer's delivery operations): written with
//! their idempotent enqueue, read back before each attempt, stamped with the
//! first attempt's start time, and given a result.

use duraq_core::inspect::Operation;
use duraq_core::{Error, ErrorCode, Result};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::SqlResult;
use crate::rows::json_text;
use crate::tx::Tx;

fn not_found(key: &str) -> Error {
    Error::NotFound {
        code: ErrorCode::OperationNotFound,
        message: format!("no operation {key:?}"),
    }
}

fn parse_json(col: usize, text: &str) -> rusqlite::Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, e.into())
    })
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<Operation> {
    let data: String = row.get(1)?;
    let result: Option<String> = row.get(5)?;
    Ok(Operation {
        key: row.get(0)?,
        data: parse_json(1, &data)?,
        job_id: row.get(2)?,
        created_at_ms: row.get(3)?,
        first_attempt_started_at_ms: row.get(4)?,
        result: result.map(|r| parse_json(5, &r)).transpose()?,
    })
}

/// Reads one operation record.
pub(crate) fn get(conn: &Connection, key: &str) -> Result<Option<Operation>> {
    conn.prepare_cached(
        "SELECT key, data, job_id, created_at_ms, first_attempt_started_at_ms, result \
         FROM duraq_operations WHERE key = ?1",
    )
    .db()?
    .query_row([key], from_row)
    .optional()
    .db()
}

/// Stamps `firstAttemptStartedAtMs` = now if unset and returns the row.
pub(crate) fn start_attempt(tx: &mut Tx<'_>, key: &str) -> Result<Operation> {
    tx.conn
        .prepare_cached(
            "UPDATE duraq_operations SET first_attempt_started_at_ms = ?2 \
             WHERE key = ?1 AND first_attempt_started_at_ms IS NULL",
        )
        .db()?
        .execute(params![key, tx.now])
        .db()?;
    get(tx.conn, key)?.ok_or_else(|| not_found(key))
}

/// Stores the outcome of an operation.
pub(crate) fn record_result(tx: &mut Tx<'_>, key: &str, result: &serde_json::Value) -> Result<()> {
    let updated = tx
        .conn
        .prepare_cached("UPDATE duraq_operations SET result = ?2 WHERE key = ?1")
        .db()?
        .execute(params![key, json_text(result)?])
        .db()?;
    if updated == 0 {
        return Err(not_found(key));
    }
    Ok(())
}
