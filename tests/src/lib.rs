//! `duraq-tests`: the one conformance suite and the one model-based property suite
//! that every [`duraq_core::Store`] must pass unchanged.
//!
//! Each area of the job model is a module of `pub async fn case(h: &Harness)` cases
//! written once against `Arc<dyn Store>`. A store crate plugs in by implementing
//! [`StoreFactory`] (a fresh, empty store per call, reading a [`duraq_core::ManualClock`])
//! and invoking [`store_suite!`] in an integration test:
//!
//! ```text
//! // tests/tests/conformance_<store>.rs
//! struct MyFactory { /* e.g. a temp folder, or a server URL */ }
//! #[async_trait::async_trait]
//! impl duraq_tests::StoreFactory for MyFactory {
//!     async fn new_store(&self, clock: duraq_core::ManualClock) -> std::sync::Arc<dyn duraq_core::Store> {
//!         /* open a fresh, empty store reading `clock` */
//!     }
//! }
//! duraq_tests::store_suite!(my_store, MyFactory::new());
//! duraq_tests::model_suite!(my_store_matches_reference, MyFactory::new());
//! ```
//!
//! [`SqliteFactory`] and `tests/conformance_postgres.rs` are complete examples.
//!
//! The factory expression is evaluated once per case and kept alive (inside the
//! [`Harness`]) until the case ends, so it may own temp files or databases.

pub mod aging;
pub mod app_clients;
pub mod bulk;
pub mod cancel_running;
pub mod children;
pub mod claim;
pub mod concurrency;
pub mod costs;
pub mod counts;
pub mod cron_zones;
pub mod dedupe;
pub mod dependencies;
pub mod durable;
pub mod enqueue;
pub mod ephemeral;
pub mod error_history;
pub mod factories;
pub mod fairness;
pub mod fan_out;
pub mod harness;
pub mod history;
pub mod idempotency;
pub mod large_batches;
pub mod model;
pub mod model_gen;
pub mod model_ops;
mod model_side;
pub mod names;
pub mod normalization;
pub mod operations;
pub mod operator;
pub mod pause;
pub mod priority;
pub mod progress;
pub mod prune;
pub mod queue_counts;
pub mod rate_limits;
pub mod recovery;
pub mod retry;
pub mod run_in;
pub mod schedule_keys;
pub mod schedule_ownership;
pub mod search;
pub mod sequences;
pub mod signals;
pub mod trace_context;
pub mod wait;
pub mod workers;
pub mod workflow_append;
pub mod workflow_list;

mod suite;

pub use factories::{MemoryFactory, SqliteFactory};
pub use harness::{block_on, Harness, StoreFactory, StoreState, T0};
