//! Runnable examples of duraq, one per file under `examples/examples/`
//! (`cargo run -p duraq-examples --example web_service`, `worker`, `mail`,
//! `tenant_preflight`), each on SQLite in a temporary folder. `tests/run_examples.rs`
//! runs every one of them under `cargo test`.
//!
//! The library itself is empty. Under `cargo test` it carries the repository's
//! README as its documentation, so every `rust` code block of the README is compiled
//! (and run, unless marked `no_run`) as a doctest of this package: the snippets
//! cannot drift from the API. `docs/testing.md` and `docs/durable.md` are
//! compiled the same way.

#![cfg_attr(doctest, doc = include_str!("../../README.md"))]

/// The user's guide page on testing jobs, whose `rust` blocks compile (and run)
/// as doctests of this package, with `duraq-testkit` as a dev-dependency.
#[cfg(doctest)]
#[doc = include_str!("../../docs/testing.md")]
mod testing_guide {}

/// The user's guide page on durable jobs: its order saga runs as a doctest,
/// on the in-memory store and on a real SQLite file, through the test kit.
#[cfg(doctest)]
#[doc = include_str!("../../docs/durable.md")]
mod durable_guide {}
