//! PostgreSQL-specific promises the shared suites cannot see: transactional
//! enqueue, NOTIFY between stores (and surviving a dropped LISTEN connection), and
//! exactness under concurrent callers. Needs `DATABASE_URL`; every test works in
//! its own fresh schema.

mod common;

mod postgres {
    use std::time::Duration;

    use duraq_core::driver::ClaimRequest;
    use duraq_core::inspect::JobFilter;
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, EnqueueOutcome, ErrorCode, JobStatus, NewJob, ScheduleKey};
    use duraq_store_postgres::{PostgresOptions, PostgresStore};
    use serde_json::json;

    use crate::common::{job, next_delta, open, options, raw_client, schema, url};

    #[tokio::test]
    async fn enqueue_in_commits_and_rolls_back_with_the_application() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let mut client = raw_client().await;
        client
            .batch_execute(&format!("CREATE TABLE {s}.orders (id bigint PRIMARY KEY)"))
            .await
            .unwrap();

        let tx = client.transaction().await.unwrap();
        let rolled_back = store
            .enqueue_in(&tx, job("receipt", EnqueueOptions::new()))
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert!(store.get_job(rolled_back.job_id()).await.unwrap().is_none());
        assert_eq!(store.count_snapshot().await.unwrap().total, 0);

        let mut deltas = store.subscribe_counts();
        let tx = client.transaction().await.unwrap();
        tx.execute(
            &format!("INSERT INTO {s}.orders (id) VALUES ($1)"),
            &[&7i64],
        )
        .await
        .unwrap();
        let idem = || job("receipt", EnqueueOptions::new().idempotency_key("order-7"));
        let created = store.enqueue_in(&tx, idem()).await.unwrap();
        let other = NewJob::new(
            "receipt",
            json!([2]),
            EnqueueOptions::new().idempotency_key("order-7"),
        )
        .unwrap();
        let conflict = store.enqueue_in(&tx, other).await.unwrap_err();
        assert_eq!(conflict.code(), ErrorCode::IdempotencyConflict);
        // The refused enqueue rolled back to its savepoint: the transaction goes on.
        tx.execute(
            &format!("INSERT INTO {s}.orders (id) VALUES ($1)"),
            &[&8i64],
        )
        .await
        .unwrap();
        assert!(
            store.get_job(created.job_id()).await.unwrap().is_none(),
            "invisible before commit"
        );
        tx.commit().await.unwrap();

        assert_eq!(
            store
                .get_job(created.job_id())
                .await
                .unwrap()
                .unwrap()
                .status,
            JobStatus::Queued
        );
        assert_eq!(
            store.enqueue(idem()).await.unwrap(),
            EnqueueOutcome::Replayed(created.job_id().to_owned())
        );
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!((snap.counts.queued, snap.revision), (1, 1));
        let delta = next_delta(&mut deltas, "delta").await;
        assert_eq!(
            (delta.deltas.queued, delta.revision),
            (1, 1),
            "announced through LISTEN after commit"
        );
    }

    /// A transaction of the application's own deadpool-postgres pool works
    /// as a tokio-postgres one does, for enqueues and batches.
    #[tokio::test]
    async fn enqueue_in_takes_a_deadpool_transaction() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let config: tokio_postgres::Config = url().parse().unwrap();
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(1)
            .build()
            .unwrap();
        let mut client = pool.get().await.unwrap();

        let tx = client.transaction().await.unwrap();
        let one = store
            .enqueue_in(&tx, job("receipt", EnqueueOptions::new()))
            .await
            .unwrap();
        let jobs = vec![
            job("receipt", EnqueueOptions::new()),
            job("receipt", EnqueueOptions::new()),
        ];
        assert_eq!(store.enqueue_many_in(&tx, jobs).await.unwrap().len(), 2);
        tx.rollback().await.unwrap();
        assert!(store.get_job(one.job_id()).await.unwrap().is_none());

        let tx = client.transaction().await.unwrap();
        let one = store
            .enqueue_in(&tx, job("receipt", EnqueueOptions::new()))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let row = store.get_job(one.job_id()).await.unwrap().unwrap();
        assert_eq!(row.status, JobStatus::Queued);
        assert_eq!(store.count_snapshot().await.unwrap().counts.queued, 1);
    }

    #[tokio::test]
    async fn other_stores_hear_deltas_and_work_through_notify() {
        let s = schema();
        // A producer-only store does not listen, and is heard all the same.
        let quiet_options = PostgresOptions {
            listen: false,
            ..options(&s)
        };
        let producer = PostgresStore::connect(&url(), quiet_options).await.unwrap();
        let worker = open(&s).await.unwrap();
        let mut deltas = worker.subscribe_counts();
        let mut work = worker.work_signal();
        work.borrow_and_update();
        producer
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        let delta = next_delta(&mut deltas, "delta").await;
        assert_eq!(
            (delta.deltas.queued, delta.deltas.all, delta.revision),
            (1, 1, 1)
        );
        tokio::time::timeout(Duration::from_secs(10), work.changed())
            .await
            .expect("work signal")
            .unwrap();
        // A store in another schema hears nothing of it.
        let stranger = open(&schema()).await.unwrap();
        let mut quiet = stranger.subscribe_counts();
        producer
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        let second = next_delta(&mut deltas, "delta").await;
        assert_eq!(second.revision, 2);
        assert!(quiet.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_running_jobs_cancel_is_heard_by_other_stores_and_survives_close() {
        let s = schema();
        // The canceller does not listen and closes right after its commit, as
        // `duraq jobs cancel` does; its NOTIFY must still arrive.
        let quiet_options = PostgresOptions {
            listen: false,
            ..options(&s)
        };
        let worker = open(&s).await.unwrap();
        let mut cancels = worker.subscribe_cancellations();
        let queued = worker
            .enqueue(job("q", EnqueueOptions::new()))
            .await
            .unwrap();
        let running = worker
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap();
        let req = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 1,
            ..ClaimRequest::default()
        };
        assert_eq!(worker.claim(&req).await.unwrap().len(), 1);
        let canceller = PostgresStore::connect(&url(), quiet_options).await.unwrap();
        canceller.cancel_job(queued.job_id()).await.unwrap();
        canceller.cancel_job(running.job_id()).await.unwrap();
        canceller.close().await.unwrap();
        drop(canceller);
        let heard = tokio::time::timeout(Duration::from_secs(10), cancels.recv())
            .await
            .expect("the cancellation is announced")
            .unwrap();
        assert_eq!(heard, running.job_id(), "only the running job's cancel");
        // A closed store refuses further calls.
        worker.close().await.unwrap();
        assert!(worker.count_snapshot().await.is_err());
    }

    #[tokio::test]
    async fn listener_reconnects_after_its_connection_dies() {
        let s = schema();
        let quick = PostgresOptions {
            fallback_poll_ms: 20,
            ..options(&s)
        };
        let producer = open(&s).await.unwrap();
        let worker = PostgresStore::connect(&url(), quick).await.unwrap();
        let mut deltas = worker.subscribe_counts();
        let client = raw_client().await;
        let listen = format!("LISTEN \"{}\"", worker.notify_channel());
        let killed: i64 = client
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1",
                &[&listen],
            )
            .await
            .unwrap()
            .get(0);
        assert!(killed >= 1, "no LISTEN backend found");
        // Deltas committed while the listener is down are not replayed; keep
        // producing until one arrives through the new connection.
        for _ in 0..100 {
            producer
                .enqueue(job("j", EnqueueOptions::new()))
                .await
                .unwrap();
            if let Ok(delta) = tokio::time::timeout(Duration::from_millis(200), deltas.recv()).await
            {
                assert_eq!(delta.unwrap().deltas.queued, 1);
                assert!(worker
                    .health()
                    .await
                    .unwrap()
                    .detail
                    .contains("LISTEN connected"));
                return;
            }
        }
        panic!("the listener never came back");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_callers_keep_every_promise() {
        let s = schema();
        let stores: Vec<PostgresStore> = futures_join(4, |_| {
            let s = s.clone();
            async move { open(&s).await }
        })
        .await;
        // One owner per key, one job per scope.
        let key = ScheduleKey::new("event:1:reminder").unwrap();
        let replaced = futures_join(16, |i| {
            let store = stores[i % 4].clone();
            let key = key.clone();
            async move {
                store
                    .replace_scheduled(
                        &key,
                        job("remind", EnqueueOptions::new()),
                        duraq_core::RunningOwner::KeepRunning,
                    )
                    .await
            }
        })
        .await;
        let owner = stores[0]
            .get_scheduled(&key, false)
            .await
            .unwrap()
            .current_job
            .expect("one owner");
        let jobs = stores[0]
            .search_jobs(&JobFilter::default())
            .await
            .unwrap()
            .jobs;
        assert_eq!(
            jobs.iter()
                .filter(|j| j.status == JobStatus::Queued)
                .count(),
            1
        );
        assert_eq!(
            jobs.iter()
                .filter(|j| j.status == JobStatus::Cancelled)
                .count(),
            15
        );
        let mut orders: Vec<i64> = jobs.iter().filter_map(|j| j.schedule_order).collect();
        orders.sort_unstable();
        assert_eq!(orders, (1..=16).collect::<Vec<_>>());
        assert!(replaced.iter().any(|r| r.job_id == owner.id));
        let idem = futures_join(16, |i| {
            let store = stores[i % 4].clone();
            async move {
                store
                    .enqueue(job("once", EnqueueOptions::new().idempotency_key("scope")))
                    .await
            }
        })
        .await;
        let ids: std::collections::BTreeSet<&str> = idem.iter().map(|o| o.job_id()).collect();
        assert_eq!(ids.len(), 1, "one job per idempotency scope");
        // A cap of 3 holds however many workers claim at once.
        let capped: Vec<NewJob> = (0..20)
            .map(|_| job("capped", EnqueueOptions::new().concurrency("k", 3)))
            .collect();
        stores[0].enqueue_batch(capped).await.unwrap();
        let claimed = futures_join(12, |i| {
            let store = stores[i % 4].clone();
            async move {
                let req = ClaimRequest {
                    worker_id: format!("w{i}"),
                    job_names: vec!["capped".into()],
                    limit: 2,
                    ..ClaimRequest::default()
                };
                store.claim(&req).await
            }
        })
        .await;
        assert_eq!(claimed.iter().map(Vec::len).sum::<usize>(), 3);
        let snap = stores[1].count_snapshot().await.unwrap();
        let rows = stores[1]
            .search_jobs(&JobFilter::default())
            .await
            .unwrap()
            .jobs;
        assert_eq!(snap.total as usize, rows.len(), "counts stay exact");
        assert_eq!(snap.counts.handed_off, 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_plain_enqueues_share_commits_and_keep_their_own_answers() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let created = futures_join(64, |i| {
            let store = store.clone();
            async move {
                let job = NewJob::new("grouped", json!([i]), EnqueueOptions::new())?;
                Ok((i, store.enqueue(job).await?))
            }
        })
        .await;
        // Each caller got the id of its own job.
        for (i, outcome) in &created {
            let job = store.get_job(outcome.job_id()).await.unwrap().unwrap();
            assert_eq!(job.args, json!([i]));
        }
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!(snap.counts.queued, 64);
        assert!(
            snap.revision < 64,
            "64 concurrent enqueues took {} commits",
            snap.revision
        );

        // A job the server refuses fails its own caller only.
        raw_client()
            .await
            .batch_execute(&format!(
                "ALTER TABLE {s}.duraq_jobs ADD CONSTRAINT no_refused CHECK (job_name <> 'refused')"
            ))
            .await
            .unwrap();
        let handles: Vec<_> = (0..32)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let name = if i % 2 == 0 { "refused" } else { "fine" };
                    let job = NewJob::new(name, json!([i]), EnqueueOptions::new()).unwrap();
                    (name, store.enqueue(job).await)
                })
            })
            .collect();
        for handle in handles {
            match handle.await.unwrap() {
                ("fine", outcome) => assert!(outcome.is_ok(), "{outcome:?}"),
                (_, outcome) => assert_eq!(outcome.unwrap_err().code(), ErrorCode::Backend),
            }
        }
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!(snap.counts.queued, 64 + 16);
        let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
        assert_eq!(jobs.len(), 64 + 16);
        assert!(jobs.iter().all(|j| j.job_name != "refused"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_dedupe_scope_registered_mid_stream_keys_every_job_of_it() {
        let s = schema();
        let stores: Vec<PostgresStore> = futures_join(4, |_| {
            let s = s.clone();
            async move { open(&s).await }
        })
        .await;
        // Producers keep inserting into the scope while a dedupe request
        // registers it: no job of the scope may end up without its key.
        let producers: Vec<_> = (0..4)
            .map(|p| {
                let store = stores[p].clone();
                tokio::spawn(async move {
                    for i in 0..40 {
                        let job =
                            NewJob::new("scoped", json!([p, i]), EnqueueOptions::new()).unwrap();
                        store.enqueue(job).await.unwrap();
                    }
                })
            })
            .collect();
        let dedupe = NewJob::new(
            "scoped",
            json!(["once"]),
            EnqueueOptions::new().deduplicate_while_queued(),
        )
        .unwrap();
        stores[0].enqueue(dedupe).await.unwrap();
        for producer in producers {
            producer.await.unwrap();
        }
        let unkeyed: i64 = raw_client()
            .await
            .query_one(
                &format!(
                    "SELECT count(*) FROM {s}.duraq_jobs WHERE job_name = 'scoped' AND dedupe_key IS NULL"
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(unkeyed, 0);
        // And every one of them is found by a later identical request.
        let twin = NewJob::new(
            "scoped",
            json!([3, 39]),
            EnqueueOptions::new().deduplicate_while_queued(),
        )
        .unwrap();
        assert!(matches!(
            stores[1].enqueue(twin).await.unwrap(),
            EnqueueOutcome::Deduplicated(_)
        ));
    }

    /// Runs `n` futures concurrently and unwraps their results.
    async fn futures_join<T, F, Fut>(n: usize, make: F) -> Vec<T>
    where
        F: Fn(usize) -> Fut,
        Fut: std::future::Future<Output = duraq_core::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let handles: Vec<_> = (0..n).map(|i| tokio::spawn(make(i))).collect();
        let mut out = Vec::with_capacity(n);
        for h in handles {
            out.push(h.await.expect("task").expect("call"));
        }
        out
    }

    #[tokio::test]
    async fn a_nul_in_an_error_message_does_not_strand_the_job() {
        let store = open(&schema()).await.unwrap();
        let id = store
            .enqueue(job("j", EnqueueOptions::new()))
            .await
            .unwrap()
            .job_id()
            .to_owned();
        let req = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit: 1,
            ..ClaimRequest::default()
        };
        let claimed = store.claim(&req).await.unwrap();
        let lease = claimed[0].lease().unwrap();
        assert_eq!(
            store
                .report_batch(vec![(lease, duraq_core::Outcome::failed("bad\0byte"))])
                .await
                .unwrap(),
            [true]
        );
        let job = store.get_job(&id).await.unwrap().unwrap();
        assert_eq!(
            (job.status, job.last_error.as_deref()),
            (JobStatus::Queued, Some("bad\u{fffd}byte"))
        );
    }

    #[tokio::test]
    async fn big_batch_is_one_revision() {
        let store = open(&schema()).await.unwrap();
        let jobs: Vec<NewJob> = (0..500)
            .map(|_| job("bulk", EnqueueOptions::new()))
            .collect();
        store.enqueue_batch(jobs).await.unwrap();
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!((snap.counts.queued, snap.revision), (500, 1));
    }
}
