//! Upgrading a schema to version 10 (the release backlog,
//! `docs/workflows.md`, "Cost"): `duraq_release_backlog` is created, no table
//! is rewritten, and a fan-out wider than the bound finishes through the new
//! table at once. Needs `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::rules::RELEASE_BATCH;
    use duraq_core::{ClaimRequest, EnqueueOptions, NewJob, Outcome};
    use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};

    use crate::common::{job, open, options, raw_client, schema, url};

    #[tokio::test]
    async fn upgrade_to_v10_adds_the_release_backlog_in_place() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let root = store
            .enqueue(job("root", EnqueueOptions::new()))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        store.close().await.unwrap();
        drop(store);
        let client = raw_client().await;
        client
            .batch_execute(&format!(
                "DROP TABLE {s}.duraq_release_backlog; \
                 DELETE FROM {s}.duraq_migrations WHERE version >= 10"
            ))
            .await
            .unwrap();
        let filenode = || async {
            client
                .query_one(
                    "SELECT pg_relation_filenode(format('%I.duraq_jobs_live', $1::text)::regclass)::int8",
                    &[&s],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        };
        let before = filenode().await;

        let store = PostgresStore::connect_existing(&url(), options(&s))
            .await
            .unwrap();
        assert_eq!(
            store.migration().applied,
            (10..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(filenode().await, before, "no table rewrite");

        let leaves: Vec<NewJob> = (0..=RELEASE_BATCH)
            .map(|_| job("leaf", EnqueueOptions::new().after(&root)))
            .collect();
        store.enqueue_batch(leaves).await.unwrap();
        let claimed = store
            .claim(&ClaimRequest {
                worker_id: "w".into(),
                job_names: vec!["root".into()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        let signal = store.release_backlog_signal();
        let done = vec![(claimed[0].lease().unwrap(), Outcome::Completed)];
        assert_eq!(store.report_batch(done).await.unwrap(), [true]);
        assert!(signal.has_changed().unwrap(), "the entry was signalled");
        let counts = store.count_snapshot().await.unwrap().counts;
        assert_eq!((counts.queued, counts.pending), (RELEASE_BATCH as i64, 1));
        let entry = client
            .query_one(
                &format!("SELECT job_id, status, after_job_id FROM {s}.duraq_release_backlog"),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            (entry.get::<_, String>(0), entry.get::<_, String>(1)),
            (root.clone(), "completed".to_owned())
        );
        assert!(entry.get::<_, Option<String>>(2).is_some(), "the cursor");

        let progress = store.settle_release_backlog(10).await.unwrap();
        assert_eq!(
            (progress.steps, progress.edges, progress.more),
            (1, 1, false)
        );
        let counts = store.count_snapshot().await.unwrap().counts;
        assert_eq!(
            (counts.queued, counts.pending),
            (RELEASE_BATCH as i64 + 1, 0)
        );
        let left: i64 = client
            .query_one(
                &format!("SELECT count(*) FROM {s}.duraq_release_backlog"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(left, 0);
        store.close().await.unwrap();
    }
}
