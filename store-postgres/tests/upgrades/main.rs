//! Upgrades of an older PostgreSQL schema to today's, one module per schema
//! version that changed something an existing deployment has rows in: each
//! takes a fresh schema back to before that version by hand ([`rewind`]),
//! reopens it, and checks that the upgrade kept every row and count, rewrote
//! no table it should alter in place, and that the new feature works at once.
//! The versions before 7 are checked by the `migrations` test binary.
//!
//! One binary rather than one per version, so the setup is shared and built
//! once. Needs `DATABASE_URL` (the tests fail loudly without it).

#[path = "../common/mod.rs"]
mod common;
mod rewind;

mod postgres;
