//! The declared schema: every table with the version that introduced each
//! column (the job table's come from [`crate::columns`]). [`crate::schema`] compares a file against this
//! declaration and adds what is missing; no table or column is ever dropped or
//! changed in place, only extended by a new version.
//!
//! The history of versions and the indexes each introduced are
//! [`crate::schema_versions`].

use crate::columns::{col, job_table, Column, COLUMNS};

/// The ledger table recording applied versions.
pub const LEDGER_TABLE: &str = "duraq_migrations";
/// The ledger scope of the job store's own schema.
pub const MIGRATION_SCOPE: &str = "duraq.jobs";

pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) since: i64,
    pub(crate) columns: &'static [Column],
    pub(crate) constraints: &'static str,
}

/// The job table's columns, from the description of its row.
const JOBS: [Column; COLUMNS.len()] = job_table();

pub(crate) const TABLES: &[Table] = &[
    Table {
        name: LEDGER_TABLE,
        since: 1,
        columns: &[
            col("scope", "TEXT", "NOT NULL", 1),
            col("version", "INTEGER", "NOT NULL", 1),
            col("applied_at_ms", "INTEGER", "NOT NULL", 1),
        ],
        constraints: ", PRIMARY KEY (scope, version)",
    },
    Table {
        name: "duraq_jobs",
        since: 1,
        columns: &JOBS,
        constraints: "",
    },
    Table {
        name: "duraq_counts",
        since: 1,
        columns: &[
            col("name", "TEXT", "NOT NULL PRIMARY KEY", 1),
            col("value", "INTEGER", "NOT NULL", 1),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_idempotency",
        since: 1,
        columns: &[
            col("scope_digest", "TEXT", "NOT NULL PRIMARY KEY", 1),
            col("request_digest", "TEXT", "NOT NULL", 1),
            col("job_id", "TEXT", "NOT NULL", 1),
            col("created_at_ms", "INTEGER", "NOT NULL", 1),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_concurrency",
        since: 1,
        columns: &[
            col("key", "TEXT", "NOT NULL PRIMARY KEY", 1),
            col("max_concurrency", "INTEGER", "", 1),
            col("active_count", "INTEGER", "NOT NULL", 1),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_workers",
        since: 1,
        columns: &[
            col("worker_id", "TEXT", "NOT NULL PRIMARY KEY", 1),
            col("last_heartbeat_ms", "INTEGER", "NOT NULL", 1),
            col("host", "TEXT", "", 7),
            col("pid", "INTEGER", "", 7),
            col("queues", "TEXT", "", 7),
            col("job_names", "TEXT", "", 7),
            col("slots", "INTEGER", "", 7),
            col("started_at_ms", "INTEGER", "", 7),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_schedule_keys",
        since: 2,
        columns: &[
            col("key", "TEXT", "NOT NULL PRIMARY KEY", 2),
            col("job_id", "TEXT", "NOT NULL", 2),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_schedule_high_water",
        since: 2,
        columns: &[
            col("key", "TEXT", "NOT NULL PRIMARY KEY", 2),
            col("high_water", "INTEGER", "NOT NULL", 2),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_operations",
        since: 2,
        columns: &[
            col("key", "TEXT", "NOT NULL PRIMARY KEY", 2),
            col("data", "TEXT", "NOT NULL", 2),
            col("job_id", "TEXT", "NOT NULL", 2),
            col("created_at_ms", "INTEGER", "NOT NULL", 2),
            col("first_attempt_started_at_ms", "INTEGER", "", 2),
            col("result", "TEXT", "", 2),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_dedupe_scopes",
        since: 3,
        columns: &[
            col("job_name", "TEXT", "NOT NULL", 3),
            col("queue", "TEXT", "NOT NULL", 3),
            col("registered_at_ms", "INTEGER", "NOT NULL", 3),
        ],
        constraints: ", PRIMARY KEY (job_name, queue)",
    },
    Table {
        name: "duraq_queue_counts",
        since: 4,
        columns: &[
            col("queue", "TEXT", "NOT NULL PRIMARY KEY", 4),
            col("queued", "INTEGER", "NOT NULL", 4),
            col("handed_off", "INTEGER", "NOT NULL", 4),
            col("completed", "INTEGER", "NOT NULL", 4),
            col("failed", "INTEGER", "NOT NULL", 4),
            col("cancelled", "INTEGER", "NOT NULL", 4),
            col("orphaned", "INTEGER", "NOT NULL", 4),
            col("enqueued_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("completed_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("failed_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("retried_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("cancelled_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("orphaned_total", "INTEGER", "NOT NULL DEFAULT 0", 9),
            col("pending", "INTEGER", "NOT NULL DEFAULT 0", 11),
        ],
        constraints: "",
    },
    Table {
        name: HISTORY_TABLE,
        since: 9,
        columns: &[
            col("minute_ms", "INTEGER", "NOT NULL", 9),
            col("queue", "TEXT", "NOT NULL", 9),
            col("enqueued", "INTEGER", "NOT NULL", 9),
            col("completed", "INTEGER", "NOT NULL", 9),
            col("failed", "INTEGER", "NOT NULL", 9),
            col("retried", "INTEGER", "NOT NULL", 9),
            col("cancelled", "INTEGER", "NOT NULL", 9),
            col("orphaned", "INTEGER", "NOT NULL", 9),
        ],
        constraints: ", PRIMARY KEY (minute_ms, queue)",
    },
    Table {
        name: PAUSED_QUEUES_TABLE,
        since: 5,
        columns: &[
            col("queue", "TEXT", "NOT NULL PRIMARY KEY", 5),
            col("paused_at_ms", "INTEGER", "NOT NULL", 5),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_rate_limits",
        since: 7,
        columns: &[
            col("key", "TEXT", "NOT NULL PRIMARY KEY", 7),
            col("max_starts", "INTEGER", "NOT NULL", 7),
            col("period_ms", "INTEGER", "NOT NULL", 7),
        ],
        constraints: "",
    },
    Table {
        name: PROGRESS_TABLE,
        since: 10,
        columns: &[
            col("job_id", "TEXT", "NOT NULL PRIMARY KEY", 10),
            col("fraction", "REAL", "", 10),
            col("message", "TEXT", "", 10),
            col("updated_at_ms", "INTEGER", "NOT NULL", 10),
            col("lines_total", "INTEGER", "NOT NULL", 10),
        ],
        constraints: "",
    },
    Table {
        name: LOGS_TABLE,
        since: 10,
        columns: &[
            col("job_id", "TEXT", "NOT NULL", 10),
            col("seq", "INTEGER", "NOT NULL", 10),
            col("at_ms", "INTEGER", "NOT NULL", 10),
            col("attempt", "INTEGER", "NOT NULL", 10),
            col("line", "TEXT", "NOT NULL", 10),
        ],
        constraints: ", PRIMARY KEY (job_id, seq)",
    },
    Table {
        name: STEPS_TABLE,
        since: 19,
        columns: &[
            col("job_id", "TEXT", "NOT NULL", 19),
            col("name", "TEXT", "NOT NULL", 19),
            col("output", "TEXT", "NOT NULL", 19),
            col("at_ms", "INTEGER", "NOT NULL", 19),
            col("attempt", "INTEGER", "NOT NULL", 19),
        ],
        constraints: ", PRIMARY KEY (job_id, name)",
    },
    Table {
        name: SIGNALS_TABLE,
        since: 19,
        columns: &[
            col("job_id", "TEXT", "NOT NULL", 19),
            col("name", "TEXT", "NOT NULL", 19),
            col("payload", "TEXT", "NOT NULL", 19),
            col("at_ms", "INTEGER", "NOT NULL", 19),
        ],
        constraints: ", PRIMARY KEY (job_id, name)",
    },
    Table {
        name: DEPENDENTS_TABLE,
        since: 11,
        columns: &[
            col("dep_id", "TEXT", "NOT NULL", 11),
            col("job_id", "TEXT", "NOT NULL", 11),
            col("on_failure", "TEXT", "NOT NULL", 11),
        ],
        constraints: ", PRIMARY KEY (dep_id, job_id)",
    },
    Table {
        name: BACKLOG_TABLE,
        since: 12,
        columns: &[
            col("job_id", "TEXT", "NOT NULL PRIMARY KEY", 12),
            col("status", "TEXT", "NOT NULL", 12),
            col("after_job_id", "TEXT", "", 12),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_rate_starts",
        since: 7,
        columns: &[
            col("key", "TEXT", "NOT NULL", 7),
            col("at_ms", "INTEGER", "NOT NULL", 7),
        ],
        constraints: "",
    },
];

/// The dependency edges, one row per (dependency, dependent) (see
/// [`crate::dependencies`]).
pub(crate) const DEPENDENTS_TABLE: &str = "duraq_job_dependents";

/// The release backlog: a row per finished job whose dependents are still to
/// be settled (see [`crate::release`]).
pub(crate) const BACKLOG_TABLE: &str = "duraq_release_backlog";

/// A job's progress row (see [`crate::progress`]).
pub(crate) const PROGRESS_TABLE: &str = "duraq_job_progress";

/// A job's newest log lines (see [`crate::progress`]).
pub(crate) const LOGS_TABLE: &str = "duraq_job_logs";

/// A job's durable step records (see [`crate::steps`]).
pub(crate) const STEPS_TABLE: &str = "duraq_job_steps";

/// The signals delivered to jobs (see [`crate::signals`]).
pub(crate) const SIGNALS_TABLE: &str = "duraq_job_signals";

/// The throughput history samples (see [`crate::history`]).
pub(crate) const HISTORY_TABLE: &str = "duraq_history";

/// The paused queues (see [`crate::pause`]): a row per paused queue.
pub(crate) const PAUSED_QUEUES_TABLE: &str = "duraq_paused_queues";

/// The table of per-queue counters (see [`crate::counts`]).
pub(crate) const QUEUE_COUNTS_TABLE: &str = "duraq_queue_counts";
