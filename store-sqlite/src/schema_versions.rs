//! The schema's history as data: one [`SchemaVersion`] per version, in order.
//! [`SCHEMA_VERSION`] is the last one; [`crate::migrate`] records the versions
//! a file lacks, refuses a file that records a newer one
//! (`schema-incompatible`), and creates the indexes the versions introduced
//! after dropping the ones they retired. Tables and columns carry the version
//! that added them where they are declared ([`crate::schema_def`],
//! [`crate::columns`]); a test checks each names a version of this list, and
//! another that `docs/operating.md` lists the same versions.

/// One version of the SQLite job store's schema.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct SchemaVersion {
    /// Its number in the migration ledger (1, 2, …, in order).
    pub version: i64,
    /// Its name (stable: the tenants catalog records it).
    pub name: &'static str,
    /// What it added, in one line.
    pub description: &'static str,
    /// The indexes it introduced (`CREATE INDEX IF NOT EXISTS`, so creating
    /// them again on every open is harmless).
    pub indexes: &'static [&'static str],
    /// Indexes of earlier versions it replaced, dropped when a file is
    /// upgraded. An index holds no data, so this loses nothing.
    pub retired_indexes: &'static [&'static str],
}

const fn version(version: i64, name: &'static str, description: &'static str) -> SchemaVersion {
    SchemaVersion {
        version,
        name,
        description,
        indexes: &[],
        retired_indexes: &[],
    }
}

/// The terminal-status indexes of version 3, one per status, ordered by when
/// the job finished.
macro_rules! finished_index {
    ($status:literal) => {
        concat!(
            "CREATE INDEX IF NOT EXISTS duraq_jobs_",
            $status,
            " ON duraq_jobs \
             (COALESCE(completed_at_ms, failed_at_ms, cancelled_at_ms, orphaned_at_ms), id) \
             WHERE status = '",
            $status,
            "'"
        )
    };
}

/// Every schema version, oldest first.
pub const SCHEMA_VERSIONS: &[SchemaVersion] = &[
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_list ON duraq_jobs (created_at_ms, id)"],
        ..version(
            1,
            "job_store",
            "Jobs, counts, idempotency ownership, concurrency reservations, worker heartbeats.",
        )
    },
    version(
        2,
        "schedule_keys",
        "Schedule keys (columns on jobs, ownership and high-water tables) and operation records.",
    ),
    // Every index but `list` is partial from here on: a row sits only in the
    // indexes of its own status, so a transition touches two small indexes
    // instead of rewriting every status-led entry. Dedupe is paid for only by
    // those who use it: `dedupe_key` (a 16-hex-digit prefix of the args
    // digest) is set only on jobs of a (job name, queue) scope that has seen a
    // `deduplicateWhileQueued` request (see `crate::dedupe`), so other jobs
    // never touch the randomly ordered dedupe index.
    SchemaVersion {
        indexes: &[
            "CREATE INDEX IF NOT EXISTS duraq_jobs_dedupe_key ON duraq_jobs (dedupe_key) \
             WHERE status = 'queued' AND dedupe_key IS NOT NULL",
            "CREATE INDEX IF NOT EXISTS duraq_jobs_running ON duraq_jobs (worker_id) \
             WHERE status = 'handed_off'",
            "CREATE INDEX IF NOT EXISTS duraq_jobs_keyed ON duraq_jobs \
             (schedule_key, schedule_order) WHERE schedule_key IS NOT NULL",
            finished_index!("completed"),
            finished_index!("failed"),
            finished_index!("cancelled"),
            finished_index!("orphaned"),
        ],
        retired_indexes: &[
            "duraq_jobs_due",
            "duraq_jobs_dedupe",
            "duraq_jobs_schedule",
            "duraq_jobs_terminal",
        ],
        ..version(
            3,
            "partial_indexes",
            "Partial job indexes in place of the status-led ones, and dedupe keys with their registered scopes.",
        )
    },
    // `duraq_queue_counts` is backfilled from the jobs once, when created.
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_queue_due ON duraq_jobs \
                    (queue, scheduled_at_ms) WHERE status = 'queued'"],
        ..version(
            4,
            "queue_counts",
            "Counts per queue, and the per-queue index of queued jobs that queue latency reads.",
        )
    },
    // Every claim reads `duraq_paused_queues`.
    version(5, "paused_queues", "Paused queues, one row per paused queue."),
    // `errors` is added in place as `NOT NULL DEFAULT '[]'`, so older rows
    // read an empty history.
    version(
        6,
        "error_history",
        "The error history of each job (`errors`, JSON text).",
    ),
    // `priority NOT NULL DEFAULT 0` and the rate columns are added in place;
    // `duraq_rate_limits` registers each key's limit, `duraq_rate_starts`
    // logs recent starts per key. `duraq_workers` gains what a worker
    // registers (`host`, `pid`, `queues` and `job_names` as JSON text,
    // `slots`, `started_at_ms`; nullable, added in place); a row without
    // `started_at_ms` only heartbeats and is not listed.
    SchemaVersion {
        // Its claim index, `duraq_jobs_claim`, was replaced by version 18's.
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_rate_starts_key ON duraq_rate_starts (key, at_ms)"],
        retired_indexes: &["duraq_jobs_queued"],
        ..version(
            7,
            "priorities_rate_limits_workers",
            "Job priorities (the claim index leads with them), rate limits, and visible workers.",
        )
    },
    // A job row keeps its args digest only while it has a dedupe key (`''`
    // otherwise, see `crate::dedupe`), which a binary of version 7 would
    // misread, so it must refuse such a file.
    version(
        8,
        "dedupe_scope_digests",
        "Args digests kept only on rows with a dedupe key; no new table or column.",
    ),
    // The totals (`enqueued_total` … `orphaned_total`) are added in place as
    // `NOT NULL DEFAULT 0`, so an upgraded file's totals start at 0;
    // `duraq_history` holds one sample per (minute, queue), keyed by both
    // (`docs/history.md`).
    version(
        9,
        "throughput_history",
        "Monotonic outcome totals per queue, and the throughput history by minute.",
    ),
    // Nullable or in tables of their own, added in place, so jobs that use
    // neither cost nothing more: `duraq_job_progress` (a row per job that
    // said anything) and `duraq_job_logs` (its newest lines keyed by (job,
    // seq)); see `crate::progress` and `docs/jobs.md`.
    version(
        10,
        "job_progress_logs_traces",
        "A running job's progress and log lines, and the trace context it was enqueued under.",
    ),
    // `duraq_jobs` gains `depends_on` (the edges as JSON text, NULL when
    // none), `open_dependencies` (`NOT NULL DEFAULT 0`), `output`,
    // `workflow_id` and `step`, all in place; `duraq_queue_counts` gains
    // `pending` (a file of version 10 holds no pending job);
    // `duraq_job_dependents` holds one row per edge keyed by (dependency,
    // dependent), so the dependents of a finished job are one primary-key
    // range (see `crate::dependencies` and `docs/workflows.md`).
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_workflow ON duraq_jobs (workflow_id) \
                    WHERE workflow_id IS NOT NULL"],
        ..version(
            11,
            "job_dependencies",
            "Job dependencies, outputs and workflows.",
        )
    },
    // A row per finished job whose dependents did not all fit in the bounded
    // transaction that finished it (its terminal status and the last
    // dependent settled, keyed by job; see `crate::release` and
    // `docs/workflows.md`, "Cost"). A binary of version 11 would never
    // continue it, so it must refuse such a file.
    version(
        12,
        "release_backlog",
        "The release backlog: finished jobs whose dependents are still to be settled.",
    ),
    // `duraq_jobs.workflow_name`, nullable and added in place: the steps of
    // a workflow enqueued before it read no name.
    version(
        13,
        "workflow_names",
        "The name of the workflow a job is a step of (`workflow_name`).",
    ),
    // Listing the workflows of one name walks this range, not every
    // workflow (see `crate::search`).
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_workflow_name ON duraq_jobs \
                    (workflow_name, workflow_id) WHERE workflow_id IS NOT NULL"],
        ..version(
            14,
            "workflow_name_index",
            "An index of workflows by name, for listing the workflows of one name.",
        )
    },
    // `duraq_jobs.expires_at_ms`, nullable and added in place: jobs enqueued
    // before it never expire.
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_expiry ON duraq_jobs (expires_at_ms) \
                    WHERE status = 'queued' AND expires_at_ms IS NOT NULL"],
        ..version(
            15,
            "job_expiry",
            "When a job expires (`expires_at_ms`): a claim cancels it instead of starting it.",
        )
    },
    // `duraq_jobs.cancel_reason` (nullable: jobs cancelled before it read
    // no reason), `cost`, `keep_completed` and `aged_steps` (with their
    // defaults, 1, true and 0, for the rows before them), all added in place.
    version(
        16,
        "flow_control",
        "Why a job was cancelled (`cancel_reason`), what it costs of its limits (`cost`), whether its row outlives its completion (`keep_completed`), and the priority it has aged (`aged_steps`).",
    ),
    // `duraq_jobs.sequence_key` (nullable) and `sequence_continues`, added in
    // place. The index holds only the jobs of a sequence that can stand in
    // its way, covering what a claim reads of them (see `crate::claim`).
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_sequence ON duraq_jobs \
                    (sequence_key, created_at_ms, id, status, sequence_continues) \
                    WHERE sequence_key IS NOT NULL \
                    AND status IN ('queued', 'handed_off', 'failed', 'orphaned')"],
        ..version(
            17,
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
            "CREATE INDEX IF NOT EXISTS duraq_jobs_claim_plain ON duraq_jobs \
             (priority, scheduled_at_ms, created_at_ms, id) \
             WHERE status = 'queued' AND fairness_key IS NULL",
            "CREATE INDEX IF NOT EXISTS duraq_jobs_fair ON duraq_jobs \
             (priority, queue, fairness_key, scheduled_at_ms, created_at_ms, id) \
             WHERE status = 'queued' AND fairness_key IS NOT NULL",
            "CREATE INDEX IF NOT EXISTS duraq_jobs_fair_due ON duraq_jobs \
             (scheduled_at_ms) WHERE status = 'queued' AND fairness_key IS NOT NULL",
        ],
        retired_indexes: &["duraq_jobs_claim"],
        ..version(
            18,
            "fairness",
            "Fairness keys (`fairness_key`): due jobs of different keys are claimed in turn.",
        )
    },
    // `duraq_job_steps` and `duraq_job_signals`: a row per job and step or
    // signal name, so jobs without them cost nothing more (see `crate::steps`,
    // `crate::signals` and `docs/durable.md`); `duraq_jobs.awaiting_signal`
    // (nullable) added in place. A binary of version 18 would neither delete
    // these rows with their job nor end a wait, so it must refuse such a file.
    SchemaVersion {
        indexes: &["CREATE INDEX IF NOT EXISTS duraq_jobs_awaiting ON duraq_jobs \
                    (scheduled_at_ms) WHERE status = 'pending' AND awaiting_signal IS NOT NULL"],
        ..version(
            19,
            "durable_execution",
            "Durable steps and signals: what each step of a job returned (`duraq_job_steps`), the signals it received (`duraq_job_signals`) and the one a pending job waits for (`awaiting_signal`).",
        )
    },
    // `duraq_jobs.parent_id` (nullable), added in place. A binary of version
    // 19 would finish a child without waking the parent that waits for it,
    // so it must refuse such a file.
    version(
        20,
        "children",
        "Spawned children (`parent_id`): a job that finishes delivers its outcome to the job that spawned it and waits for it.",
    ),
];

/// The newest schema version this binary knows (the last of
/// [`SCHEMA_VERSIONS`]).
pub const SCHEMA_VERSION: i64 = SCHEMA_VERSIONS[SCHEMA_VERSIONS.len() - 1].version;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::COLUMNS;
    use crate::schema_def::TABLES;

    #[test]
    fn versions_count_up_from_one_with_unique_names() {
        for (i, v) in SCHEMA_VERSIONS.iter().enumerate() {
            assert_eq!(v.version, i as i64 + 1);
            assert!(!v.description.is_empty() && !v.description.contains('|'));
        }
        let mut names: Vec<&str> = SCHEMA_VERSIONS.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMA_VERSIONS.len());
    }

    #[test]
    fn every_table_and_column_names_a_known_version() {
        let known = |since: i64| SCHEMA_VERSIONS.iter().any(|v| v.version == since);
        for table in TABLES {
            assert!(known(table.since), "{}", table.name);
            for c in table.columns {
                assert!(
                    c.since >= table.since && known(c.since),
                    "{}.{}",
                    table.name,
                    c.name
                );
            }
        }
        assert!(COLUMNS.iter().all(|c| known(c.column.since)));
    }

    #[test]
    fn no_index_is_both_created_and_retired() {
        let created: Vec<&str> = SCHEMA_VERSIONS
            .iter()
            .flat_map(|v| v.indexes)
            .map(|sql| sql.split_whitespace().nth(5).unwrap())
            .collect();
        for v in SCHEMA_VERSIONS {
            for retired in v.retired_indexes {
                assert!(!created.contains(retired), "{retired}");
            }
        }
        assert_eq!(created.len(), 18);
    }
}
