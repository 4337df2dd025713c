//! The job table, `duraq_jobs`, described once: one line per column with its
//! type and definition, the schema version that introduced it, what a fresh
//! row and a saved transition do with it, and how it maps to a
//! [`duraq_core::Job`] field (or, for the store's own columns, who writes it).
//!
//! Everything that names the job's columns is derived from this list: the
//! select list ([`JOB_COLUMNS`]) and the reading of a row by column
//! ([`col`], [`job_from_row`]), the fresh rows' `INSERT` arrays and `COPY`
//! tuples, the write-back of a transition, and the table in the declared
//! schema with the columns an upgrade adds in place ([`statements`]). A
//! stored field is one line here plus its meaning in core.
//!
//! The store's own columns: `args_digest` (the digest of the canonical args
//! text, which dedupe and idempotency compare), `dedupe_key` (set only for a
//! registered dedupe scope, see [`crate::dedupe`]), `reservation_key` (the
//! concurrency key a running job holds a slot of; it stays on the row after a
//! completion, see [`crate::rows::Loaded`]) and `has_dependents` (some job
//! depends on this one, written by [`crate::dependencies`]) and
//! `has_durable_rows` (an ephemeral job that has steps or signals to delete
//! with it, written by [`crate::steps`] and [`crate::signals`], read by
//! [`crate::ephemeral`]).

mod declare;
pub(crate) mod statements;
mod value;

use crate::backend::row::Row;
use duraq_core::{Job, Result};

use declare::{job_columns, skip_separator};
pub(crate) use declare::{Column, Fresh, Kind, Save};
pub(crate) use value::{parse_status, ArgsText, Array, Source, Value};
use value::{Args, Edges, Json, JsonOpt, Message, Plain, Status, Word};

job_columns! {
    // column          type   definition                          since fresh    save  value
    id                 Text  "text NOT NULL"                         1  Bind     Key   job(Plain);
    job_name           Text  "text NOT NULL"                         1  Bind     Keep  job(Plain);
    args               Text  "text NOT NULL"                         1  Bind     Keep  job(Args);
    args_digest        Text  "text NOT NULL"                         1  Bind     Keep  internal(unread, args_digest);
    queue              Text  "text NOT NULL"                         1  Bind     Keep  job(Plain);
    status             Text  "text NOT NULL"                         1  Bind     Set   job(Status);
    attempts           Int8  "bigint NOT NULL"                       1  Bind     Set   job(Plain);
    max_retries        Int8  "bigint NOT NULL"                       1  Bind     Keep  job(Plain);
    scheduled_at_ms    Int8  "bigint NOT NULL"                       1  Bind     Set   job(Plain);
    created_at_ms      Int8  "bigint NOT NULL"                       1  Bind     Keep  job(Plain);
    handed_off_at_ms   Int8  "bigint"                                1  Default  Set   job(Plain);
    completed_at_ms    Int8  "bigint"                                1  Default  Set   job(Plain);
    failed_at_ms       Int8  "bigint"                                1  Default  Set   job(Plain);
    cancelled_at_ms    Int8  "bigint"                                1  Default  Set   job(Plain);
    orphaned_at_ms     Int8  "bigint"                                1  Default  Set   job(Plain);
    last_error         Text  "text"                                  1  Default  Set   job(Message);
    worker_id          Text  "text"                                  1  Default  Set   job(Plain);
    handoff_id         Text  "text"                                  1  Default  Set   job(Plain);
    schedule_key       Text  "text"                                  1  Bind     Set   job(Plain);
    schedule_order     Int8  "bigint"                                1  Bind     Set   job(Plain);
    concurrency_key    Text  "text"                                  1  Bind     Keep  job(Plain);
    max_concurrency    Int8  "bigint"                                1  Bind     Keep  job(Plain);
    idempotency_key    Text  "text"                                  1  Bind     Keep  job(Plain);
    timeout_ms         Int8  "bigint"                                1  Bind     Keep  job(Plain);
    reservation_key    Text  "text"                                  1  Default  Set   internal(read, reservation);
    dedupe_key         Text  "text"                                  2  Scoped   Keep  internal(unread, dedupe_key);
    errors             Text  "text NOT NULL DEFAULT '[]'"            5  Default  Set   job(Json);
    priority           Int8  "bigint NOT NULL DEFAULT 0"             6  Bind     Set   job(Plain);
    rate_key           Text  "text"                                  6  Bind     Keep  job(Plain);
    rate_max           Int8  "bigint"                                6  Bind     Keep  job(Plain);
    rate_period_ms     Int8  "bigint"                                6  Bind     Keep  job(Plain);
    trace_parent       Text  "text"                                  8  Bind     Keep  job(Plain);
    depends_on         Jsonb "jsonb"                                 9  Default  Keep  job(Edges);
    open_dependencies  Int8  "bigint NOT NULL DEFAULT 0"             9  Default  Set   job(Plain);
    output             Text  "text"                                  9  Default  Set   job(JsonOpt);
    workflow_id        Text  "text"                                  9  Default  Keep  job(Plain);
    step               Text  "text"                                  9  Default  Keep  job(Plain);
    has_dependents     Bool  "boolean NOT NULL DEFAULT false"        9  Default  Keep  internal(read, unwritten);
    workflow_name      Text  "text"                                 14  Bind     Keep  job(Plain);
    expires_at_ms      Int8  "bigint"                               16  Bind     Keep  job(Plain);
    cancel_reason      Text  "text"                                 17  Default  Set   job(Word);
    cost               Int8  "bigint NOT NULL DEFAULT 1"            17  Bind     Keep  job(Plain);
    keep_completed     Bool  "boolean NOT NULL DEFAULT true"        17  Bind     Keep  job(Plain);
    aged_steps         Int8  "bigint NOT NULL DEFAULT 0"            17  Default  Set   job(Plain);
    sequence_key       Text  "text"                                 18  Bind     Keep  job(Plain);
    sequence_continues Bool  "boolean NOT NULL DEFAULT false"       18  Bind     Keep  job(Plain);
    fairness_key       Text  "text"                                 19  Bind     Keep  job(Plain);
    awaiting_signal    Text  "text"                                 20  Default  Set   job(Plain);
    parent_id          Text  "text"                                 21  Bind     Keep  job(Plain);
    has_durable_rows   Bool  "boolean NOT NULL DEFAULT false"       22  Default  Keep  internal(unread, unwritten);
}

/// The digest of a fresh row's args.
fn args_digest<'a>(s: &Source<'a>) -> Value<'a> {
    Value::Text(s.args.map(|a| a.digest.as_str().into()))
}

/// The dedupe key `COPY` decided.
fn dedupe_key<'a>(s: &Source<'a>) -> Value<'a> {
    Value::Text(s.dedupe_key.map(Into::into))
}

/// The reservation a saved row holds.
fn reservation<'a>(s: &Source<'a>) -> Value<'a> {
    Value::Text(s.reservation.map(Into::into))
}

/// Written only by statements of its own ([`crate::dependencies`]).
fn unwritten<'a>(_: &Source<'a>) -> Value<'a> {
    Value::Bool(None)
}

#[cfg(test)]
mod tests;
