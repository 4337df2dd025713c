//! The plans of `search_jobs` statements, read with `EXPLAIN` under the
//! settings the store gives their transaction (`enable_seqscan` off). Needs
//! `DATABASE_URL`; every test works in its own schema.
//!
//! Why: a search narrows by status or queue in SQL and pages by the list
//! index; a plan that read the whole jobs table would cost with history, not
//! with the page, and no behaviour test notices. The statements are the
//! store's own (`search_candidate_sql`).

mod common;

mod postgres {
    use duraq_core::inspect::JobFilter;
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, JobStatus};

    use duraq_store_postgres::search_candidate_sql;

    use crate::common::{job, open, raw_client, schema};

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
                 UPDATE {s}.duraq_jobs SET status = 'handed_off', worker_id = 'w', handoff_id = id \
                 WHERE id IN (SELECT id FROM {s}.duraq_jobs WHERE status = 'queued' AND queue = 'a' LIMIT 5); \
                 ANALYZE {s}.duraq_jobs"
            ))
            .await
            .unwrap();
        let queue_b = || Some("b".to_owned());
        let statuses = |s: &[JobStatus]| s.to_vec();
        // (filter, with the keyset cursor, an index the plan must read)
        let cases = [
            (
                statuses(&[JobStatus::Failed]),
                None,
                false,
                "duraq_jobs_failed",
            ),
            (
                statuses(&[JobStatus::Failed, JobStatus::Cancelled]),
                None,
                false,
                "duraq_jobs_cancelled",
            ),
            (
                statuses(&[JobStatus::Queued]),
                queue_b(),
                true,
                "duraq_jobs_",
            ),
            (Vec::new(), queue_b(), true, "duraq_jobs_running"),
            (statuses(&[JobStatus::Completed]), None, true, "duraq_jobs_"),
            (Vec::new(), None, false, "duraq_jobs_created_waiting"),
            (Vec::new(), None, true, "duraq_jobs_created_done"),
            (
                statuses(&[JobStatus::HandedOff]),
                None,
                true,
                "duraq_jobs_running",
            ),
            (
                statuses(&[JobStatus::Queued, JobStatus::HandedOff]),
                None,
                false,
                "duraq_jobs_running",
            ),
        ];
        let modes = ["force_generic_plan", "force_custom_plan"];
        let runs = modes
            .iter()
            .flat_map(|m| cases.iter().map(move |c| (*m, c)));
        for (n, (mode, (statuses, queue, with_cursor, index))) in runs.enumerate() {
            let filter = JobFilter {
                statuses: statuses.clone(),
                queue: queue.clone(),
                ..JobFilter::default()
            };
            let sql = search_candidate_sql(&s, &filter, *with_cursor);
            let mut args: Vec<&str> = Vec::new();
            if queue.is_some() {
                args.push("'b'");
            }
            if *with_cursor {
                args.extend(["9000000000000000", "'z'"]);
            }
            args.push("500");
            let tx = client.transaction().await.unwrap();
            tx.batch_execute(&format!(
                "SELECT set_config('enable_seqscan', 'off', true), \
                 set_config('plan_cache_mode', '{mode}', true); \
                 PREPARE search_{n} AS {sql}"
            ))
            .await
            .unwrap();
            let plan: String = tx
                .query(
                    &format!("EXPLAIN EXECUTE search_{n}({})", args.join(", ")),
                    &[],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n");
            assert!(
                !plan.contains("Seq Scan"),
                "{filter:?} ({mode}): no sequential scan:\n{plan}"
            );
            assert!(
                plan.contains(index),
                "{filter:?} ({mode}): reads {index}:\n{plan}"
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
            .list_workflows(&duraq_core::inspect::WorkflowListRequest {
                before: None,
                limit: 5,
                name: None,
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
