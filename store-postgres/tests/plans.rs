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
            plan.contains("Index Scan using duraq_jobs_pkey on duraq_jobs j"),
            "the batch's rows by primary key:\n{plan}"
        );
        for index in ["duraq_jobs_reserved", "duraq_jobs_running"] {
            assert!(!plan.contains(index), "no walk of {index}:\n{plan}");
        }
        assert!(!plan.contains("Bitmap"), "no bitmap scan:\n{plan}");
    }

    /// Settling the dependents of finished jobs reads their edges through a
    /// range of the edge table's primary key and each dependent by its own,
    /// never the pending jobs (`release.rs`): its cost is the finished jobs'
    /// edges, whatever the number of jobs waiting.
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
            "PREPARE dependents(text[]) AS \
             WITH e AS MATERIALIZED (SELECT dep_id, job_id, on_failure \
             FROM {s}.duraq_job_dependents WHERE dep_id = ANY($1::text[])), \
             j AS (SELECT id, queue, status, open_dependencies, scheduled_at_ms, has_dependents \
             FROM {s}.duraq_jobs WHERE id = ANY(ARRAY(SELECT job_id FROM e)) \
             ORDER BY id COLLATE \"C\" FOR UPDATE) \
             SELECT e.dep_id, e.on_failure, j.id, j.queue, j.status, j.open_dependencies, \
             j.scheduled_at_ms, j.has_dependents FROM e JOIN j ON j.id = e.job_id"
        ))
        .await
        .unwrap();
        let plan: String = tx
            .query(&format!("EXPLAIN EXECUTE dependents(ARRAY['{dep}'])"), &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            plan.contains("Index Cond: (dep_id = ANY ($1))")
                && plan.contains("on duraq_job_dependents_pkey"),
            "the edges by primary key:\n{plan}"
        );
        assert!(
            plan.contains("Index Scan using duraq_jobs_pkey on duraq_jobs ")
                && plan.contains("Index Cond: (id = ANY ("),
            "each dependent by primary key:\n{plan}"
        );
        assert!(!plan.contains("Seq Scan"), "no table read:\n{plan}");
    }
}
