//! One module per schema version an existing deployment upgrades through.
//! Every test needs the server, so every test's path names `postgres`: that
//! is what `cargo xtask test-all --skip-postgres` filters out.

mod children;
mod dependencies;
mod durable_rows;
mod history;
mod partitions;
mod progress;
mod release_backlog;
mod reservation_index;
mod waiting_list_index;
mod workflow_names;
