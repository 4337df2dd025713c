//! The SQLite schema on real files: what opening or `migrate` creates in a new
//! file, which files it refuses and leaves untouched, which indexes the hot
//! statements read, how every older schema is upgraded in place (rows
//! kept, the new feature working at once, reopening applying nothing), and
//! that the operator's guide lists every version.
//!
//! One binary, so that the setup these checks repeat is written once, in
//! `support`: a file in a temporary directory, an older schema built by hand
//! or rewound from today's, and reading back the ledger, schema, rowids and
//! query plans.

#[path = "../common/mod.rs"]
mod common;

mod fresh_file;
mod query_plans;
mod refusals;
mod support;
mod upgrades;
mod versions_doc;
