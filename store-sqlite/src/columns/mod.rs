//! The job row of `duraq_jobs`, described once ([`COLUMNS`]): per column its
//! name, its SQL definition and the schema version that added it, how the
//! insert statements write it, whether a transition may change it, and how
//! its value is read from and written to a [`duraq_core::Job`].
//!
//! Everything else that names the row's columns is derived from that list:
//! the table in [`crate::schema_def`] ([`job_table`]), the SELECT list and the
//! index of each field in it ([`JOB_COLUMNS`], [`col`](mod@col)), reading a row
//! ([`job_from_row`]), the insert statements of [`crate::insert`] and
//! [`crate::insert_started`], and the `UPDATE` of [`crate::rows::save_job`]
//! (see [`sql`]). A column was once declared by position in about ten places
//! of this store; a new stored job field is now one line here, and a `Job`
//! field without its line does not compile ([`job_from_row`] builds the
//! struct whole).
//!
//! A line reads `name: value = column(type, rest, since, insert)`, followed
//! by `.saved()` when a transition may change the column, where
//! `value` says how the column holds its value (see [`codec`]): `field` (the
//! `Job` field of that name, as is), `status`, `json` (JSON text),
//! `json_or_null` (JSON text, NULL when empty), `word` (an optional word
//! of a closed set, such as a cancel reason), `args` (JSON text, inserted
//! from the caller's canonical text), `new_row` (not a `Job` field: a new
//! row's own value, see [`crate::new_row::NewRow`]) or `store` (not a `Job`
//! field: written by the store later, never by an insert). A new column
//! comes with the schema version that adds it ([`crate::SCHEMA_VERSIONS`]).
//!
//! The lines keep the table's column order, which is a fresh file's order;
//! the SELECT list and the inserts name the columns in that order too.

mod codec;
pub(crate) mod sql;

use codec::job_columns;
pub(crate) use sql::{JOB_COLUMNS, JOB_COLUMN_COUNT, REPORT_COLUMNS};

/// A column of any duraq table: its SQL definition and the schema version
/// that added it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) ty: &'static str,
    /// The column definition after its name (used by CREATE and ADD COLUMN).
    pub(crate) rest: &'static str,
    pub(crate) since: i64,
}

/// A column named `name`.
pub(crate) const fn col(
    name: &'static str,
    ty: &'static str,
    rest: &'static str,
    since: i64,
) -> Column {
    Column {
        name,
        ty,
        rest,
        since,
    }
}

/// How the insert statements write a column of a new row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Insert {
    /// Bound from the new row by both statements.
    Bind,
    /// The same SQL literal in every new row.
    Fresh(&'static str),
    /// A fresh row's literal (or, `None`, the column's default); a row with
    /// dependencies or of a workflow binds it (see [`crate::insert_started`]).
    Started(Option<&'static str>),
    /// Left to the column's default by both statements.
    Omitted,
}

/// What a column holds, as far as the derived statements care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A `Job` field: selected, read into the job.
    Field,
    /// The job's args: a `Job` field that a report's load skips.
    Args,
    /// Not a `Job` field (the store's own bookkeeping).
    Internal,
}

/// One column of `duraq_jobs`.
pub(crate) struct JobColumn {
    pub(crate) column: Column,
    pub(crate) insert: Insert,
    /// Whether a transition may change it ([`crate::rows::save_job`] writes it).
    pub(crate) saved: bool,
    pub(crate) holds: Holds,
    /// Its value in a job (what [`crate::rows::save_job`] binds).
    pub(crate) write: codec::WriteFn,
    /// Its value in a new row (what the insert statements bind).
    pub(crate) bind: codec::BindFn,
}

impl JobColumn {
    const fn new(
        name: &'static str,
        definition: Definition,
        holds: Holds,
        write: codec::WriteFn,
        bind: codec::BindFn,
    ) -> Self {
        let Definition {
            ty,
            rest,
            since,
            insert,
            saved,
        } = definition;
        Self {
            column: col(name, ty, rest, since),
            insert,
            saved,
            holds,
            write,
            bind,
        }
    }
}

/// A line's definition: `type`, the rest of its SQL, the version that added
/// it, and how inserts write it.
pub(crate) struct Definition {
    ty: &'static str,
    rest: &'static str,
    since: i64,
    insert: Insert,
    saved: bool,
}

const fn column(ty: &'static str, rest: &'static str, since: i64, insert: Insert) -> Definition {
    Definition {
        ty,
        rest,
        since,
        insert,
        saved: false,
    }
}

impl Definition {
    /// A transition may change the column: [`crate::rows::save_job`] writes it.
    const fn saved(self) -> Self {
        Self {
            saved: true,
            ..self
        }
    }
}

use Insert::{Bind, Fresh, Omitted, Started};

job_columns! {
    id: field = column("TEXT", "NOT NULL PRIMARY KEY", 1, Bind),
    job_name: field = column("TEXT", "NOT NULL", 1, Bind),
    args: args = column("TEXT", "NOT NULL", 1, Bind),
    queue: field = column("TEXT", "NOT NULL", 1, Bind),
    status: status = column("TEXT", "NOT NULL", 1, Started(Some("'queued'"))).saved(),
    attempts: field = column("INTEGER", "NOT NULL", 1, Fresh("0")).saved(),
    max_retries: field = column("INTEGER", "NOT NULL", 1, Bind),
    scheduled_at_ms: field = column("INTEGER", "NOT NULL", 1, Bind).saved(),
    created_at_ms: field = column("INTEGER", "NOT NULL", 1, Bind),
    handed_off_at_ms: field = column("INTEGER", "", 1, Fresh("NULL")).saved(),
    completed_at_ms: field = column("INTEGER", "", 1, Fresh("NULL")).saved(),
    failed_at_ms: field = column("INTEGER", "", 1, Fresh("NULL")).saved(),
    cancelled_at_ms: field = column("INTEGER", "", 1, Started(Some("NULL"))).saved(),
    orphaned_at_ms: field = column("INTEGER", "", 1, Fresh("NULL")).saved(),
    last_error: field = column("TEXT", "", 1, Started(Some("NULL"))).saved(),
    worker_id: field = column("TEXT", "", 1, Fresh("NULL")).saved(),
    handoff_id: field = column("TEXT", "", 1, Fresh("NULL")).saved(),
    concurrency_key: field = column("TEXT", "", 1, Bind),
    max_concurrency: field = column("INTEGER", "", 1, Bind),
    idempotency_key: field = column("TEXT", "", 1, Bind),
    timeout_ms: field = column("INTEGER", "", 1, Bind),
    // The digest only on rows with a dedupe key, `''` on others (version 8).
    args_digest: new_row = column("TEXT", "NOT NULL", 1, Bind),
    reservation_key: store = column("TEXT", "", 1, Omitted),
    schedule_key: field = column("TEXT", "", 2, Bind),
    schedule_order: field = column("INTEGER", "", 2, Bind),
    dedupe_key: new_row = column("TEXT", "", 3, Bind),
    // Rows older than the error history read `[]`.
    errors: json = column("TEXT", "NOT NULL DEFAULT '[]'", 6, Fresh("'[]'")).saved(),
    priority: field = column("INTEGER", "NOT NULL DEFAULT 0", 7, Bind).saved(),
    rate_key: field = column("TEXT", "", 7, Bind),
    rate_max: field = column("INTEGER", "", 7, Bind),
    rate_period_ms: field = column("INTEGER", "", 7, Bind),
    // NULL unless the job was enqueued with a trace context.
    trace_parent: field = column("TEXT", "", 10, Bind),
    depends_on: json_or_null = column("TEXT", "", 11, Started(None)),
    open_dependencies: field = column("INTEGER", "NOT NULL DEFAULT 0", 11, Started(None)).saved(),
    output: json_or_null = column("TEXT", "", 11, Omitted).saved(),
    workflow_id: field = column("TEXT", "", 11, Started(None)),
    step: field = column("TEXT", "", 11, Started(None)),
    workflow_name: field = column("TEXT", "", 13, Started(None)),
    expires_at_ms: field = column("INTEGER", "", 15, Bind),
    cancel_reason: word = column("TEXT", "", 16, Started(Some("NULL"))).saved(),
    cost: field = column("INTEGER", "NOT NULL DEFAULT 1", 16, Bind),
    keep_completed: field = column("INTEGER", "NOT NULL DEFAULT 1", 16, Bind),
    aged_steps: field = column("INTEGER", "NOT NULL DEFAULT 0", 16, Fresh("0")).saved(),
    sequence_key: field = column("TEXT", "", 17, Bind),
    sequence_continues: field = column("INTEGER", "NOT NULL DEFAULT 0", 17, Bind),
    fairness_key: field = column("TEXT", "", 18, Bind),
    // The signal a pending job waits for (see `crate::signals`).
    awaiting_signal: field = column("TEXT", "", 19, Fresh("NULL")).saved(),
    // The job that spawned this one and waits for it.
    parent_id: field = column("TEXT", "", 20, Bind),
}

/// The columns of `duraq_jobs` for the declared schema, in table order.
pub(crate) const fn job_table() -> [Column; COLUMNS.len()] {
    let mut table = [COLUMNS[0].column; COLUMNS.len()];
    let mut i = 0;
    while i < COLUMNS.len() {
        table[i] = COLUMNS[i].column;
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests;
