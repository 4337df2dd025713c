//! New rows with dependencies (or of a workflow, with its `workflow_id` and
//! `step`) into `duraq_jobs`, one per statement: such a row
//! is inserted in the status its dependencies gave it
//! ([`duraq_core::driver::rules::apply_start`]: `queued`, `pending` or `cancelled`),
//! with its edges as JSON text in `depends_on`, so it is not a fresh row of
//! [`crate::insert`]'s statements, which stay as they are for every other job.
//! It binds the columns a fresh row binds and the `Started` ones of
//! [`crate::columns`] (how it started, its edges, its workflow); the other
//! fresh values are literals, as there.

use std::sync::OnceLock;

use duraq_core::{JobStatus, Result};

use crate::columns::sql::{started_sql, STARTED_BOUND};
use crate::insert::{bound, execute, never_ran, not_insertable};
use crate::new_row::NewRow;
use crate::tx::Tx;

/// Inserts one row with dependencies in the status its start gave it, with
/// `depends_on` as JSON text (the edge rows are [`crate::dependencies`]'s).
pub(crate) fn insert_started(tx: &Tx<'_>, r: &NewRow<'_>) -> Result<()> {
    static SQL: OnceLock<String> = OnceLock::new();
    let j = r.job;
    let started = matches!(
        j.status,
        JobStatus::Queued | JobStatus::Pending | JobStatus::Cancelled
    );
    let plain = j.depends_on.is_empty() && j.workflow_id.is_none();
    if !started || plain || !never_ran(j) {
        return Err(not_insertable(&j.id));
    }
    execute(tx, SQL.get_or_init(started_sql), bound(r, &STARTED_BOUND))
}
