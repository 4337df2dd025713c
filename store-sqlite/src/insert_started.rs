//! New rows with dependencies (or of a workflow, with its `workflow_id` and
//! `step`) into `duraq_jobs`, one per statement: such a row
//! is inserted in the status its dependencies gave it
//! ([`duraq_core::rules::apply_start`]: `queued`, `pending` or `cancelled`),
//! with its edges as JSON text in `depends_on`, so it is not a fresh row of
//! [`crate::insert`]'s statements, which stay as they are for every other job.
//! It binds the same [`BOUND`] columns and the [`STARTED`] ones; the rest of
//! [`FRESH`] are literals, as there.

use std::sync::OnceLock;

use duraq_core::{JobStatus, Result};
use rusqlite::ToSql;

use crate::insert::{bound, execute, never_ran, not_insertable, NewRow, BOUND, FRESH};
use crate::rows::json_text;
use crate::tx::Tx;

/// The columns a row with dependencies binds after [`BOUND`]: how it started
/// ([`duraq_core::rules::apply_start`]: `queued`, `pending` or `cancelled`)
/// and its edges. Its statement takes the other [`FRESH`] values as literals.
const STARTED: [&str; 7] = [
    "status",
    "open_dependencies",
    "cancelled_at_ms",
    "last_error",
    "depends_on",
    "workflow_id",
    "step",
];

/// `INSERT INTO duraq_jobs …` of one row with dependencies, built once.
fn started_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let fresh: Vec<&(&str, &str)> =
            FRESH.iter().filter(|(c, _)| !STARTED.contains(c)).collect();
        let columns: Vec<&str> = (BOUND.iter().chain(&STARTED).copied())
            .chain(fresh.iter().map(|(c, _)| *c))
            .collect();
        let mut values = vec!["?"; BOUND.len() + STARTED.len()];
        values.extend(fresh.iter().map(|(_, v)| *v));
        format!(
            "INSERT INTO duraq_jobs ({}) VALUES ({})",
            columns.join(", "),
            values.join(", ")
        )
    })
}

/// Inserts one row with dependencies in the status its start gave it, with
/// `depends_on` as JSON text (the edge rows are [`crate::dependencies`]'s).
pub(crate) fn insert_started(tx: &Tx<'_>, r: &NewRow<'_>) -> Result<()> {
    let j = r.job();
    let started = matches!(
        j.status,
        JobStatus::Queued | JobStatus::Pending | JobStatus::Cancelled
    );
    let plain = j.depends_on.is_empty() && j.workflow_id.is_none();
    if !started || plain || !never_ran(j) {
        return Err(not_insertable(&j.id));
    }
    let depends_on = (!j.depends_on.is_empty())
        .then(|| json_text(&j.depends_on))
        .transpose()?;
    let status = j.status.as_str();
    let mut values: Vec<&dyn ToSql> = Vec::with_capacity(BOUND.len() + STARTED.len());
    values.extend(bound(r));
    values.extend([
        &status as &dyn ToSql,
        &j.open_dependencies,
        &j.cancelled_at_ms,
        &j.last_error,
        &depends_on,
        &j.workflow_id,
        &j.step,
    ]);
    execute(tx, started_sql(), values)
}
