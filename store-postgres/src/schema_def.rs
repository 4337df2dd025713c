//! The declared schema: every table with its columns (name, the type
//! `information_schema` reports, DDL) and the job table's partitions.
//! [`crate::schema`] compares a database against this declaration and adds
//! what is missing; the job table's columns are described in
//! [`crate::columns`], and what each version added or retired in
//! [`crate::versions`]. Kept apart so that the migration logic reads on its own.

use crate::columns::TABLE_COLUMNS;

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
        columns: TABLE_COLUMNS,
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
        name: "duraq_job_steps",
        columns: &[
            ("job_id", T, "text NOT NULL"),
            ("name", T, "text NOT NULL"),
            ("output", T, "text NOT NULL"),
            ("at_ms", I, "bigint NOT NULL"),
            ("attempt", I, "bigint NOT NULL"),
        ],
        constraints: "PRIMARY KEY (job_id, name)",
    },
    Table {
        name: "duraq_job_signals",
        columns: &[
            ("job_id", T, "text NOT NULL"),
            ("name", T, "text NOT NULL"),
            ("payload", T, "text NOT NULL"),
            ("at_ms", I, "bigint NOT NULL"),
        ],
        constraints: "PRIMARY KEY (job_id, name)",
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

/// Where an index is built: on partitions of the job table (each index on
/// its partitions directly: a partitioned index would name the partitions'
/// own), or on another table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum On {
    /// The live partition only (the claim path).
    Live,
    /// The finished partition only (retention, searches by finish time).
    Done,
    /// Both: the live one's is named as declared, the finished one's gets `_done`.
    Both,
    /// Another table.
    Table(&'static str),
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
