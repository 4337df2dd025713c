//! Upgrading a schema to version 9 (job dependencies, `docs/workflows.md`):
//! the jobs table and the counter rows gain their columns in place (no table
//! rewrite), the edge table is created, old jobs read without dependencies and
//! keep their counts, and a job enqueued after one of them waits for it and is
//! released when it completes. Also: a transactional enqueue refused for an
//! unknown dependency leaves the caller's transaction usable and writes nothing.
//! Needs `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::{ClaimRequest, EnqueueOptions, JobStatus, Outcome};
    use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};

    use crate::common::{job, open, options, raw_client, schema, url};

    fn claim_of(name: &str) -> ClaimRequest {
        ClaimRequest {
            worker_id: "w".into(),
            job_names: vec![name.into()],
            limit: 1,
            ..ClaimRequest::default()
        }
    }

    #[tokio::test]
    async fn upgrade_to_v9_adds_dependencies_in_place_and_keeps_the_jobs() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let old = store
            .enqueue(job("old", EnqueueOptions::new()))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        store.close().await.unwrap();
        drop(store);
        let client = raw_client().await;
        client
            .batch_execute(&format!(
                "DROP TABLE {s}.duraq_job_dependents; DROP INDEX {s}.duraq_jobs_pending; \
                 ALTER TABLE {s}.duraq_jobs DROP COLUMN depends_on, DROP COLUMN open_dependencies, \
                 DROP COLUMN output, DROP COLUMN has_dependents; \
                 ALTER TABLE {s}.duraq_count_shards DROP COLUMN pending; \
                 ALTER TABLE {s}.duraq_queue_count_shards DROP COLUMN pending; \
                 DELETE FROM {s}.duraq_migrations WHERE version >= 9"
            ))
            .await
            .unwrap();
        let filenodes = || async {
            client
                .query_one(
                    "SELECT array_agg(pg_relation_filenode(format('%I.%I', $1::text, t)::regclass)::int8 \
                     ORDER BY t) FROM unnest(ARRAY['duraq_jobs_live', 'duraq_count_shards', \
                     'duraq_queue_count_shards']) AS t",
                    &[&s],
                )
                .await
                .unwrap()
                .get::<_, Vec<i64>>(0)
        };
        let before = filenodes().await;

        let store = PostgresStore::connect_existing(&url(), options(&s))
            .await
            .unwrap();
        assert_eq!(
            store.migration().applied,
            (9..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(filenodes().await, before, "no table rewrite");
        let row = store.get_job(&old).await.unwrap().unwrap();
        assert_eq!(
            (row.depends_on.len(), row.open_dependencies, row.output),
            (0, 0, None)
        );
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!((snap.counts.queued, snap.counts.pending), (1, 0));

        let next = store
            .enqueue(job("next", EnqueueOptions::new().after(&old)))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        assert_eq!(
            store.get_job(&next).await.unwrap().unwrap().status,
            JobStatus::Pending
        );
        let claimed = store.claim(&claim_of("old")).await.unwrap();
        let done = vec![(claimed[0].lease().unwrap(), Outcome::Completed)];
        assert_eq!(store.report_batch(done).await.unwrap(), [true]);
        assert_eq!(
            store.get_job(&next).await.unwrap().unwrap().status,
            JobStatus::Queued
        );
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!(
            (
                snap.counts.queued,
                snap.counts.pending,
                snap.counts.completed
            ),
            (1, 0, 1)
        );
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_refused_transactional_dependent_leaves_the_callers_transaction_usable() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let first = store
            .enqueue(job("first", EnqueueOptions::new()))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        let mut client = raw_client().await;
        let tx = client.transaction().await.unwrap();
        let missing = "0190a0b0-0000-7000-8000-000000000000";
        let refused = store
            .enqueue_in(&tx, job("x", EnqueueOptions::new().after(missing)))
            .await
            .unwrap_err();
        assert_eq!(refused.code().as_str(), "dependency-not-found");
        let waiting = store
            .enqueue_in(&tx, job("y", EnqueueOptions::new().after(&first)))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        tx.commit().await.unwrap();
        let row = store.get_job(&waiting).await.unwrap().unwrap();
        assert_eq!((row.status, row.open_dependencies), (JobStatus::Pending, 1));
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!((snap.total, snap.counts.pending), (2, 1));
        store.close().await.unwrap();
    }
}
