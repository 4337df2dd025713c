//! `duraq-tenants`: tenant providers, migration catalogs, read-only migration-ledger
//! readers and the deploy preflight report (SPEC §11).
//!
//! Not built yet: the tenants issue fills this crate.
