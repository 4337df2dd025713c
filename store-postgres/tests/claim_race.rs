//! A claim reads the priorities of queued jobs and, in the same round trip,
//! the candidates of the highest; the second statement may see a priority
//! committed after the first. Needs `DATABASE_URL`; every test
//! works in its own fresh schema.
//!
//! Why here and not in the conformance suite: the window between the two
//! statements is microseconds wide, and only a lock held by another session
//! can hold it open, which is PostgreSQL's own business.

mod common;

mod postgres {
    use std::time::Duration;

    use duraq_core::{ClaimRequest, EnqueueOptions, Store};
    use duraq_store_postgres::PostgresStore;

    use crate::common::{job, options, raw_client, schema, url};

    fn claim_req(limit: usize) -> ClaimRequest {
        ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit,
            ..ClaimRequest::default()
        }
    }

    /// The candidates read ahead belong to a priority the first statement did
    /// not list (a job's priority changed between the reads): they are claimed
    /// in that priority's place (first, here), not left locked and unclaimed.
    #[tokio::test]
    async fn candidates_of_a_priority_enqueued_between_the_reads_are_claimed_first() {
        let s = schema();
        // One connection, so the claim below runs on the one the warm-up
        // claims prepared its statements on (a statement prepared anew would
        // wait for the lock before the first read, and there would be no race).
        let mut opts = options(&s);
        opts.pool_size = 1;
        opts.listen = false;
        let store = PostgresStore::connect(&url(), opts).await.unwrap();
        // Past the uses at which the pool drops cached statements (4th, 8th,
        // 16th, 32nd), so the claim under test finds both statements prepared.
        for _ in 0..40 {
            assert!(store.claim(&claim_req(2)).await.unwrap().is_empty());
        }
        let low = |id: &str| job("j", EnqueueOptions::new()).with_id(id);
        store
            .enqueue_batch(vec![low("a"), low("b"), low("c")])
            .await
            .unwrap();
        // Another session holds the paused-queues table, which the candidate
        // query reads and the priorities query does not: the claim reads the
        // priorities (only 0), then waits to read candidates, with a snapshot
        // taken after the wait.
        let holder = raw_client().await;
        holder
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {s}.duraq_paused_queues IN ACCESS EXCLUSIVE MODE"
            ))
            .await
            .unwrap();
        let claimer = store.clone();
        let claim = tokio::spawn(async move { claimer.claim(&claim_req(2)).await });
        let holder_pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        // Waits until this test's candidate read (its schema's name is in the
        // statement) is blocked by the holder, as PostgreSQL's own isolation
        // tester does: it asks the server, which has no way to announce it, so
        // the loop polls; the pause only paces the polls, the condition is
        // what is waited for.
        let watcher = raw_client().await;
        let blocked = "SELECT count(*) FROM pg_stat_activity \
                       WHERE $2 = ANY(pg_blocking_pids(pid)) \
                       AND query LIKE '%priority = (SELECT%' AND strpos(query, $1) > 0";
        let mut polls = 0;
        while watcher
            .query_one(blocked, &[&s, &holder_pid])
            .await
            .unwrap()
            .get::<_, i64>(0)
            == 0
        {
            polls += 1;
            assert!(polls < 10_000, "the claim never waited for the lock");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // While the claim waits, the same session raises c to priority 5: the
        // candidate read, after the lock, sees it; the priorities read did not.
        holder
            .batch_execute(&format!(
                "UPDATE {s}.duraq_jobs SET priority = 5 WHERE id = 'c'; COMMIT"
            ))
            .await
            .unwrap();
        let claimed = claim.await.unwrap().unwrap();
        let ids: Vec<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["c", "a"], "the higher priority first");
        let c = store.get_job("c").await.unwrap().expect("c exists");
        assert_eq!(c.worker_id.as_deref(), Some("w"));
        store.close().await.unwrap();
    }
}
