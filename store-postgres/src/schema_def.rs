//! The declared schema: every table with its columns (name, the type
//! `information_schema` reports, DDL), the indexes, and what each later version
//! added or retired. [`crate::schema`] compares a database against this
//! declaration and adds what is missing; kept apart so that the migration logic
//! reads on its own.
//!
//! Versions: 1, the job store; 2, dedupe keys only for scopes that use dedupe
//! (`dedupe_key`, `duraq_dedupe_scopes`); 3, counts per queue
//! (`duraq_queue_count_shards`, backfilled once by the upgrade) and the per-queue
//! index of queued jobs that queue latency reads (`duraq_jobs_queue_due`); 4,
//! paused queues (`duraq_paused_queues`, a row per paused queue that every claim
//! excludes); 5, the error history (`duraq_jobs.errors`, JSON text with a
//! constant default `'[]'`: added in place without rewriting the table); 6, job
//! priorities and rate limits (`priority` with the constant default 0 and the
//! rate columns, added in place; the claim index `duraq_jobs_claim` leads with
//! the priority and replaces `duraq_jobs_due`; `duraq_rate_limits` registers each
//! key's limit and `duraq_rate_starts` logs recent starts per key), and visible
//! workers (`duraq_workers` gains what a worker registers: `host`, `pid`,
//! `queues` and `job_names` as JSON text, `slots`, `started_at_ms`; nullable,
//! added in place); 7, throughput history (`docs/history.md`):
//! `duraq_queue_count_shards` gains the monotonic outcome totals
//! (`enqueued_total` … `orphaned_total`, `bigint NOT NULL DEFAULT 0`: a constant
//! default, added in place without a table rewrite, so an upgraded database's
//! totals start at 0) and `duraq_history` holds one sample per (minute, queue);
//! 8, what a running job tells (`docs/jobs.md`): its progress and log lines, and
//! the trace context it was enqueued under; nullable or in tables of their own,
//! added in place, so jobs that use neither cost nothing more
//! (`duraq_job_progress`, a row per job that said anything, and
//! `duraq_job_logs`, its newest lines keyed by (job, seq); see [`crate::progress`]);
//! 9, job dependencies (`docs/workflows.md`, see [`crate::dependencies`]): the
//! jobs table gains `depends_on` (jsonb, NULL when none), `open_dependencies`
//! and `has_dependents` (constant defaults), and `output` (JSON text, as
//! `args`: a handler's output may hold `\u0000`, which `jsonb` refuses), all
//! added in place; `duraq_job_dependents` holds one edge per (dependency,
//! dependent), found by dependency through its primary key; the counter rows
//! gain `pending` (default 0, in place); and `duraq_jobs_pending` lists pending
//! jobs for a search by status; 10, the release backlog (`docs/workflows.md`,
//! "Cost", see [`crate::release`]): `duraq_release_backlog` holds a row per
//! finished job whose dependents did not all fit in the bounded transaction
//! that finished it (its terminal status and the last dependent settled),
//! keyed by job; a binary of version 9 would never continue it; 11, history
//! apart from the hot path (`docs/postgres.md`, "Retention and vacuum"):
//! `duraq_jobs` becomes a table partitioned by status into
//! [`JOB_PARTITIONS`], `duraq_jobs_live` (queued, running, pending) and
//! `duraq_jobs_done` (the terminal statuses), each with its own primary key on
//! `id` and its own indexes ([`JOB_INDEXES`]); the upgrade moves the rows once;
//! 12, `duraq_jobs_reserved_key` replaces `duraq_jobs_reserved`: it lists only
//! running jobs that hold a reservation, so a claim of a job without a
//! concurrency key writes one index entry fewer (built and dropped in place);
//! 13, `duraq_jobs_created_waiting` replaces the live partition's
//! `duraq_jobs_created`: it lists only jobs that wait (queued, pending), so a
//! claim writes one index entry fewer again; the job list reads running jobs
//! through `duraq_jobs_running` (built and dropped in place).

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: i64 = 13;
/// The per-queue counter table (version 3), filled from the jobs when created.
pub(crate) const QUEUE_COUNTS_TABLE: &str = "duraq_queue_count_shards";
/// The ledger table recording applied versions.
pub const LEDGER_TABLE: &str = "duraq_migrations";
/// The ledger scope of the job store's own schema.
pub const MIGRATION_SCOPE: &str = "duraq.jobs";

/// A table: name and (column, `information_schema` data type, DDL) triples.
pub(crate) struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, &'static str, &'static str)],
    pub constraints: &'static str,
}

const T: &str = "text";
const I: &str = "bigint";

pub(crate) const TABLES: &[Table] = &[
    Table {
        name: LEDGER_TABLE,
        columns: &[
            ("scope", T, "text NOT NULL"),
            ("version", I, "bigint NOT NULL"),
            ("applied_at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "PRIMARY KEY (scope, version)",
    },
    Table {
        name: "duraq_jobs",
        columns: &[
            ("id", T, "text NOT NULL"),
            ("job_name", T, "text NOT NULL"),
            ("args", T, "text NOT NULL"),
            ("args_digest", T, "text NOT NULL"),
            ("queue", T, "text NOT NULL"),
            ("status", T, "text NOT NULL"),
            ("attempts", I, "bigint NOT NULL"),
            ("max_retries", I, "bigint NOT NULL"),
            ("scheduled_at_ms", I, "bigint NOT NULL"),
            ("created_at_ms", I, "bigint NOT NULL"),
            ("handed_off_at_ms", I, "bigint"),
            ("completed_at_ms", I, "bigint"),
            ("failed_at_ms", I, "bigint"),
            ("cancelled_at_ms", I, "bigint"),
            ("orphaned_at_ms", I, "bigint"),
            ("last_error", T, "text"),
            ("worker_id", T, "text"),
            ("handoff_id", T, "text"),
            ("schedule_key", T, "text"),
            ("schedule_order", I, "bigint"),
            ("concurrency_key", T, "text"),
            ("max_concurrency", I, "bigint"),
            ("idempotency_key", T, "text"),
            ("timeout_ms", I, "bigint"),
            ("reservation_key", T, "text"),
            ("dedupe_key", T, "text"),
            ("errors", T, "text NOT NULL DEFAULT '[]'"),
            ("priority", I, "bigint NOT NULL DEFAULT 0"),
            ("rate_key", T, "text"),
            ("rate_max", I, "bigint"),
            ("rate_period_ms", I, "bigint"),
            ("trace_parent", T, "text"),
            ("depends_on", "jsonb", "jsonb"),
            ("open_dependencies", I, "bigint NOT NULL DEFAULT 0"),
            ("output", T, "text"),
            ("workflow_id", T, "text"),
            ("step", T, "text"),
            (
                "has_dependents",
                "boolean",
                "boolean NOT NULL DEFAULT false",
            ),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_job_dependents",
        columns: &[
            ("dep_id", T, "text NOT NULL"),
            ("job_id", T, "text NOT NULL"),
            ("on_failure", T, "text NOT NULL"),
        ],
        constraints: "PRIMARY KEY (dep_id, job_id)",
    },
    Table {
        name: "duraq_release_backlog",
        columns: &[
            ("job_id", T, "text NOT NULL"),
            ("status", T, "text NOT NULL"),
            ("after_job_id", T, "text"),
        ],
        constraints: "PRIMARY KEY (job_id)",
    },
    Table {
        name: "duraq_dedupe_scopes",
        columns: &[
            ("job_name", T, "text NOT NULL"),
            ("queue", T, "text NOT NULL"),
            ("registered_at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "PRIMARY KEY (job_name, queue)",
    },
    Table {
        name: "duraq_idempotency",
        columns: &[
            ("scope_digest", T, "text PRIMARY KEY"),
            ("request_digest", T, "text NOT NULL"),
            ("job_id", T, "text NOT NULL"),
            ("created_at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_operations",
        columns: &[
            ("op_key", T, "text PRIMARY KEY"),
            ("data", T, "text NOT NULL"),
            ("job_id", T, "text NOT NULL"),
            ("created_at_ms", I, "bigint NOT NULL"),
            ("first_attempt_started_at_ms", I, "bigint"),
            ("result", T, "text"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_schedule_owners",
        columns: &[
            ("schedule_key", T, "text PRIMARY KEY"),
            ("job_id", T, "text NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_schedule_orders",
        columns: &[
            ("schedule_key", T, "text PRIMARY KEY"),
            ("high_water", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_concurrency",
        columns: &[
            ("concurrency_key", T, "text PRIMARY KEY"),
            ("max_concurrency", I, "bigint NOT NULL"),
            ("active", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_workers",
        columns: &[
            ("worker_id", T, "text PRIMARY KEY"),
            ("last_heartbeat_ms", I, "bigint NOT NULL"),
            ("host", T, "text"),
            ("pid", I, "bigint"),
            ("queues", T, "text"),
            ("job_names", T, "text"),
            ("slots", I, "bigint"),
            ("started_at_ms", I, "bigint"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_count_shards",
        columns: &[
            ("shard", "integer", "integer PRIMARY KEY"),
            ("revision", I, "bigint NOT NULL"),
            ("queued", I, "bigint NOT NULL"),
            ("handed_off", I, "bigint NOT NULL"),
            ("completed", I, "bigint NOT NULL"),
            ("failed", I, "bigint NOT NULL"),
            ("cancelled", I, "bigint NOT NULL"),
            ("orphaned", I, "bigint NOT NULL"),
            ("pending", I, "bigint NOT NULL DEFAULT 0"),
        ],
        constraints: "",
    },
    Table {
        name: QUEUE_COUNTS_TABLE,
        columns: &[
            ("queue", T, "text NOT NULL"),
            ("shard", "integer", "integer NOT NULL"),
            ("queued", I, "bigint NOT NULL"),
            ("handed_off", I, "bigint NOT NULL"),
            ("completed", I, "bigint NOT NULL"),
            ("failed", I, "bigint NOT NULL"),
            ("cancelled", I, "bigint NOT NULL"),
            ("orphaned", I, "bigint NOT NULL"),
            ("pending", I, "bigint NOT NULL DEFAULT 0"),
            ("enqueued_total", I, "bigint NOT NULL DEFAULT 0"),
            ("completed_total", I, "bigint NOT NULL DEFAULT 0"),
            ("failed_total", I, "bigint NOT NULL DEFAULT 0"),
            ("retried_total", I, "bigint NOT NULL DEFAULT 0"),
            ("cancelled_total", I, "bigint NOT NULL DEFAULT 0"),
            ("orphaned_total", I, "bigint NOT NULL DEFAULT 0"),
        ],
        constraints: "PRIMARY KEY (queue, shard)",
    },
    Table {
        name: "duraq_history",
        columns: &[
            ("minute_ms", I, "bigint NOT NULL"),
            ("queue", T, "text NOT NULL"),
            ("enqueued", I, "bigint NOT NULL"),
            ("completed", I, "bigint NOT NULL"),
            ("failed", I, "bigint NOT NULL"),
            ("retried", I, "bigint NOT NULL"),
            ("cancelled", I, "bigint NOT NULL"),
            ("orphaned", I, "bigint NOT NULL"),
        ],
        constraints: "PRIMARY KEY (minute_ms, queue)",
    },
    Table {
        name: "duraq_rate_limits",
        columns: &[
            ("rate_key", T, "text PRIMARY KEY"),
            ("max_starts", I, "bigint NOT NULL"),
            ("period_ms", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_rate_starts",
        columns: &[
            ("rate_key", T, "text NOT NULL"),
            ("at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_job_progress",
        columns: &[
            ("job_id", T, "text PRIMARY KEY"),
            ("fraction", "double precision", "double precision"),
            ("message", T, "text"),
            ("updated_at_ms", I, "bigint NOT NULL"),
            ("lines_total", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
    Table {
        name: "duraq_job_logs",
        columns: &[
            ("job_id", T, "text NOT NULL"),
            ("seq", I, "bigint NOT NULL"),
            ("at_ms", I, "bigint NOT NULL"),
            ("attempt", I, "bigint NOT NULL"),
            ("line", T, "text NOT NULL"),
        ],
        constraints: "PRIMARY KEY (job_id, seq)",
    },
    Table {
        name: "duraq_paused_queues",
        columns: &[
            ("queue", T, "text PRIMARY KEY"),
            ("paused_at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "",
    },
];

/// The job table's partitioning (version 11): a row lives in the partition of
/// its status, and a status change across the line moves it.
pub(crate) const JOBS_PARTITION_BY: &str = "PARTITION BY LIST (status)";

/// Which partitions of the job table an index is built on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    /// The live partition only (the claim path).
    Live,
    /// The finished partition only (retention, searches by finish time).
    Done,
    /// Both: the live one's is named as declared, the finished one's gets `_done`.
    Both,
}

/// A partition of the job table: name, the statuses it holds, storage
/// parameters. The live partition is small and churns (every job is inserted
/// and updated there, then leaves), so its autovacuum starts after a fixed
/// number of dead rows rather than a fifth of the table, and does not sleep:
/// each claim walks the dead index entries of the jobs before it until a
/// VACUUM removes them, and a VACUUM of a table this small is cheap. Finished
/// jobs keep the server's defaults: they are inserted once and deleted by
/// retention.
pub(crate) struct Partition {
    pub name: &'static str,
    pub statuses: &'static [&'static str],
    pub with: &'static str,
}

pub(crate) const JOB_PARTITIONS: [Partition; 2] = [
    Partition {
        name: "duraq_jobs_live",
        statuses: &["queued", "handed_off", "pending"],
        with: "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, \
               autovacuum_vacuum_cost_delay = 0",
    },
    Partition {
        name: "duraq_jobs_done",
        statuses: &["completed", "failed", "cancelled", "orphaned"],
        with: "",
    },
];

/// The job table's indexes: name, `(columns) WHERE …`, where. Each is built on
/// its partitions directly (a partitioned index would name the partitions' own).
pub(crate) const JOB_INDEXES: &[(&str, &str, Place)] = &[
    (
        "duraq_jobs_claim",
        "(priority, scheduled_at_ms, created_at_ms, id COLLATE \"C\") WHERE status = 'queued'",
        Place::Live,
    ),
    (
        "duraq_jobs_queue_due",
        "(queue, scheduled_at_ms) WHERE status = 'queued'",
        Place::Live,
    ),
    (
        "duraq_jobs_dedupe_key",
        "(dedupe_key) WHERE status = 'queued' AND dedupe_key IS NOT NULL",
        Place::Live,
    ),
    (
        "duraq_jobs_running",
        "(worker_id) WHERE status = 'handed_off'",
        Place::Live,
    ),
    (
        "duraq_jobs_reserved_key",
        "(reservation_key) WHERE status = 'handed_off' AND reservation_key IS NOT NULL",
        Place::Live,
    ),
    (
        "duraq_jobs_pending",
        "(created_at_ms) WHERE status = 'pending'",
        Place::Live,
    ),
    (
        "duraq_jobs_key",
        "(schedule_key, schedule_order) WHERE schedule_key IS NOT NULL",
        Place::Both,
    ),
    (
        // The list order of waiting jobs: a claim moves a job out of it, so
        // the claim writes no entry here. Running jobs are listed through
        // `duraq_jobs_running` and sorted: there are only as many as the
        // workers' slots and prefetch (see `crate::search`).
        "duraq_jobs_created_waiting",
        "(created_at_ms, id COLLATE \"C\") WHERE status <> 'handed_off'",
        Place::Live,
    ),
    (
        "duraq_jobs_created_done",
        "(created_at_ms, id COLLATE \"C\")",
        Place::Done,
    ),
    (
        "duraq_jobs_workflow",
        "(workflow_id) WHERE workflow_id IS NOT NULL",
        Place::Both,
    ),
    (
        "duraq_jobs_completed",
        "(completed_at_ms) WHERE status = 'completed'",
        Place::Done,
    ),
    (
        "duraq_jobs_failed",
        "(failed_at_ms) WHERE status = 'failed'",
        Place::Done,
    ),
    (
        "duraq_jobs_orphaned",
        "(orphaned_at_ms) WHERE status = 'orphaned'",
        Place::Done,
    ),
    (
        "duraq_jobs_cancelled",
        "(cancelled_at_ms) WHERE status = 'cancelled'",
        Place::Done,
    ),
];

/// `CREATE INDEX` bodies (after `IF NOT EXISTS`) of [`JOB_INDEXES`], one per
/// partition it is built on.
pub(crate) fn job_index_ddl() -> Vec<String> {
    let [live, done] = &JOB_PARTITIONS;
    let mut out = Vec::new();
    for (name, def, place) in JOB_INDEXES {
        if matches!(place, Place::Live | Place::Both) {
            out.push(format!("{name} ON {{s}}.{} {def}", live.name));
        }
        match place {
            Place::Done => out.push(format!("{name} ON {{s}}.{} {def}", done.name)),
            Place::Both => out.push(format!("{name}_done ON {{s}}.{} {def}", done.name)),
            Place::Live => {}
        }
    }
    out
}

/// Indexes on tables other than the job table.
pub(crate) const INDEXES: &[&str] =
    &["duraq_rate_starts_key ON {s}.duraq_rate_starts (rate_key, at_ms)"];

/// Columns added after version 1: (table, column, version that added it).
pub(crate) const ADDED_COLUMNS: &[(&str, &str, i64)] = &[
    ("duraq_jobs", "dedupe_key", 2),
    ("duraq_jobs", "errors", 5),
    ("duraq_jobs", "priority", 6),
    ("duraq_jobs", "rate_key", 6),
    ("duraq_jobs", "rate_max", 6),
    ("duraq_jobs", "rate_period_ms", 6),
    ("duraq_workers", "host", 6),
    ("duraq_workers", "pid", 6),
    ("duraq_workers", "queues", 6),
    ("duraq_workers", "job_names", 6),
    ("duraq_workers", "slots", 6),
    ("duraq_workers", "started_at_ms", 6),
    (QUEUE_COUNTS_TABLE, "enqueued_total", 7),
    (QUEUE_COUNTS_TABLE, "completed_total", 7),
    (QUEUE_COUNTS_TABLE, "failed_total", 7),
    (QUEUE_COUNTS_TABLE, "retried_total", 7),
    (QUEUE_COUNTS_TABLE, "cancelled_total", 7),
    (QUEUE_COUNTS_TABLE, "orphaned_total", 7),
    ("duraq_jobs", "trace_parent", 8),
    ("duraq_jobs", "depends_on", 9),
    ("duraq_jobs", "open_dependencies", 9),
    ("duraq_jobs", "output", 9),
    ("duraq_jobs", "has_dependents", 9),
    ("duraq_jobs", "workflow_id", 9),
    ("duraq_jobs", "step", 9),
    ("duraq_count_shards", "pending", 9),
    (QUEUE_COUNTS_TABLE, "pending", 9),
];

/// Indexes a later version replaced, dropped when upgrading.
/// Version 12 replaced `duraq_jobs_reserved`, which also held an entry for
/// every running job without a reservation, and version 13 the live
/// partition's `duraq_jobs_created`, which took a new entry at every claim:
/// one index entry more per claim each.
pub(crate) const RETIRED_INDEXES: &[&str] = &[
    "duraq_jobs_dedupe",
    "duraq_jobs_due",
    "duraq_jobs_reserved",
    "duraq_jobs_created",
];

#[cfg(test)]
mod tests {
    use duraq_core::JobStatus;

    use super::JOB_PARTITIONS;

    /// Every status lives in exactly one partition, and the finished one
    /// holds exactly the terminal statuses: a status missing here would make
    /// its rows fail to insert, a terminal one in the live partition would
    /// keep history on the claim path.
    #[test]
    fn the_partitions_split_the_statuses_at_terminal() {
        let [live, done] = &JOB_PARTITIONS;
        for status in JobStatus::ALL {
            let name = status.as_str();
            let places = (live.statuses.contains(&name), done.statuses.contains(&name));
            assert_eq!(
                places,
                (!status.is_terminal(), status.is_terminal()),
                "{name}"
            );
        }
        assert_eq!(
            live.statuses.len() + done.statuses.len(),
            JobStatus::ALL.len()
        );
    }
}
