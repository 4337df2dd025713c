//! Upgrading a schema to version 8 (progress and log lines of running jobs,
//! `docs/jobs.md`): the two tables of their own are created, the jobs table
//! is not rewritten, old jobs are kept and say nothing, and a running job's
//! progress is stored at once. Needs `DATABASE_URL`.

mod common;

mod postgres {
    use duraq_core::prelude::*;
    use duraq_core::{ClaimRequest, EnqueueOptions, ProgressBatch};
    use duraq_store_postgres::{PostgresStore, SCHEMA_VERSION};

    use crate::common::{job, open, options, raw_client, schema, url};

    #[tokio::test]
    async fn upgrade_to_v8_adds_the_progress_tables_and_keeps_the_jobs() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let id = store
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        store.close().await.unwrap();
        drop(store);
        let client = raw_client().await;
        client
            .batch_execute(&format!(
                "DROP TABLE {s}.duraq_job_progress; DROP TABLE {s}.duraq_job_logs; \
                 DELETE FROM {s}.duraq_migrations WHERE version >= 8"
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
            (8..=SCHEMA_VERSION).collect::<Vec<_>>()
        );
        assert_eq!(filenode().await, before, "no table rewrite");
        assert_eq!(store.job_progress(&id).await.unwrap(), None);
        let claimed = store
            .claim(&ClaimRequest {
                worker_id: "w".into(),
                job_names: vec!["j".into()],
                limit: 1,
                ..ClaimRequest::default()
            })
            .await
            .unwrap();
        let batch = ProgressBatch::new(claimed[0].lease().unwrap(), 1).with_line(0, "after");
        assert!(store.record_progress(batch).await.unwrap());
        let p = store.job_progress(&id).await.unwrap().unwrap();
        assert_eq!(p.logs[0].line, "after");
        store.close().await.unwrap();
    }
}
