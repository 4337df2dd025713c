//! Reclaiming dead row versions (the store's upkeep): a drained backlog
//! leaves dead entries in front of every live job in the claim index, each
//! claim walks them until a VACUUM, and the store's reclaim removes them. Needs
//! `DATABASE_URL`; every test works in its own fresh schema.

mod common;

mod postgres {
    use std::time::{Duration, Instant};

    use duraq_core::driver::ClaimRequest;
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, Outcome};
    use duraq_store_postgres::{reclaim_due, DeadRows, RECLAIM_MIN_DEAD};

    use crate::common::{job, open, raw_client, schema};

    /// One test at a time: a VACUUM cannot remove row versions that another
    /// test's open transaction might still see, so parallel cases would blur
    /// what a reclaim achieves.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Enqueues `n` jobs and runs them all to completion through the store.
    async fn drain_backlog(store: &impl Store, n: usize) {
        for _ in 0..n / 1000 {
            let jobs = (0..1000).map(|_| job("j", EnqueueOptions::new())).collect();
            store.enqueue_batch(jobs).await.unwrap();
        }
        let claim = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 500,
            ..ClaimRequest::default()
        };
        loop {
            let claimed = store.claim(&claim).await.unwrap();
            if claimed.is_empty() {
                break;
            }
            let reports = claimed
                .iter()
                .map(|j| (j.lease().unwrap(), Outcome::Completed))
                .collect();
            store.report_batch(reports).await.unwrap();
        }
    }

    /// Keeps autovacuum off the schema's job table, so that only the test's
    /// reclaim (or worker) vacuums it.
    async fn without_autovacuum(s: &str) {
        raw_client()
            .await
            .batch_execute(&format!(
                "ALTER TABLE {s}.duraq_jobs_live SET (autovacuum_enabled = false)"
            ))
            .await
            .unwrap();
    }

    /// Index pages a claim-shaped scan reads, measured on its second run (the
    /// first marks the dead entries it passes, as the worker's first claim would).
    async fn claim_scan_pages(client: &tokio_postgres::Client, s: &str) -> i64 {
        let sql = format!(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM {s}.duraq_jobs \
             WHERE status = 'queued' AND priority = 0 AND scheduled_at_ms <= 9223372036854775807 \
             ORDER BY priority, scheduled_at_ms, created_at_ms, id COLLATE \"C\" LIMIT 10"
        );
        let mut pages = 0;
        for _ in 0..2 {
            // The simple protocol answers in text, whatever the column's type.
            let text: String = client
                .simple_query(&sql)
                .await
                .unwrap()
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                    _ => None,
                })
                .collect();
            let plan: serde_json::Value = serde_json::from_str(&text).unwrap();
            let top = &plan[0]["Plan"];
            pages = top["Shared Hit Blocks"].as_i64().unwrap()
                + top["Shared Read Blocks"].as_i64().unwrap();
        }
        pages
    }

    #[tokio::test]
    async fn a_reclaim_takes_the_drained_backlog_out_of_the_claims_way() {
        let _serial = SERIAL.lock().await;
        let s = schema();
        let store = open(&s).await.unwrap();
        without_autovacuum(&s).await;
        drain_backlog(&store, 20_000).await;
        let jobs = (0..10).map(|_| job("j", EnqueueOptions::new())).collect();
        store.enqueue_batch(jobs).await.unwrap();

        // The server counts dead rows as transactions end: wait for it.
        let deadline = Instant::now() + Duration::from_secs(30);
        let rows = loop {
            let rows = store
                .dead_rows()
                .await
                .unwrap()
                .expect("PostgreSQL keeps dead rows");
            if rows.dead >= RECLAIM_MIN_DEAD || Instant::now() > deadline {
                break rows;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(rows.dead >= RECLAIM_MIN_DEAD, "{rows:?}");
        assert!(reclaim_due(&rows, None), "{rows:?}");

        let client = raw_client().await;
        let before = claim_scan_pages(&client, &s).await;
        store.reclaim_dead_rows().await.unwrap();
        let after = claim_scan_pages(&client, &s).await;
        eprintln!("a claim reads {before} index and heap pages before the reclaim, {after} after");
        assert!(
            after * 5 < before,
            "a claim reads {before} pages before the reclaim and {after} after"
        );
        // (The dead-row count itself may stay up while another test's open
        // snapshot keeps some versions visible; the pages above are what counts.)
        let rows = store.dead_rows().await.unwrap().unwrap();
        let since = rows.since_reclaim_ms.expect("vacuumed now");
        assert!((0..60_000).contains(&since), "{since} ms since the reclaim");
        // Just reclaimed: not due again for a while, whatever the count.
        let many = DeadRows {
            dead: u64::MAX,
            ..rows
        };
        assert!(!reclaim_due(&many, None), "{rows:?}");
        // The live jobs are all still there to claim.
        assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 10);
    }

    /// A worker starting on a table whose dead rows wait reclaims them before
    /// its first claim, and runs its jobs as usual.
    #[tokio::test]
    async fn a_worker_reclaims_at_startup() {
        let _serial = SERIAL.lock().await;
        use std::sync::Arc;

        use duraq_core::{Registry, Worker};

        let s = schema();
        let store = Arc::new(open(&s).await.unwrap());
        // Only the worker may vacuum here.
        without_autovacuum(&s).await;
        drain_backlog(store.as_ref(), 20_000).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while store.dead_rows().await.unwrap().unwrap().dead < RECLAIM_MIN_DEAD {
            assert!(
                Instant::now() < deadline,
                "the server never counted the dead rows"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let jobs = (0..10).map(|_| job("j", EnqueueOptions::new())).collect();
        store.enqueue_batch(jobs).await.unwrap();

        let registry = Registry::new()
            .register_fn("j", |_ctx, _args| async { Ok(()) })
            .unwrap();
        let worker = Worker::builder(store.clone(), registry)
            .build()
            .unwrap()
            .spawn();
        let deadline = Instant::now() + Duration::from_secs(30);
        while store.count_snapshot().await.unwrap().counts.completed < 20_010 {
            assert!(Instant::now() < deadline, "the worker did not run the jobs");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let report = worker.shutdown_and_join().await.unwrap();
        assert_eq!(report.completed, 10);
        let rows = store.dead_rows().await.unwrap().unwrap();
        assert!(
            rows.since_reclaim_ms.is_some_and(|ms| ms < 60_000),
            "the worker vacuumed the table: {rows:?}"
        );
    }

    /// Only the table's owner may VACUUM it: a worker running as another role
    /// sees no dead rows, so it never tries.
    #[tokio::test]
    async fn a_role_that_may_not_vacuum_reports_no_dead_rows() {
        let _serial = SERIAL.lock().await;
        use duraq_store_postgres::PostgresStore;

        let s = schema();
        let owner = open(&s).await.unwrap();
        assert!(owner.dead_rows().await.unwrap().is_some());
        owner.close().await.unwrap();
        let role = format!("r_{s}");
        let client = raw_client().await;
        client
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {s} TO {role}; \
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {role}"
            ))
            .await
            .unwrap();
        let config: tokio_postgres::Config = crate::common::url().parse().unwrap();
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[allow(unreachable_patterns)]
            other => panic!("DATABASE_URL names no TCP host: {other:?}"),
        };
        let url = format!(
            "postgres://{role}@{host}:{}/{}",
            config.get_ports()[0],
            config.get_dbname().unwrap_or("postgres")
        );
        let store = PostgresStore::connect_existing(&url, crate::common::options(&s))
            .await
            .unwrap();
        let seen = store.dead_rows().await.unwrap();
        store.close().await.unwrap();
        drop(store);
        client
            .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
            .await
            .unwrap();
        assert_eq!(seen, None);
    }
}
