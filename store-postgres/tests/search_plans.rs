//! The plans of `search_jobs` statements, read with `EXPLAIN` under the
//! settings the store gives their transaction (`enable_seqscan` off). Needs
//! `DATABASE_URL`; every test works in its own schema.
//!
//! Why: a search narrows by status or queue in SQL and pages by the list
//! index; a plan that read the whole jobs table would cost with history, not
//! with the page, and no behaviour test notices. The SQL is written out here,
//! as `store-postgres/src/search.rs` builds it.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, JobFilter, JobStatus};

    use crate::common::{job, open, raw_client, schema};

    const ORDER: &str = "ORDER BY created_at_ms DESC, id COLLATE \"C\" DESC";

    /// Statuses alone, a queue alone, both, and with the keyset cursor, as
    /// generic and as custom plans: never a sequential scan of the jobs table,
    /// on statistics where most jobs are completed and the asked-for status or
    /// queue is rare (without `enable_seqscan` off, a custom plan for the rare
    /// queue is a sequential scan and a sort).
    #[tokio::test]
    async fn a_search_by_status_or_queue_never_scans_the_table() {
        let s = schema();
        let store = open(&s).await.unwrap();
        // Queue `b` is rare: 5 jobs among 4,005.
        for (q, n) in [("a", 4_000), ("b", 5)] {
            let jobs = (0..n)
                .map(|_| job("j", EnqueueOptions::new().queue(q)))
                .collect();
            store.enqueue_batch(jobs).await.unwrap();
        }
        // The store answers through these statements too.
        let page = store
            .search_jobs(&JobFilter {
                statuses: vec![JobStatus::Queued],
                queue: Some("b".into()),
                limit: Some(3),
                ..JobFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(page.jobs.len(), 3);
        store.close().await.unwrap();
        let mut client = raw_client().await;
        client
            .batch_execute(&format!(
                "UPDATE {s}.duraq_jobs SET status = 'completed', completed_at_ms = created_at_ms \
                 WHERE id IN (SELECT id FROM {s}.duraq_jobs WHERE queue = 'a' ORDER BY id LIMIT 3900); \
                 UPDATE {s}.duraq_jobs SET status = 'failed', failed_at_ms = created_at_ms \
                 WHERE id IN (SELECT id FROM {s}.duraq_jobs WHERE status = 'queued' AND queue = 'a' LIMIT 5); \
                 ANALYZE {s}.duraq_jobs"
            ))
            .await
            .unwrap();
        let cursor = "(created_at_ms, id COLLATE \"C\") < ($2::bigint, $3::text COLLATE \"C\")";
        let cases = [
            ("(status = 'failed')", false),
            ("(status = 'failed' OR status = 'cancelled')", false),
            ("(status = 'queued') AND queue = $4::text", true),
            ("queue = $4::text", true),
            ("(status = 'completed')", true),
        ];
        let modes = ["force_generic_plan", "force_custom_plan"];
        let runs = modes
            .iter()
            .flat_map(|m| cases.iter().map(move |c| (*m, *c)));
        for (n, (mode, (cond, with_cursor))) in runs.enumerate() {
            let tx = client.transaction().await.unwrap();
            tx.batch_execute(&format!(
                "SELECT set_config('enable_seqscan', 'off', true), \
                 set_config('plan_cache_mode', '{mode}', true)"
            ))
            .await
            .unwrap();
            let (cond, args) = if with_cursor {
                (
                    format!("{cond} AND {cursor}"),
                    "(500, 9000000000000000, 'z', 'b')",
                )
            } else {
                (cond.replace("$4", "$2"), "(500)")
            };
            let types = if with_cursor {
                "(int8, int8, text, text)"
            } else {
                "(int8)"
            };
            tx.batch_execute(&format!(
                "PREPARE search_{n}{types} AS SELECT * FROM {s}.duraq_jobs \
                 WHERE {cond} {ORDER} LIMIT $1::bigint"
            ))
            .await
            .unwrap();
            let plan: String = tx
                .query(&format!("EXPLAIN EXECUTE search_{n}{args}"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n");
            assert!(
                !plan.contains("Seq Scan"),
                "{cond} ({mode}): no sequential scan:\n{plan}"
            );
            tx.rollback().await.unwrap();
        }
    }

    /// `list_workflows` reads its page of ids and their steps through the
    /// partial workflow index, never the whole jobs table, with or without a
    /// `before` bound (the statements as `store-postgres/src/search.rs` writes
    /// them).
    #[tokio::test]
    async fn a_workflow_page_reads_the_workflow_index_only() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let plain = (0..3_000)
            .map(|_| job("j", EnqueueOptions::new()))
            .collect();
        store.enqueue_batch(plain).await.unwrap();
        for n in 0..20 {
            let flow = duraq_core::Workflow::new("w")
                .step("a", job(&format!("a{n}"), EnqueueOptions::new()))
                .step_after("b", job("b", EnqueueOptions::new()), ["a"]);
            duraq_core::enqueue_workflow(&store, flow).await.unwrap();
        }
        let listed = store
            .list_workflows(&duraq_core::WorkflowListRequest {
                before: None,
                limit: 5,
            })
            .await
            .unwrap();
        assert_eq!(listed.len(), 5);
        store.close().await.unwrap();
        let mut client = raw_client().await;
        client
            .batch_execute(&format!("ANALYZE {s}.duraq_jobs"))
            .await
            .unwrap();
        let page = |bound: &str, limit: &str| {
            format!(
                "SELECT workflow_id, status, count(*), min(created_at_ms) FROM {s}.duraq_jobs \
                 WHERE workflow_id = ANY(ARRAY(SELECT DISTINCT workflow_id FROM {s}.duraq_jobs \
                 WHERE workflow_id IS NOT NULL {bound} ORDER BY workflow_id DESC LIMIT {limit})) \
                 GROUP BY workflow_id, status"
            )
        };
        for sql in [page("", "5"), page("AND workflow_id < 'f'", "5")] {
            let tx = client.transaction().await.unwrap();
            tx.batch_execute("SELECT set_config('enable_seqscan', 'off', true)")
                .await
                .unwrap();
            let plan: String = tx
                .query(&format!("EXPLAIN {sql}"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n");
            assert!(!plan.contains("Seq Scan"), "{sql}:\n{plan}");
            assert!(plan.contains("duraq_jobs_workflow"), "{sql}:\n{plan}");
            tx.rollback().await.unwrap();
        }
    }
}
