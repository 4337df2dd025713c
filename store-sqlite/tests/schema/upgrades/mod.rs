//! Upgrading every older schema in place, one module per feature (named in its
//! module doc with the schema version that added it).
//!
//! Each test builds a file an older binary would have left, either in plain SQL
//! (version 1) or by writing jobs with today's store and rewinding the schema
//! and the ledger (`support::execute`, `support::back_to_v6`), then opens it
//! again and checks that only the missing versions were applied, that the old
//! rows were kept (in place: same rowids, no table rebuild), that the new
//! feature works at once, and, where it says so, that reopening applies
//! nothing. Version 8 (digests kept only on deduped rows) is covered by the
//! `digests` test binary.

mod dependencies;
mod error_history;
mod from_v1;
mod priorities_and_workers;
mod progress;
mod queues;
mod release_backlog;
mod throughput_history;
mod workflow_names;
