//! A worker's report-and-claim call sends `BEGIN` with its first statements
//! and `COMMIT` with its last, outside tokio-postgres' `Transaction`. These
//! tests hold what that must keep: the statements commit as one transaction
//! even when none was prepared yet, and a call dropped half way leaves nothing
//! claimed and its connection outside any transaction. Needs `DATABASE_URL`;
//! every test works in its own fresh schema.

mod common;

mod postgres {
    use std::time::Duration;

    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, JobStatus, Outcome};
    use duraq_store_postgres::PostgresStore;

    use crate::common::{
        blocked_by, claim_req, hold_paused_queues, job, options, raw_client, schema, url,
    };

    async fn one_connection_store(s: &str) -> PostgresStore {
        let mut opts = options(s);
        opts.pool_size = 1;
        opts.listen = false;
        PostgresStore::connect(&url(), opts).await.unwrap()
    }

    /// The transaction ids that wrote the worker's claimed jobs and its
    /// heartbeat row.
    async fn writers(s: &str, ids: &[&str]) -> Vec<String> {
        let client = raw_client().await;
        let rows = client
            .query(
                &format!(
                    "SELECT xmin::text FROM {s}.duraq_jobs WHERE id = ANY($1) \
                     UNION SELECT xmin::text FROM {s}.duraq_workers WHERE worker_id = 'w'"
                ),
                &[&ids],
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }

    /// On a new connection nothing is prepared: a statement that must be
    /// prepared is sent after its prepare's round trip, so a COMMIT joined
    /// with it would reach the server first and the statement would run in a
    /// transaction of its own. One writer for rows and heartbeat shows it did
    /// not, for a first claim and for completions with a claim.
    #[tokio::test]
    async fn a_call_commits_as_one_transaction_with_nothing_prepared() {
        let s = schema();
        let store = one_connection_store(&s).await;
        let jobs = |ids: &[&str]| -> Vec<_> {
            ids.iter()
                .map(|id| job("j", EnqueueOptions::new()).with_id(*id))
                .collect()
        };
        store.enqueue_batch(jobs(&["a", "b"])).await.unwrap();
        let first = store
            .report_and_claim(Vec::new(), &claim_req(2))
            .await
            .unwrap();
        assert_eq!(first.claimed.len(), 2);
        assert_eq!(writers(&s, &["a", "b"]).await.len(), 1, "one transaction");

        store.enqueue_batch(jobs(&["c", "d"])).await.unwrap();
        // A new store: a new connection, nothing prepared again.
        store.close().await.unwrap();
        let store = one_connection_store(&s).await;
        let reports = first
            .claimed
            .iter()
            .map(|j| (j.lease().unwrap(), Outcome::Completed))
            .collect();
        let second = store
            .report_and_claim(reports, &claim_req(2))
            .await
            .unwrap();
        assert_eq!(second.reported, [true, true]);
        assert_eq!(second.claimed.len(), 2);
        assert_eq!(
            writers(&s, &["a", "b", "c", "d"]).await.len(),
            1,
            "completions, claimed rows and heartbeat in one transaction"
        );
        store.close().await.unwrap();
    }

    /// A call dropped while its transaction is open (here: its candidate read
    /// waits for a lock another session holds) rolls back: its connection
    /// goes back to the pool idle, not idle in a transaction holding the
    /// candidates' row locks, and the next call claims them.
    #[tokio::test]
    async fn a_call_dropped_half_way_rolls_back() {
        let s = schema();
        let store = one_connection_store(&s).await;
        // Past the uses at which the pool drops cached statements (4th, 8th,
        // 16th, 32nd), so the call below sends its statements at once.
        for _ in 0..40 {
            let nothing = store.report_and_claim(Vec::new(), &claim_req(2)).await;
            assert!(nothing.unwrap().claimed.is_empty());
        }
        let jobs = ["a", "b"].map(|id| job("j", EnqueueOptions::new()).with_id(id));
        store.enqueue_batch(jobs.to_vec()).await.unwrap();
        let (holder, holder_pid) = hold_paused_queues(&s).await;
        let claimer = store.clone();
        let call =
            tokio::spawn(async move { claimer.report_and_claim(Vec::new(), &claim_req(2)).await });
        // The call's candidate read waits, inside its transaction.
        let backend = blocked_by(holder_pid, &s, "SELECT").await;
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
        holder.batch_execute("ROLLBACK").await.unwrap();
        // The read finishes, then the ROLLBACK the dropped call left queued.
        // Polled for the same reason as above; the pause only paces the polls.
        let watcher = raw_client().await;
        let state = "SELECT state FROM pg_stat_activity WHERE pid = $1";
        let mut polls = 0;
        loop {
            let now: Option<String> = watcher.query_one(state, &[&backend]).await.unwrap().get(0);
            if now.as_deref() == Some("idle") {
                break;
            }
            polls += 1;
            assert!(polls < 10_000, "the connection stayed {now:?}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for id in ["a", "b"] {
            let job = store.get_job(id).await.unwrap().expect("exists");
            assert_eq!(job.status, JobStatus::Queued, "{id} was not claimed");
        }
        let next = store
            .report_and_claim(Vec::new(), &claim_req(2))
            .await
            .unwrap();
        assert_eq!(next.claimed.len(), 2, "the next call claims both");
        store.close().await.unwrap();
    }
}
