//! The versions of the job store's schema, oldest first, as data: what each
//! one is called in the ledger and the tenant catalog, what it changed, and
//! what an upgrade from before it must do that creating missing tables does
//! not (columns added in place, indexes built and retired). The newest
//! version ([`SCHEMA_VERSION`]), the refusal of a newer schema, the versions
//! a migration records and the indexes it builds all read this list, so a
//! version that only changes indexes is one entry here. `docs/postgres.md`
//! shows the same list as a table (a test holds them equal).
//!
//! Three versions did work of their own, kept as steps in [`crate::schema`]:
//! version 3 filled the per-queue counters from the jobs once, version 11
//! partitioned the job table, moving its rows once, and version 22 marked the
//! ephemeral jobs that had steps or signals. The job table's columns
//! carry the version that added each ([`crate::columns`]).

use crate::schema_def::{On, JOB_PARTITIONS, QUEUE_COUNTS_TABLE};

/// One version of the schema (see [`SCHEMA_VERSIONS`]).
#[derive(Debug)]
pub struct SchemaVersion {
    /// Its number, one more than the version before.
    pub version: i64,
    /// Its name in the tenant catalog (snake case, stable).
    pub name: &'static str,
    /// What it changed, in one line.
    pub description: &'static str,
    /// Columns it added in place to tables other than the job table:
    /// (table, column).
    pub(crate) added_columns: &'static [(&'static str, &'static str)],
    /// The indexes it built that today's schema keeps, as declared today.
    pub(crate) indexes: &'static [Index],
    /// Indexes of earlier versions it replaced, dropped by an upgrade.
    pub(crate) retired_indexes: &'static [&'static str],
}

/// An index: name, where, and `(columns) WHERE …`.
#[derive(Debug)]
pub(crate) struct Index {
    pub name: &'static str,
    pub on: On,
    pub definition: &'static str,
}

impl Index {
    /// Its `CREATE INDEX` bodies (after `IF NOT EXISTS`), one per table or
    /// partition it is built on.
    pub(crate) fn ddl(&self) -> Vec<String> {
        let [live, done] = &JOB_PARTITIONS;
        let (name, def) = (self.name, self.definition);
        match self.on {
            On::Live => vec![format!("{name} ON {{s}}.{} {def}", live.name)],
            On::Done => vec![format!("{name} ON {{s}}.{} {def}", done.name)],
            On::Both => vec![
                format!("{name} ON {{s}}.{} {def}", live.name),
                format!("{name}_done ON {{s}}.{} {def}", done.name),
            ],
            On::Table(table) => vec![format!("{name} ON {{s}}.{table} {def}")],
        }
    }
}

const fn index(name: &'static str, on: On, definition: &'static str) -> Index {
    Index {
        name,
        on,
        definition,
    }
}

const fn version(version: i64, name: &'static str, description: &'static str) -> SchemaVersion {
    SchemaVersion {
        version,
        name,
        description,
        added_columns: &[],
        indexes: &[],
        retired_indexes: &[],
    }
}

/// Every version of the schema, oldest first.
pub const SCHEMA_VERSIONS: &[SchemaVersion] = &[
    SchemaVersion {
        indexes: &[
            index(
                "duraq_jobs_running",
                On::Live,
                "(worker_id) WHERE status = 'handed_off'",
            ),
            index(
                "duraq_jobs_key",
                On::Both,
                "(schedule_key, schedule_order) WHERE schedule_key IS NOT NULL",
            ),
            index(
                "duraq_jobs_completed",
                On::Done,
                "(completed_at_ms) WHERE status = 'completed'",
            ),
            index(
                "duraq_jobs_failed",
                On::Done,
                "(failed_at_ms) WHERE status = 'failed'",
            ),
            index(
                "duraq_jobs_orphaned",
                On::Done,
                "(orphaned_at_ms) WHERE status = 'orphaned'",
            ),
            index(
                "duraq_jobs_cancelled",
                On::Done,
                "(cancelled_at_ms) WHERE status = 'cancelled'",
            ),
        ],
        ..version(
            1,
            "job_store",
            "The job store: jobs, counters, idempotency keys, operations, schedule keys, \
             concurrency reservations and workers.",
        )
    },
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_dedupe_key",
            On::Live,
            "(dedupe_key) WHERE status = 'queued' AND dedupe_key IS NOT NULL",
        )],
        retired_indexes: &["duraq_jobs_dedupe"],
        ..version(
            2,
            "dedupe_scopes",
            "Dedupe keys only for the scopes that use dedupe (`duraq_dedupe_scopes`), \
             instead of an index over every queued job's args digest.",
        )
    },
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_queue_due",
            On::Live,
            "(queue, scheduled_at_ms) WHERE status = 'queued'",
        )],
        ..version(
            3,
            "queue_counts",
            "Counts per queue (`duraq_queue_count_shards`, filled from the jobs once) and \
             the index of queued jobs per queue that queue latency reads.",
        )
    },
    version(
        4,
        "paused_queues",
        "Paused queues (`duraq_paused_queues`), which every claim leaves out.",
    ),
    version(
        5,
        "error_history",
        "The error history of each job (`errors`, JSON text with the constant default `'[]'`).",
    ),
    SchemaVersion {
        added_columns: &[
            ("duraq_workers", "host"),
            ("duraq_workers", "pid"),
            ("duraq_workers", "queues"),
            ("duraq_workers", "job_names"),
            ("duraq_workers", "slots"),
            ("duraq_workers", "started_at_ms"),
        ],
        indexes: &[
            // Its claim index, `duraq_jobs_claim`, was replaced by version 19's.
            index(
                "duraq_rate_starts_key",
                On::Table("duraq_rate_starts"),
                "(rate_key, at_ms)",
            ),
        ],
        retired_indexes: &["duraq_jobs_due"],
        ..version(
            6,
            "priorities_rate_limits_workers",
            "Job priorities (a claim index led by the priority) and rate limits \
             (`duraq_rate_limits`, `duraq_rate_starts`), and what a worker registers.",
        )
    },
    SchemaVersion {
        added_columns: &[
            (QUEUE_COUNTS_TABLE, "enqueued_total"),
            (QUEUE_COUNTS_TABLE, "completed_total"),
            (QUEUE_COUNTS_TABLE, "failed_total"),
            (QUEUE_COUNTS_TABLE, "retried_total"),
            (QUEUE_COUNTS_TABLE, "cancelled_total"),
            (QUEUE_COUNTS_TABLE, "orphaned_total"),
        ],
        ..version(
            7,
            "throughput_history",
            "Throughput history: outcome totals on the queue counter rows and one sample \
             per minute and queue (`duraq_history`).",
        )
    },
    version(
        8,
        "job_progress_logs_traces",
        "What a running job tells: its progress and log lines (`duraq_job_progress`, \
         `duraq_job_logs`) and the trace context it was enqueued under.",
    ),
    SchemaVersion {
        added_columns: &[
            ("duraq_count_shards", "pending"),
            (QUEUE_COUNTS_TABLE, "pending"),
        ],
        indexes: &[
            index(
                "duraq_jobs_pending",
                On::Live,
                "(created_at_ms) WHERE status = 'pending'",
            ),
            index(
                "duraq_jobs_workflow",
                On::Both,
                "(workflow_id) WHERE workflow_id IS NOT NULL",
            ),
        ],
        ..version(
            9,
            "job_dependencies",
            "Job dependencies and workflows: edges (`duraq_job_dependents`), open counts, \
             outputs, the `pending` counters and the index of pending jobs.",
        )
    },
    version(
        10,
        "release_backlog",
        "The release backlog (`duraq_release_backlog`): finished jobs whose dependents did \
         not all fit in the transaction that finished them.",
    ),
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_created_done",
            On::Done,
            "(created_at_ms, id COLLATE \"C\")",
        )],
        ..version(
            11,
            "job_history_partitions",
            "The job table partitioned by status into live and finished jobs, each with \
             indexes of its own; the upgrade moves every row once.",
        )
    },
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_reserved_key",
            On::Live,
            "(reservation_key) WHERE status = 'handed_off' AND reservation_key IS NOT NULL",
        )],
        retired_indexes: &["duraq_jobs_reserved"],
        ..version(
            12,
            "reservation_key_index",
            "The index of reservations lists only running jobs that hold one: a claim \
             without a concurrency key writes one index entry fewer.",
        )
    },
    SchemaVersion {
        // The list order of waiting jobs: a claim moves a job out of it, so
        // the claim writes no entry here. Running jobs are listed through
        // `duraq_jobs_running` and sorted: there are only as many as the
        // workers' slots and prefetch (see `crate::search`).
        indexes: &[index(
            "duraq_jobs_created_waiting",
            On::Live,
            "(created_at_ms, id COLLATE \"C\") WHERE status <> 'handed_off'",
        )],
        retired_indexes: &["duraq_jobs_created"],
        ..version(
            13,
            "waiting_list_index",
            "The live partition's list-order index holds only jobs that wait: a claim \
             writes one index entry fewer, and running jobs are listed through their own.",
        )
    },
    // `duraq_jobs.workflow_name`, nullable and added in place: the steps of
    // a workflow enqueued before it read no name.
    version(
        14,
        "workflow_names",
        "The name of the workflow a job is a step of (`workflow_name`), shown and searched \
         by `duraq workflows list`.",
    ),
    // Listing the workflows of one name walks this range, not every
    // workflow (see `crate::search`).
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_workflow_name",
            On::Both,
            "(workflow_name, workflow_id) WHERE workflow_id IS NOT NULL",
        )],
        ..version(
            15,
            "workflow_name_index",
            "An index of workflows by name (`duraq_jobs_workflow_name`), for listing the \
             workflows of one name.",
        )
    },
    // `duraq_jobs.expires_at_ms`, nullable and added in place: jobs enqueued
    // before it never expire.
    SchemaVersion {
        // Queued jobs with an expiry, by expiry: the recovery pass's walk
        // (see `crate::expiry`).
        indexes: &[index(
            "duraq_jobs_expiry",
            On::Live,
            "(expires_at_ms) WHERE status = 'queued' AND expires_at_ms IS NOT NULL",
        )],
        ..version(
            16,
            "job_expiry",
            "When a job expires (`expires_at_ms`): a claim cancels it instead of starting it, \
             and a worker's recovery pass cancels one no claim reaches.",
        )
    },
    // `duraq_jobs.cancel_reason` (nullable: jobs cancelled before it read
    // no reason), `cost`, `keep_completed` and `aged_steps` (with their
    // defaults, 1, true and 0, for the rows before them), all added in place.
    version(
        17,
        "flow_control",
        "Why a job was cancelled (`cancel_reason`), what it costs of its limits (`cost`), whether its row outlives its completion (`keep_completed`), and the priority it has aged (`aged_steps`).",
    ),
    // `duraq_jobs.sequence_key` (nullable) and `sequence_continues`, added in
    // place. The index holds only the jobs of a sequence that can stand in its
    // way (a failed one that holds it is finished: both partitions), covering
    // what a claim reads of them (see `crate::claim`).
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_sequence",
            On::Both,
            "(sequence_key, created_at_ms, id COLLATE \"C\", status, sequence_continues) \
             WHERE sequence_key IS NOT NULL \
             AND status IN ('queued', 'handed_off', 'failed', 'orphaned')",
        )],
        ..version(
            18,
            "sequences",
            "Sequences (`sequence_key`, `sequence_continues`): one job of a key at a time, in order.",
        )
    },
    // `duraq_jobs.fairness_key` (nullable), added in place. The claim index
    // now holds only the queued jobs without a key; those with one are in an
    // index led by (priority, queue, key), so that a claim seeks each key's
    // due jobs and never walks one key's backlog to reach another's (see
    // `crate::claim::turns`), and in one by due time for the next due time.
    SchemaVersion {
        indexes: &[
            index(
                "duraq_jobs_claim_plain",
                On::Live,
                "(priority, scheduled_at_ms, created_at_ms, id COLLATE \"C\") \
                 WHERE status = 'queued' AND fairness_key IS NULL",
            ),
            index(
                "duraq_jobs_fair",
                On::Live,
                "(priority, queue COLLATE \"C\", fairness_key COLLATE \"C\", \
                 scheduled_at_ms, created_at_ms, id COLLATE \"C\") \
                 WHERE status = 'queued' AND fairness_key IS NOT NULL",
            ),
            index(
                "duraq_jobs_fair_due",
                On::Live,
                "(scheduled_at_ms) WHERE status = 'queued' AND fairness_key IS NOT NULL",
            ),
        ],
        retired_indexes: &["duraq_jobs_claim"],
        ..version(
            19,
            "fairness",
            "Fairness keys (`fairness_key`): due jobs of different keys are claimed in turn.",
        )
    },
    // `duraq_job_steps` and `duraq_job_signals`: a row per job and step or
    // signal name (see `crate::steps`, `crate::signals`), and
    // `duraq_jobs.awaiting_signal` (nullable), added in place. A binary of
    // version 19 would neither delete these rows with their job nor end a
    // wait, so it must refuse such a schema.
    SchemaVersion {
        indexes: &[index(
            "duraq_jobs_awaiting",
            On::Live,
            "(scheduled_at_ms) WHERE status = 'pending' AND awaiting_signal IS NOT NULL",
        )],
        ..version(
            20,
            "durable_execution",
            "Durable steps and signals: what each step of a job returned (`duraq_job_steps`), \
             the signals it received (`duraq_job_signals`) and the one a pending job waits for \
             (`awaiting_signal`).",
        )
    },
    // `duraq_jobs.parent_id` (nullable), added in place. A binary of version
    // 20 would finish a child without waking the parent that waits for it,
    // so it must refuse such a schema.
    version(
        21,
        "children",
        "Spawned children (`parent_id`): a job that finishes delivers its outcome to the job \
         that spawned it and waits for it.",
    ),
    // `duraq_jobs.has_durable_rows`, added in place and filled once for the
    // ephemeral jobs that already have steps or signals (`crate::schema`). A
    // binary of version 21 would record a step of an ephemeral job without
    // setting it, and the job's completion would leave the step behind.
    version(
        22,
        "ephemeral_durable_rows",
        "Ephemeral jobs with steps or signals (`has_durable_rows`): their completion deletes \
         those rows too, and the completion of one without them looks for none.",
    ),
];

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: i64 = SCHEMA_VERSIONS[SCHEMA_VERSIONS.len() - 1].version;

/// Today's indexes: those every version built, in version order.
pub(crate) fn indexes() -> impl Iterator<Item = &'static Index> {
    SCHEMA_VERSIONS.iter().flat_map(|v| v.indexes)
}

/// The indexes later versions replaced, dropped when upgrading.
pub(crate) fn retired_indexes() -> impl Iterator<Item = &'static str> {
    SCHEMA_VERSIONS
        .iter()
        .flat_map(|v| v.retired_indexes.iter().copied())
}

/// Columns added in place after version 1: (table, column, version), the job
/// table's ([`crate::columns`]) first.
pub(crate) fn added_columns() -> impl Iterator<Item = (&'static str, &'static str, i64)> {
    let jobs = crate::columns::statements::added().map(|(c, v)| (JOBS_TABLE, c, v));
    let others = (SCHEMA_VERSIONS.iter())
        .flat_map(|v| v.added_columns.iter().map(|(t, c)| (*t, *c, v.version)));
    jobs.chain(others)
}

const JOBS_TABLE: &str = "duraq_jobs";

#[cfg(test)]
mod tests {
    use super::{added_columns, indexes, retired_indexes, SCHEMA_VERSION, SCHEMA_VERSIONS};
    use crate::schema_def::TABLES;

    /// Versions count up from 1 without a gap (the ledger records them as
    /// such), and each name is used once.
    #[test]
    fn versions_count_up_from_one() {
        for (i, v) in SCHEMA_VERSIONS.iter().enumerate() {
            assert_eq!(v.version, i as i64 + 1, "{}", v.name);
            let same = SCHEMA_VERSIONS.iter().filter(|w| w.name == v.name).count();
            assert_eq!(same, 1, "{}", v.name);
        }
    }

    /// An index is built by one version at most, and no index built is one
    /// that a version retires (the upgrade would build it and drop it).
    #[test]
    fn indexes_are_built_once_and_never_retired() {
        let built: Vec<&str> = indexes().map(|i| i.name).collect();
        for name in &built {
            assert_eq!(built.iter().filter(|n| *n == name).count(), 1, "{name}");
            assert!(retired_indexes().all(|r| r != *name), "{name}");
        }
    }

    /// Every column added in place is declared, by a version this binary
    /// knows, after the first (which created every table it had).
    #[test]
    fn added_columns_are_declared_by_known_versions() {
        for (table, column, version) in added_columns() {
            let declared = TABLES.iter().find(|t| t.name == table);
            let declared = declared.is_some_and(|t| t.columns.iter().any(|c| c.0 == column));
            assert!(declared, "{table}.{column}");
            assert!((2..=SCHEMA_VERSION).contains(&version), "{table}.{column}");
        }
    }
}
