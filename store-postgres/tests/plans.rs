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
             RETURNING j.id, j.queue, j.schedule_key, j.reservation_key"
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
}
