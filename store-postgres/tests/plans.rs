//! The plans of statements a worker runs every round, read with `EXPLAIN`
//! under the settings the store gives their transaction. Needs
//! `DATABASE_URL`; every test works in its own fresh schema.
//!
//! Why: these statements run thousands of times a second and are planned once
//! per cached statement (`force_generic_plan`), from whatever statistics the
//! table had then. A plan that reads more than the batch's own rows costs with
//! the table, not with the batch, and no behaviour test notices. The SQL is
//! written out here, as the store sends it.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::EnqueueOptions;

    use crate::common::{job, open, raw_client, schema};

    /// A batch of completions reaches its rows by primary key, even when the
    /// statistics were gathered while no job ran. With the fence's status as
    /// a literal (`j.status = 'handed_off'`), such a plan read every running
    /// job through a partial index on that status and hash-joined them
    /// against the batch; as a parameter, the plan cannot use those indexes.
    #[tokio::test]
    async fn a_completion_reaches_its_rows_by_key_whatever_the_statistics() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let jobs = (0..300).map(|_| job("j", EnqueueOptions::new())).collect();
        store.enqueue_batch(jobs).await.unwrap();
        store.close().await.unwrap();
        let mut client = raw_client().await;
        // Statistics of a table where nothing runs; then 200 jobs run.
        client
            .batch_execute(&format!(
                "ANALYZE {s}.duraq_jobs; \
                 UPDATE {s}.duraq_jobs SET status = 'handed_off', handoff_id = id, worker_id = 'w' \
                 WHERE id IN (SELECT id FROM {s}.duraq_jobs ORDER BY id LIMIT 200)"
            ))
            .await
            .unwrap();
        let tx = client.transaction().await.unwrap();
        // The settings `claim::BY_KEY_ONLY` gives a report's transaction.
        tx.batch_execute(
            "SELECT set_config('enable_seqscan', 'off', true), \
             set_config('plan_cache_mode', 'force_generic_plan', true)",
        )
        .await
        .unwrap();
        tx.batch_execute(&format!(
            "PREPARE complete(text[], text[], int8, text) AS \
             UPDATE {s}.duraq_jobs AS j SET status = 'completed', completed_at_ms = $3 \
             FROM unnest($1::text[], $2::text[]) AS v(id, handoff_id) \
             WHERE j.id = v.id AND j.status = $4::text AND j.handoff_id = v.handoff_id \
             RETURNING j.id, j.queue, j.schedule_key, j.reservation_key, j.has_dependents"
        ))
        .await
        .unwrap();
        let ids: Vec<String> = tx
            .query(
                &format!(
                    "SELECT id FROM {s}.duraq_jobs WHERE status = 'handed_off' ORDER BY id LIMIT 50"
                ),
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(ids.len(), 50);
        // Job ids are UUIDs: safe to write into the statement.
        let array = format!("ARRAY['{}']", ids.join("','"));
        let plan: String = tx
            .query(
                &format!("EXPLAIN EXECUTE complete({array}, {array}, 0, 'handed_off')"),
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            plan.contains("Index Scan using duraq_jobs_live_pkey on duraq_jobs_live j"),
            "the batch's rows by the live partition's primary key:\n{plan}"
        );
        for index in ["duraq_jobs_reserved_key", "duraq_jobs_running"] {
            assert!(!plan.contains(index), "no walk of {index}:\n{plan}");
        }
        assert!(!plan.contains("Bitmap"), "no bitmap scan:\n{plan}");
    }

    /// Settling the dependents of finished jobs reads their next edges (after
    /// a cursor, at most a bound) through a range of the edge table's primary
    /// key and each dependent by its own, never the pending jobs
    /// (`release.rs`): its cost is the finished jobs' edges walked, whatever
    /// the number of jobs waiting.
    #[tokio::test]
    async fn a_release_reads_only_the_finished_jobs_edges() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let first = job("a", EnqueueOptions::new());
        let mut jobs = vec![job("b", EnqueueOptions::new().after(first.id()))];
        let dep = first.id().to_owned();
        jobs.insert(0, first);
        for _ in 0..200 {
            let other = job("x", EnqueueOptions::new());
            let waits = job("y", EnqueueOptions::new().after(other.id()));
            jobs.extend([other, waits]);
        }
        store.enqueue_batch(jobs).await.unwrap();
        store.close().await.unwrap();
        let mut client = raw_client().await;
        client
            .batch_execute(&format!(
                "ANALYZE {s}.duraq_jobs; ANALYZE {s}.duraq_job_dependents"
            ))
            .await
            .unwrap();
        let tx = client.transaction().await.unwrap();
        tx.batch_execute(
            "SELECT set_config('enable_seqscan', 'off', true), \
             set_config('plan_cache_mode', 'force_generic_plan', true)",
        )
        .await
        .unwrap();
        tx.batch_execute(&format!(
            "PREPARE dependents(text[], text[], int8[]) AS \
             WITH e AS MATERIALIZED (SELECT s.dep AS dep_id, x.job_id, x.on_failure, x.n \
             FROM unnest($1::text[], $2::text[], $3::int8[]) AS s(dep, after, lim) \
             CROSS JOIN LATERAL (SELECT d.job_id, d.on_failure, row_number() OVER (ORDER BY d.job_id) AS n \
             FROM {s}.duraq_job_dependents AS d WHERE d.dep_id = s.dep AND d.job_id > s.after \
             ORDER BY d.job_id LIMIT s.lim) AS x), \
             j AS (SELECT id, queue, status, open_dependencies, scheduled_at_ms, has_dependents \
             FROM {s}.duraq_jobs WHERE id = ANY(ARRAY(SELECT job_id FROM e)) \
             ORDER BY id COLLATE \"C\" FOR UPDATE) \
             SELECT e.dep_id, e.on_failure, e.job_id, j.queue, j.status, j.open_dependencies, \
             j.scheduled_at_ms, j.has_dependents FROM e LEFT JOIN j ON j.id = e.job_id \
             ORDER BY e.dep_id, e.n"
        ))
        .await
        .unwrap();
        let plan: String = tx
            .query(
                &format!("EXPLAIN EXECUTE dependents(ARRAY['{dep}'], ARRAY[''], ARRAY[1001])"),
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            plan.contains("Index Cond: ((dep_id = s.dep) AND (job_id > s.after))")
                && plan.contains("Index Scan using duraq_job_dependents_pkey"),
            "each finished job's next edges as a range of the primary key:\n{plan}"
        );
        assert!(
            plan.contains("Limit"),
            "at most the bound plus one:\n{plan}"
        );
        assert!(
            plan.contains("Index Scan using duraq_jobs_live_pkey on duraq_jobs_live ")
                && plan.contains("Index Cond: (id = ANY ("),
            "each dependent by primary key:\n{plan}"
        );
        assert!(!plan.contains("Seq Scan"), "no table read:\n{plan}");
    }

    /// Continuing the release backlog takes one entry by its primary key,
    /// skipping those other workers hold, and reads its job by its own.
    #[tokio::test]
    async fn a_backlog_step_takes_one_entry_by_key() {
        let s = schema();
        let store = open(&s).await.unwrap();
        store.close().await.unwrap();
        let mut client = raw_client().await;
        let tx = client.transaction().await.unwrap();
        tx.batch_execute(
            "SELECT set_config('enable_seqscan', 'off', true), \
             set_config('plan_cache_mode', 'force_generic_plan', true)",
        )
        .await
        .unwrap();
        tx.batch_execute(&format!(
            "PREPARE take AS SELECT b.job_id, b.status, b.after_job_id, j.status \
             FROM {s}.duraq_release_backlog AS b LEFT JOIN {s}.duraq_jobs AS j ON j.id = b.job_id \
             ORDER BY b.job_id LIMIT 1 FOR UPDATE OF b SKIP LOCKED"
        ))
        .await
        .unwrap();
        let plan: String = tx
            .query("EXPLAIN EXECUTE take", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            plan.contains("duraq_release_backlog_pkey") && plan.contains("LockRows"),
            "the entry in key order, locked:\n{plan}"
        );
        assert!(
            plan.contains("duraq_jobs_live_pkey") && plan.contains("duraq_jobs_done_pkey"),
            "its job by primary key, live or finished:\n{plan}"
        );
        // (A Merge Append reads its inputs in order: its "Sort Key" is no sort.)
        let sorts = plan.lines().any(|l| {
            let node = l.trim_start().trim_start_matches("->").trim_start();
            node.starts_with("Sort  (") || node.starts_with("Incremental Sort  (")
        });
        assert!(!sorts, "no sort:\n{plan}");
    }

    /// A one-job enqueue keeps one generic plan once finished jobs are
    /// analyzed. Its statement carried a check of its ids against the
    /// finished partition over an array of unknown length; once the finished
    /// jobs were analyzed (finished in batches, out of id order, as a
    /// queue's are), the generic plan's estimate for that check dwarfed a
    /// one-id custom plan, so PostgreSQL planned the statement afresh on
    /// every call, which took longer than running it. Generated ids need no
    /// check, and the statement sent for them has none. (With the check, this
    /// test fails: 0 generic plans, 10 custom.)
    #[tokio::test]
    async fn a_single_enqueue_keeps_its_generic_plan_behind_finished_jobs() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let jobs = (0..5000).map(|_| job("j", EnqueueOptions::new())).collect();
        store.enqueue_batch(jobs).await.unwrap();
        store.close().await.unwrap();
        let mut client = raw_client().await;
        client
            .batch_execute(&format!(
                "DO $$ BEGIN FOR i IN 1..30 LOOP \
                 UPDATE {s}.duraq_jobs SET status = 'completed', completed_at_ms = i \
                 WHERE id IN (SELECT id FROM {s}.duraq_jobs WHERE status = 'queued' \
                 ORDER BY md5(id || i) LIMIT 100); END LOOP; END $$; \
                 ANALYZE {s}.duraq_jobs_live; ANALYZE {s}.duraq_jobs_done"
            ))
            .await
            .unwrap();
        let tx = client.transaction().await.unwrap();
        let sql = duraq_store_postgres::plain_enqueue_sql(&s, false);
        tx.batch_execute(&format!("PREPARE enqueue_one AS {sql}"))
            .await
            .unwrap();
        // Shard, the per-status deltas, the shard count; one job's columns
        // (those not named here NULL); its queue's deltas and totals.
        let job_arrays = |id: &str| -> String {
            let arrays: Vec<String> = duraq_store_postgres::plain_enqueue_columns()
                .into_iter()
                .map(|(name, ty)| match name {
                    "id" => format!("ARRAY['{id}']"),
                    "job_name" => "ARRAY['j']".to_owned(),
                    "args" => "ARRAY['[1]']".to_owned(),
                    "args_digest" => "ARRAY['d']".to_owned(),
                    "queue" => "ARRAY['default']".to_owned(),
                    "status" => "ARRAY['queued']".to_owned(),
                    "attempts" | "priority" => "ARRAY[0::int8]".to_owned(),
                    "max_retries" => "ARRAY[10::int8]".to_owned(),
                    "cost" => "ARRAY[1::int8]".to_owned(),
                    "keep_completed" => "ARRAY[true]".to_owned(),
                    "aged_steps" => "ARRAY[0::int8]".to_owned(),
                    "sequence_continues" => "ARRAY[false]".to_owned(),
                    "scheduled_at_ms" | "created_at_ms" => "ARRAY[1::int8]".to_owned(),
                    _ => format!("ARRAY[NULL::{ty}]"),
                })
                .collect();
            arrays.join(", ")
        };
        for i in 0..10 {
            let id = format!("00000000-0000-7000-8000-{i:012}");
            tx.batch_execute(&format!(
                "EXECUTE enqueue_one(3, 1, 0, 0, 0, 0, 0, 0, 16, {}, \
                 ARRAY['default'], ARRAY[1::int8], ARRAY[0::int8], ARRAY[0::int8], \
                 ARRAY[0::int8], ARRAY[0::int8], ARRAY[0::int8], ARRAY[0::int8], \
                 ARRAY[1::int8], ARRAY[0::int8], ARRAY[0::int8], ARRAY[0::int8], \
                 ARRAY[0::int8], ARRAY[0::int8])",
                job_arrays(&id)
            ))
            .await
            .unwrap();
        }
        let row = tx
            .query_one(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
                 WHERE name = 'enqueue_one'",
                &[],
            )
            .await
            .unwrap();
        let (generic, custom): (i64, i64) = (row.get(0), row.get(1));
        // PostgreSQL tries five custom plans before it weighs the generic one.
        assert!(
            generic >= 5 && custom <= 5,
            "generic {generic}, custom {custom}: planned afresh on every call"
        );
        tx.rollback().await.unwrap();
    }
}
