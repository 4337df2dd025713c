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
    use duraq_core::prelude::*;
    use duraq_core::EnqueueOptions;
    use duraq_store_postgres::PostgresStore;

    use crate::common::{blocked_by, claim_req, hold_paused_queues, job, options, schema, url};

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
        let (holder, holder_pid) = hold_paused_queues(&s).await;
        let claimer = store.clone();
        let claim = tokio::spawn(async move { claimer.claim(&claim_req(2)).await });
        // This test's candidate read of the highest priority, blocked.
        blocked_by(holder_pid, &s, "priority = (SELECT").await;
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
