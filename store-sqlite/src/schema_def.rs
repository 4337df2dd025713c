//! The declared schema: every table with the version that introduced each
//! column, and every index. [`crate::schema`] compares a file against this
//! declaration and adds what is missing; no table or column is ever dropped or
//! changed in place, only extended by a new version.
//!
//! Version 1: jobs, counts, idempotency ownership, concurrency reservations,
//! worker heartbeats. Version 2: schedule keys (columns on jobs, ownership and
//! high-water tables) and operation records. Version 3: partial job indexes,
//! replacing the status-led ones that every transition rewrote, and dedupe keys
//! (a jobs column and the registered dedupe scopes). Version 4: counts per queue
//! (`duraq_queue_counts`, backfilled from the jobs once when created) and the
//! per-queue index of queued jobs that queue latency reads. Version 5: paused
//! queues (`duraq_paused_queues`, one row per paused queue, which every claim
//! reads). Version 6: the error history (`duraq_jobs.errors`, JSON text, added in
//! place as `NOT NULL DEFAULT '[]'`, so older rows read an empty history).
//! Version 7: job priorities and rate limits (`priority NOT NULL DEFAULT 0` and
//! the rate columns added in place; the claim index `duraq_jobs_claim` leads with
//! the priority and replaces `duraq_jobs_queued`; `duraq_rate_limits` registers
//! each key's limit, `duraq_rate_starts` logs recent starts per key), and visible
//! workers (`duraq_workers` gains what a worker registers: `host`, `pid`,
//! `queues` and `job_names` as JSON text, `slots`, `started_at_ms`; nullable,
//! added in place; a row without `started_at_ms` only heartbeats and is not
//! listed). Version 8: no new table or column; a job row keeps its args digest
//! only while it has a dedupe key (`''` otherwise, see [`crate::dedupe`]), which
//! a binary of version 7 would misread, so it must refuse such a file.
//! Version 9: throughput history (`docs/history.md`): `duraq_queue_counts` gains
//! the monotonic outcome totals (`enqueued_total` … `orphaned_total`, added in
//! place as `NOT NULL DEFAULT 0`, so an upgraded file's totals start at 0), and
//! `duraq_history` holds one sample per (minute, queue), keyed by both.
//! Version 10: what a running job tells (`docs/jobs.md`): its progress and log
//! lines, and the trace context it was enqueued under; nullable or in tables of
//! their own, added in place, so jobs that use neither cost nothing more
//! (`duraq_job_progress`, a row per job that said anything, and
//! `duraq_job_logs`, its newest lines keyed by (job, seq); see [`crate::progress`]).
//! Version 11: job dependencies (`docs/workflows.md`): `duraq_jobs` gains
//! `depends_on` (the edges as JSON text, NULL when none), `open_dependencies`
//! (`NOT NULL DEFAULT 0`) and `output` (JSON text, NULL when none), all added in
//! place; `duraq_queue_counts` gains `pending` (`NOT NULL DEFAULT 0`: a file
//! of version 10 holds no pending job); `duraq_job_dependents` holds one row per
//! edge keyed by (dependency, dependent), so the dependents of a finished job
//! are one primary-key range (see [`crate::dependencies`]).
//! Version 12: the release backlog (`docs/workflows.md`, "Cost"):
//! `duraq_release_backlog` holds a row per finished job whose dependents did
//! not all fit in the bounded transaction that finished it (its terminal
//! status and the last dependent settled, keyed by job; see
//! [`crate::release`]). A binary of version 11 would never continue it, so it
//! must refuse such a file.

use crate::columns::{col, job_table, Column, COLUMNS};

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: i64 = 12;
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

/// The throughput history samples (see [`crate::history`]).
pub(crate) const HISTORY_TABLE: &str = "duraq_history";

/// The paused queues (see [`crate::pause`]): a row per paused queue.
pub(crate) const PAUSED_QUEUES_TABLE: &str = "duraq_paused_queues";

/// The table of per-queue counters (see [`crate::counts`]).
pub(crate) const QUEUE_COUNTS_TABLE: &str = "duraq_queue_counts";

/// The job indexes since version 3 (`queue_due` since 4). Every index but `list` is partial: a row sits
/// only in the indexes of its own status, so a transition touches two small
/// indexes instead of rewriting every status-led entry.
///
/// Dedupe is paid for only by those who use it: `dedupe_key` (a 16-hex-digit
/// prefix of the args digest) is set only on jobs of a (job name, queue) scope
/// that has seen a `deduplicateWhileQueued` request (see [`crate::dedupe`]), so
/// other jobs never touch the randomly ordered dedupe index.
pub(crate) const INDEXES: &[&str] = &[
    "CREATE INDEX IF NOT EXISTS duraq_jobs_workflow ON duraq_jobs (workflow_id) \
     WHERE workflow_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_claim ON duraq_jobs \
     (priority, scheduled_at_ms, created_at_ms, id) WHERE status = 'queued'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_queue_due ON duraq_jobs \
     (queue, scheduled_at_ms) WHERE status = 'queued'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_dedupe_key ON duraq_jobs (dedupe_key) \
     WHERE status = 'queued' AND dedupe_key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_running ON duraq_jobs (worker_id) \
     WHERE status = 'handed_off'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_list ON duraq_jobs (created_at_ms, id)",
    "CREATE INDEX IF NOT EXISTS duraq_rate_starts_key ON duraq_rate_starts (key, at_ms)",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_keyed ON duraq_jobs (schedule_key, schedule_order) \
     WHERE schedule_key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_completed ON duraq_jobs \
     (COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id) \
     WHERE status = 'completed'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_failed ON duraq_jobs \
     (COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id) \
     WHERE status = 'failed'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_cancelled ON duraq_jobs \
     (COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id) \
     WHERE status = 'cancelled'",
    "CREATE INDEX IF NOT EXISTS duraq_jobs_orphaned ON duraq_jobs \
     (COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id) \
     WHERE status = 'orphaned'",
];

/// Indexes a later version replaced with the ones above (version 3 the
/// status-led ones of versions 1–2; version 7 `duraq_jobs_queued`, now
/// `duraq_jobs_claim`); dropped when a file is upgraded. An index holds no data,
/// so this rebuilds and loses nothing.
pub(crate) const RETIRED_INDEXES: &[&str] = &[
    "duraq_jobs_queued",
    "duraq_jobs_due",
    "duraq_jobs_dedupe",
    "duraq_jobs_schedule",
    "duraq_jobs_terminal",
];
