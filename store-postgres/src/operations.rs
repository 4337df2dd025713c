//! Durable operation records (the mailer's delivery operations): written with
//! their idempotent enqueue ([`crate::enqueue`]), read back before each
//! attempt, stamped with the first attempt's start time, and given a result.

use crate::backend::row::Row;
use duraq_core::inspect::Operation;
use duraq_core::{Error, ErrorCode, Result};

use crate::backend::db::Db;
use crate::error::corrupt;

fn operation_from_row(row: &Row) -> Result<Operation> {
    let data: String = row.get(1);
    let result: Option<String> = row.get(5);
    Ok(Operation {
        key: row.get(0),
        data: serde_json::from_str(&data).map_err(|e| corrupt(format!("operation data: {e}")))?,
        job_id: row.get(2),
        created_at_ms: row.get(3),
        first_attempt_started_at_ms: row.get(4),
        result: result
            .map(|r| serde_json::from_str(&r))
            .transpose()
            .map_err(|e| corrupt(format!("operation result: {e}")))?,
    })
}

fn operation_not_found(key: &str) -> Error {
    Error::NotFound {
        code: ErrorCode::OperationNotFound,
        message: format!("no operation {key:?}"),
    }
}

const OPERATION_COLUMNS: &str =
    "op_key, data, job_id, created_at_ms, first_attempt_started_at_ms, result";

/// The operation `key`, if recorded.
pub(crate) async fn get(db: &Db<'_>, key: &str) -> Result<Option<Operation>> {
    let sql = format!("SELECT {OPERATION_COLUMNS} FROM {{s}}.duraq_operations WHERE op_key = $1");
    db.query_opt(&sql, &[&key])
        .await?
        .as_ref()
        .map(operation_from_row)
        .transpose()
}

/// Stamps the first attempt's start time (once) on operation `key`.
pub(crate) async fn start_attempt(db: &Db<'_>, key: &str, now: i64) -> Result<Operation> {
    let sql = format!(
        "UPDATE {{s}}.duraq_operations SET first_attempt_started_at_ms = \
         COALESCE(first_attempt_started_at_ms, $2) WHERE op_key = $1 RETURNING {OPERATION_COLUMNS}"
    );
    let row = db.query_opt(&sql, &[&key, &now]).await?;
    operation_from_row(&row.ok_or_else(|| operation_not_found(key))?)
}

/// Records the result of operation `key`.
pub(crate) async fn record_result(
    db: &Db<'_>,
    key: &str,
    result: &serde_json::Value,
) -> Result<()> {
    let sql = "UPDATE {s}.duraq_operations SET result = $2 WHERE op_key = $1";
    let updated = db.execute(sql, &[&key, &result.to_string()]).await?;
    if updated == 0 {
        return Err(operation_not_found(key));
    }
    Ok(())
}
