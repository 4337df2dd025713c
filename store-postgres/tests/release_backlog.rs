//! Several workers share the release backlog (`docs/workflows.md`, "Cost"):
//! a step takes an entry `FOR UPDATE SKIP LOCKED`, so an entry another
//! transaction holds is passed over, never waited for and never walked
//! twice. Needs `DATABASE_URL`; every test works in its own fresh schema.
//!
//! Why here and not in the conformance suite: the window in which another
//! worker holds an entry is one transaction wide, and only a lock held by
//! another session can hold it open.

mod common;

mod postgres {
    use std::time::Duration;

    use duraq_core::driver::rules::RELEASE_BATCH;
    use duraq_core::driver::ClaimRequest;
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, NewJob, Outcome};

    use crate::common::{job, open, raw_client, schema};

    /// A step that blocked instead of skipping would hang: fail instead.
    const PATIENCE: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn a_step_passes_over_an_entry_another_worker_holds() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let roots = ["root-a", "root-b"];
        let mut jobs: Vec<NewJob> = roots
            .iter()
            .map(|id| job("root", EnqueueOptions::new()).with_id(*id))
            .collect();
        for root in roots {
            jobs.extend(
                (0..=RELEASE_BATCH).map(|_| job("leaf", EnqueueOptions::new().after(root))),
            );
        }
        store.enqueue_batch(jobs).await.unwrap();
        let claimed = store
            .claim(&ClaimRequest {
                worker_id: "w".into(),
                job_names: vec!["root".into()],
                limit: 2,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        // One report each: two finished jobs in one transaction share the bound.
        for root in &claimed {
            let done = vec![(root.lease().unwrap(), Outcome::Completed)];
            assert_eq!(store.report_batch(done).await.unwrap(), [true]);
        }
        let counts = store.count_snapshot().await.unwrap().counts;
        assert_eq!(counts.pending, 2, "one edge of each root is left");

        // Another worker holds the first entry in key order.
        let mut other = raw_client().await;
        let held = other.transaction().await.unwrap();
        held.query_one(
            &format!("SELECT 1 FROM {s}.duraq_release_backlog WHERE job_id = 'root-a' FOR UPDATE"),
            &[],
        )
        .await
        .unwrap();

        let step = tokio::time::timeout(PATIENCE, store.settle_release_backlog(10))
            .await
            .expect("the held entry is skipped, not waited for")
            .unwrap();
        assert_eq!((step.steps, step.edges, step.more), (1, 1, false));
        let counts = store.count_snapshot().await.unwrap().counts;
        assert_eq!(counts.pending, 1, "root-b's last dependent was released");
        let cursor: Option<String> = held
            .query_one(
                &format!(
                    "SELECT after_job_id FROM {s}.duraq_release_backlog WHERE job_id = 'root-a'"
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(cursor.is_some(), "root-a's entry is untouched");
        held.rollback().await.unwrap();

        let step = store.settle_release_backlog(10).await.unwrap();
        assert_eq!((step.steps, step.edges, step.more), (1, 1, false));
        let counts = store.count_snapshot().await.unwrap().counts;
        assert_eq!(
            (counts.pending, counts.queued),
            (0, 2 * (RELEASE_BATCH as i64 + 1)),
            "every dependent released once"
        );
        assert_eq!(store.settle_release_backlog(10).await.unwrap().steps, 0);
        store.close().await.unwrap();
    }
}
