//! Schema creation and migration (`docs/operating.md`) on PostgreSQL: versions
//! recorded once however many processes start at once, incompatible tables and newer ledgers
//! refused, schema names validated. Needs `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode};
    use duraq_store_postgres::SCHEMA_VERSION;

    use crate::common::{filenodes, job, open, open_existing, raw_client, schema};

    /// Takes schema `s` back to the shape version 5 created: no priorities, rate
    /// limits or worker registrations, the due index `duraq_jobs_due` in place of
    /// the claim index.
    async fn back_to_v5(client: &tokio_postgres::Client, s: &str) {
        client
            .batch_execute(&format!(
                "ALTER TABLE {s}.duraq_workers DROP COLUMN host, DROP COLUMN pid, \
                 DROP COLUMN queues, DROP COLUMN job_names, DROP COLUMN slots, DROP COLUMN started_at_ms; \
                 DROP INDEX {s}.duraq_jobs_claim_plain, {s}.duraq_jobs_fair; DROP TABLE {s}.duraq_rate_limits, {s}.duraq_rate_starts; \
                 ALTER TABLE {s}.duraq_jobs DROP COLUMN priority, DROP COLUMN rate_key, \
                 DROP COLUMN rate_max, DROP COLUMN rate_period_ms; \
                 CREATE INDEX duraq_jobs_due ON {s}.duraq_jobs (scheduled_at_ms, created_at_ms, id COLLATE \"C\") \
                 WHERE status = 'queued'; DELETE FROM {s}.duraq_migrations WHERE version >= 6"
            ))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn migrations_are_recorded_once_and_concurrent_openers_agree() {
        let s = schema();
        let opens: Vec<_> = (0..6)
            .map(|_| {
                tokio::spawn({
                    let s = s.clone();
                    async move { open(&s).await }
                })
            })
            .collect();
        let mut applied = Vec::new();
        for handle in opens {
            applied.extend(
                handle
                    .await
                    .unwrap()
                    .expect("open")
                    .migration()
                    .applied
                    .clone(),
            );
        }
        assert_eq!(
            applied,
            (1..=SCHEMA_VERSION).collect::<Vec<_>>(),
            "each version applied exactly once"
        );
        let store = open(&s).await.unwrap();
        assert!(store.migration().applied.is_empty());
        let health = store.health().await.unwrap();
        assert_eq!(
            (health.backend.as_str(), health.schema_version),
            ("postgres", SCHEMA_VERSION)
        );
    }

    #[tokio::test]
    async fn incompatible_tables_and_newer_ledgers_are_refused() {
        let client = raw_client().await;
        let bad_columns = schema();
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {bad_columns}; CREATE TABLE {bad_columns}.duraq_jobs (id text)"
            ))
            .await
            .unwrap();
        let err = open(&bad_columns).await.err().expect("refused");
        assert_eq!(err.code(), ErrorCode::SchemaIncompatible, "{err}");
        let exists: i64 = client
            .query_one(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
                &[&bad_columns],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            exists, 1,
            "nothing was created next to the incompatible table"
        );

        let newer = schema();
        open(&newer).await.unwrap();
        client
            .execute(
                &format!("INSERT INTO {newer}.duraq_migrations (scope, version, applied_at_ms) VALUES ($1, $2, 0)"),
                &[&duraq_store_postgres::MIGRATION_SCOPE, &(SCHEMA_VERSION + 1)],
            )
            .await
            .unwrap();
        assert_eq!(
            open(&newer).await.err().expect("refused").code(),
            ErrorCode::SchemaIncompatible
        );
    }

    #[tokio::test]
    async fn upgrade_from_v1_keys_dedupe_scopes_only_and_keeps_rows() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let first = store
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        drop(store);
        // Back to the shape version 1 created.
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        client
            .batch_execute(&format!(
                "DROP INDEX {s}.duraq_jobs_dedupe_key; ALTER TABLE {s}.duraq_jobs DROP COLUMN dedupe_key; \
                 DROP TABLE {s}.duraq_dedupe_scopes; \
                 CREATE INDEX duraq_jobs_dedupe ON {s}.duraq_jobs (job_name, queue, args_digest) \
                 WHERE status = 'queued'; DELETE FROM {s}.duraq_migrations WHERE version > 1"
            ))
            .await
            .unwrap();

        // A reading open upgrades an older duraq schema (it only refuses to create one).
        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (2..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        let indexes: Vec<String> = client
            .query(
                "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND tablename LIKE 'duraq\\_jobs%'",
                &[&s],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(indexes.iter().any(|i| i == "duraq_jobs_dedupe_key"));
        assert!(
            !indexes.iter().any(|i| i == "duraq_jobs_dedupe"),
            "{indexes:?}"
        );
        assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
        // The job from before the upgrade is found by a dedupe request.
        let again = store
            .enqueue(job("j", EnqueueOptions::new().deduplicate_while_queued()))
            .await
            .unwrap();
        assert_eq!(
            again,
            EnqueueOutcome::Deduplicated(first.job_id().to_owned())
        );
        assert!(open(&s).await.unwrap().migration().applied.is_empty());
    }

    /// A version-2 schema (today's before counts per queue) with jobs in several
    /// queues and statuses is upgraded in place: the per-queue counters are filled
    /// from the jobs once, and later mutations keep them exact.
    #[tokio::test]
    async fn upgrade_to_v3_backfills_counts_per_queue() {
        use duraq_core::driver::ClaimRequest;
        use duraq_core::Outcome;
        let s = schema();
        let store = open(&s).await.unwrap();
        for queue in ["mail", "mail", "mail", "video"] {
            store
                .enqueue(job("j", EnqueueOptions::new().queue(queue)))
                .await
                .unwrap();
        }
        let claim = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            queues: Some(vec!["mail".into()]),
            limit: 2,
            ..ClaimRequest::default()
        };
        let claimed = store.claim(&claim).await.unwrap();
        assert_eq!(claimed.len(), 2);
        assert_eq!(
            store
                .report_batch(vec![(claimed[0].lease().unwrap(), Outcome::Completed)])
                .await
                .unwrap(),
            [true]
        );
        let before = store.queue_snapshot().await.unwrap();
        drop(store);
        // Back to the shape version 2 created.
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        client
            .batch_execute(&format!(
                "DROP TABLE {s}.duraq_queue_count_shards; DROP INDEX {s}.duraq_jobs_queue_due; \
                 DROP TABLE {s}.duraq_paused_queues; DELETE FROM {s}.duraq_migrations WHERE version >= 3"
            ))
            .await
            .unwrap();

        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (3..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        let after = store.queue_snapshot().await.unwrap();
        assert_eq!(
            (after.revision, &after.counts, super::counts_of(&after)),
            (before.revision, &before.counts, super::counts_of(&before)),
            "backfilled counts equal the ones kept live (latency moves with the clock)"
        );
        let mail = after.queue("mail").unwrap().counts;
        assert_eq!(
            (mail.queued, mail.handed_off, mail.completed, mail.all),
            (1, 1, 1, 3)
        );
        assert_eq!(after.queue("video").unwrap().counts.queued, 1);
        store
            .report_batch(vec![(claimed[1].lease().unwrap(), Outcome::Completed)])
            .await
            .unwrap();
        let now = store.queue_snapshot().await.unwrap();
        let mail = now.queue("mail").unwrap().counts;
        assert_eq!((mail.handed_off, mail.completed), (0, 2));
        assert_eq!(now.revision, store.count_snapshot().await.unwrap().revision);
        assert!(open(&s).await.unwrap().migration().applied.is_empty());
    }

    /// A version-3 schema (counts per queue, no paused queues) is upgraded in
    /// place: the paused-queue table is created empty and a pause then holds
    /// across reopening.
    #[tokio::test]
    async fn upgrade_to_v4_adds_paused_queues() {
        use duraq_core::driver::ClaimRequest;
        use duraq_core::QueueName;
        let s = schema();
        let store = open(&s).await.unwrap();
        for queue in ["mail", "video"] {
            store
                .enqueue(job("j", EnqueueOptions::new().queue(queue)))
                .await
                .unwrap();
        }
        drop(store);
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        client
            .batch_execute(&format!(
                "DROP TABLE {s}.duraq_paused_queues; ALTER TABLE {s}.duraq_jobs DROP COLUMN errors; \
                 DELETE FROM {s}.duraq_migrations WHERE version >= 4"
            ))
            .await
            .unwrap();
        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (4..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert!(store
            .queue_snapshot()
            .await
            .unwrap()
            .queues
            .iter()
            .all(|q| !q.paused));
        assert!(store
            .pause_queue(&QueueName::new("mail").unwrap())
            .await
            .unwrap());
        drop(store);
        let store = open(&s).await.unwrap();
        assert!(store.migration().applied.is_empty());
        assert!(
            store
                .queue_snapshot()
                .await
                .unwrap()
                .queue("mail")
                .unwrap()
                .paused
        );
        let claim = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 10,
            ..ClaimRequest::default()
        };
        let claimed = store.claim(&claim).await.unwrap();
        assert_eq!(
            claimed.iter().map(|j| j.queue.as_str()).collect::<Vec<_>>(),
            ["video"]
        );
    }

    /// The claim's candidate query, as the store runs it (sorts off, see
    /// `claim::WALK_DUE_INDEX`), walks the due index and checks paused queues
    /// with one hashed subplan over the tiny paused table: never a subquery per
    /// job, never a sort of the backlog.
    #[tokio::test]
    async fn claim_plan_checks_paused_queues_once_per_statement() {
        let s = schema();
        let store = open(&s).await.unwrap();
        for queue in ["mail", "video"] {
            store
                .enqueue(job("j", EnqueueOptions::new().queue(queue)))
                .await
                .unwrap();
        }
        drop(store);
        let mut client = raw_client().await;
        let tx = client.transaction().await.unwrap();
        tx.batch_execute(&format!(
            "INSERT INTO {s}.duraq_paused_queues VALUES ('mail', 0); ANALYZE {s}.duraq_paused_queues; \
             SELECT set_config('enable_sort', 'off', true)"
        ))
        .await
        .unwrap();
        let explain = |sql: String| {
            let tx = &tx;
            async move {
                tx.query(&format!("EXPLAIN {sql}"), &[])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        };
        let claim = explain(format!(
            "SELECT id FROM {s}.duraq_jobs WHERE status = 'queued' AND fairness_key IS NULL \
             AND priority = 0 AND scheduled_at_ms <= 9e15::int8 \
             AND job_name = ANY('{{j}}') AND (NULL::text[] IS NULL OR queue = ANY(NULL::text[])) \
             AND NOT (id = ANY('{{}}')) AND queue NOT IN (SELECT queue FROM {s}.duraq_paused_queues) \
             ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT 4 FOR UPDATE SKIP LOCKED"
        ))
        .await;
        assert!(claim.contains("duraq_jobs_claim"), "claim plan:\n{claim}");
        assert!(
            claim.contains("hashed SubPlan") || claim.contains("Anti Join"),
            "the paused check is hashed once per statement:\n{claim}"
        );
        assert!(!claim.contains("Sort"), "claim plan:\n{claim}");
        let timer = explain(format!(
            "WITH RECURSIVE levels AS (SELECT (SELECT priority FROM {s}.duraq_jobs WHERE status = 'queued' \
             AND fairness_key IS NULL \
             ORDER BY priority DESC LIMIT 1) AS p UNION ALL SELECT (SELECT priority FROM {s}.duraq_jobs \
             WHERE status = 'queued' AND fairness_key IS NULL AND priority < levels.p \
             ORDER BY priority DESC LIMIT 1) FROM levels \
             WHERE levels.p IS NOT NULL) SELECT min(n.scheduled_at_ms) FROM levels, LATERAL \
             (SELECT scheduled_at_ms FROM {s}.duraq_jobs WHERE status = 'queued' \
             AND fairness_key IS NULL AND priority = levels.p \
             AND job_name = ANY('{{j}}') AND (NULL::text[] IS NULL OR queue = ANY(NULL::text[])) \
             AND queue NOT IN (SELECT queue FROM {s}.duraq_paused_queues) \
             ORDER BY scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT 1) AS n WHERE levels.p IS NOT NULL"
        ))
        .await;
        assert!(
            timer.contains("duraq_jobs_claim") && !timer.contains("Seq Scan on duraq_jobs"),
            "timer plan:\n{timer}"
        );
        println!("claim plan:\n{claim}\ntimer plan:\n{timer}");
    }

    /// A version-4 schema (today's before the error history) with a failed job
    /// and a queued one is upgraded in place: `errors` is added with its constant
    /// default (no table rewrite), old rows read an empty history, and new
    /// failures append to it.
    #[tokio::test]
    async fn upgrade_to_v5_adds_the_error_history_in_place() {
        use duraq_core::driver::ClaimRequest;
        use duraq_core::Outcome;
        let s = schema();
        let store = open(&s).await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..2 {
            let created = store
                .enqueue(job("j", EnqueueOptions::new().max_retries(0)))
                .await
                .unwrap();
            ids.push(created.job_id().to_owned());
        }
        let claim = |worker: &str| ClaimRequest {
            worker_id: worker.into(),
            job_names: vec!["j".into()],
            limit: 1,
            ..ClaimRequest::default()
        };
        let first = store.claim(&claim("w1")).await.unwrap().remove(0);
        assert_eq!(
            store
                .report_batch(vec![(first.lease().unwrap(), Outcome::failed("before"))])
                .await
                .unwrap(),
            [true]
        );
        drop(store);
        // Back to the shape version 4 created.
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        client
            .batch_execute(&format!(
                "ALTER TABLE {s}.duraq_jobs DROP COLUMN errors; \
                 DELETE FROM {s}.duraq_migrations WHERE version >= 5"
            ))
            .await
            .unwrap();
        let file_before = filenodes(&client, &s, &["duraq_jobs_live"]).await;

        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (5..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(
            filenodes(&client, &s, &["duraq_jobs_live"]).await,
            file_before,
            "no table rewrite"
        );
        let old = store.get_job(&ids[0]).await.unwrap().unwrap();
        assert_eq!(
            (old.last_error.as_deref(), old.errors.len()),
            (Some("before"), 0),
            "an old failed row keeps lastError and reads an empty history"
        );
        let second = store.claim(&claim("w2")).await.unwrap().remove(0);
        assert_eq!(second.id, ids[1]);
        assert_eq!(
            store
                .report_batch(vec![(
                    second.lease().unwrap(),
                    Outcome::failed("after\0nul")
                )])
                .await
                .unwrap(),
            [true]
        );
        let failed = store.get_job(&ids[1]).await.unwrap().unwrap();
        assert_eq!(failed.errors.len(), 1);
        assert_eq!(
            (
                failed.errors[0].attempt,
                failed.errors[0].error.as_str(),
                failed.errors[0].worker_id.as_deref()
            ),
            (1, "after\0nul", Some("w2")),
            "the history keeps the message exactly (JSON text, not jsonb)"
        );
        assert!(open(&s).await.unwrap().migration().applied.is_empty());
    }

    /// A version-5 schema with queued and failed jobs is upgraded in place:
    /// `priority` (constant default 0) and the rate columns are added without a
    /// table rewrite, the due index is replaced by the claim index, old rows read
    /// priority 0 and no rate limit and are claimed as before, and new jobs with
    /// priorities and rate limits work at once.
    #[tokio::test]
    async fn upgrade_to_v6_adds_priorities_and_rate_limits_in_place() {
        use duraq_core::driver::ClaimRequest;
        let s = schema();
        let store = open(&s).await.unwrap();
        let old = store
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        drop(store);
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        let file_before = filenodes(&client, &s, &["duraq_jobs_live"]).await;

        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (6..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(
            filenodes(&client, &s, &["duraq_jobs_live"]).await,
            file_before,
            "no table rewrite"
        );
        let indexes: Vec<String> = client
            .query(
                "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND tablename LIKE 'duraq\\_jobs%'",
                &[&s],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            indexes.contains(&"duraq_jobs_claim_plain".to_owned()),
            "{indexes:?}"
        );
        assert!(
            !indexes.contains(&"duraq_jobs_due".to_owned()),
            "{indexes:?}"
        );
        let row = store.get_job(old.job_id()).await.unwrap().unwrap();
        assert_eq!((row.priority, row.rate_key), (0, None));
        let high = store
            .enqueue(job(
                "j",
                EnqueueOptions::new().priority(9).rate_limit(
                    "api",
                    1,
                    std::time::Duration::from_secs(60),
                ),
            ))
            .await
            .unwrap();
        let claim = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 5,
            ..ClaimRequest::default()
        };
        let claimed: Vec<String> = store
            .claim(&claim)
            .await
            .unwrap()
            .into_iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(claimed, [high.job_id(), old.job_id()]);
    }

    /// A version-5 schema (today's before visible workers) with a worker's
    /// heartbeat row is upgraded in place: `duraq_workers` gains the nullable
    /// registration columns (no rewrite), the old row keeps its heartbeat and is
    /// not listed, and a worker registers and is listed after the upgrade.
    #[tokio::test]
    async fn upgrade_to_v6_adds_worker_registrations_in_place() {
        use duraq_core::driver::WorkerInfo;
        use duraq_core::inspect::WorkerState;
        let s = schema();
        let store = open(&s).await.unwrap();
        store.heartbeat("old").await.unwrap();
        drop(store);
        let client = raw_client().await;
        back_to_v5(&client, &s).await;
        let beat_sql =
            format!("SELECT last_heartbeat_ms FROM {s}.duraq_workers WHERE worker_id = 'old'");
        let before: i64 = client.query_one(&beat_sql, &[]).await.unwrap().get(0);

        let store = open_existing(&s).await.unwrap();
        assert_eq!(
            store.migration().applied,
            (6..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        let after: i64 = client.query_one(&beat_sql, &[]).await.unwrap().get(0);
        assert_eq!(after, before, "the old row kept");
        let nullable: Vec<(String, String)> = client
            .query(
                "SELECT column_name::text, is_nullable::text FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = 'duraq_workers' ORDER BY ordinal_position",
                &[&s],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let added: Vec<_> = nullable[2..]
            .iter()
            .map(|(n, nn)| (n.as_str(), nn.as_str()))
            .collect();
        assert_eq!(
            added,
            [
                ("host", "YES"),
                ("pid", "YES"),
                ("queues", "YES"),
                ("job_names", "YES"),
                ("slots", "YES"),
                ("started_at_ms", "YES")
            ]
        );
        assert!(
            store.list_workers(60_000).await.unwrap().is_empty(),
            "a heartbeat-only row is not a registered worker"
        );
        let info = WorkerInfo {
            worker_id: "new".into(),
            host: "h".into(),
            pid: u32::MAX,
            queues: Some(vec!["q".into()]),
            job_names: vec!["j".into()],
            slots: 3,
        };
        store.register_worker(&info).await.unwrap();
        let listed = store.list_workers(60_000).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (&listed[0].info, listed[0].state),
            (&info, WorkerState::Alive)
        );
        assert!(open(&s).await.unwrap().migration().applied.is_empty());
    }

    #[tokio::test]
    async fn schema_names_must_be_identifiers() {
        for bad in ["", "1abc", "a b", "x\"; DROP TABLE y; --", &"a".repeat(64)] {
            assert!(open(bad).await.is_err(), "{bad:?} accepted");
        }
    }
}

fn counts_of(
    snap: &duraq_core::inspect::QueueSnapshot,
) -> Vec<(String, duraq_core::inspect::StatusCounts)> {
    snap.queues
        .iter()
        .map(|q| (q.queue.clone(), q.counts))
        .collect()
}
