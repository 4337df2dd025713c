//! Every limit a job's input is checked against and the defaults a store or
//! the worker applies when an option is left out, in one place to look them
//! up. The worker's own defaults (slots, timeouts, intervals) are in
//! [`crate::worker`].

pub use crate::history::{HISTORY_RETENTION_MS, MINUTE_MS};
pub use crate::keys::MAX_NAME_CHARS;
pub use crate::options::{DEFAULT_MAX_RETRIES, MAX_RUN_IN_MS};
pub use crate::progress::{MAX_LINE_BYTES, MAX_LOG_LINES, PROGRESS_FLUSH_INTERVAL_MS};
pub use crate::resolve::MAX_ID_BYTES;
pub use crate::search::DEFAULT_SCAN_LIMIT;
pub use crate::transitions::MAX_OUTPUT_BYTES;
pub use crate::workers::{FORGET_WORKERS_AFTER_MS, UNHANDLED_SCAN_LIMIT};
