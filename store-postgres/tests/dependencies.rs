//! Bulk operator actions on jobs with dependents, against the reference
//! model: a bulk cancel or retry acts as one call per job in the caller's
//! order, so a job the batch already cancelled down the graph (or gave back)
//! is judged as it then is. The conformance suite covers single-job actions;
//! this is where the set-based bulk path differs. And the edge table: pruning
//! or deleting jobs deletes their edges, as dependency and as dependent.
//! Needs `DATABASE_URL`.

mod common;

mod postgres {
    use std::collections::BTreeMap;

    use duraq_core::driver::ClaimRequest;
    use duraq_core::inspect::{BulkAction, BulkBatch, PruneRequest};
    use duraq_core::prelude::*;
    use duraq_core::{EnqueueOptions, Job, MemoryStore, NewJob, Outcome};

    use std::sync::Arc;

    use duraq_core::ManualClock;
    use duraq_store_postgres::PostgresStore;

    use crate::common::{job, open, options, raw_client, schema, url};

    /// Runs the same scenario on `store`: a → b → c, and d alone; a bulk
    /// cancel of [a, b, d], then a bulk retry of [c, a]. Returns both tallies
    /// and every job's status, error and open count, by name.
    async fn scenario(
        store: &dyn Operate,
        producer: &dyn Producer,
    ) -> (BulkBatch, BulkBatch, BTreeMap<&'static str, String>) {
        let a = job("a", EnqueueOptions::new());
        let b = job("b", EnqueueOptions::new().after(a.id()));
        let c = job("c", EnqueueOptions::new().after(b.id()));
        let d = job("d", EnqueueOptions::new());
        let named: Vec<(&'static str, NewJob)> = vec![("a", a), ("b", b), ("c", c), ("d", d)];
        let ids: BTreeMap<&'static str, String> =
            named.iter().map(|(n, j)| (*n, j.id().to_owned())).collect();
        producer
            .enqueue_batch(named.into_iter().map(|(_, j)| j).collect())
            .await
            .unwrap();
        let cancel = [ids["a"].clone(), ids["b"].clone(), ids["d"].clone()];
        let cancelled = store
            .act_on_jobs(BulkAction::Cancel, &cancel)
            .await
            .unwrap();
        let retry = [ids["c"].clone(), ids["a"].clone()];
        let retried = store.act_on_jobs(BulkAction::Retry, &retry).await.unwrap();
        let mut rows = BTreeMap::new();
        for (name, id) in &ids {
            let Job {
                status,
                last_error,
                open_dependencies,
                ..
            } = store.get_job(id).await.unwrap().unwrap();
            let error = last_error.map(|e| e.replace(id.as_str(), "<id>"));
            let error = ids
                .iter()
                .fold(error, |e, (n, i)| e.map(|e| e.replace(i.as_str(), n)));
            rows.insert(*name, format!("{status} {open_dependencies} {error:?}"));
        }
        (cancelled, retried, rows)
    }

    #[tokio::test]
    async fn a_bulk_action_on_jobs_with_dependents_acts_as_one_call_per_job() {
        let memory = MemoryStore::new();
        let expected = scenario(&memory, &memory).await;
        let store = open(&schema()).await.unwrap();
        let actual = scenario(&store, &store).await;
        assert_eq!(actual.0, expected.0, "the cancel's tally");
        assert_eq!(actual.1, expected.1, "the retry's tally");
        assert_eq!(actual.2, expected.2, "the rows");
        assert_eq!(
            store.count_snapshot().await.unwrap().counts,
            memory.count_snapshot().await.unwrap().counts
        );
        store.close().await.unwrap();
    }

    async fn edges(s: &str) -> Vec<(String, String)> {
        let client = raw_client().await;
        let sql = format!("SELECT dep_id, job_id FROM {s}.duraq_job_dependents ORDER BY 1, 2");
        let rows = client.query(&sql, &[]).await.unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    }

    async fn complete(store: &dyn WorkerStore, name: &str) {
        let req = ClaimRequest {
            worker_id: "w".into(),
            job_names: vec![name.into()],
            limit: 1,
            ..ClaimRequest::default()
        };
        let claimed = store.claim(&req).await.unwrap();
        let lease = claimed[0].lease().unwrap();
        let done = store.report_batch(vec![(lease, Outcome::Completed)]);
        assert_eq!(done.await.unwrap(), [true]);
    }

    #[tokio::test]
    async fn pruning_and_deleting_jobs_deletes_their_edges() {
        let s = schema();
        let clock = ManualClock::new(1_000_000);
        let store = PostgresStore::connect_with_clock(&url(), options(&s), Arc::new(clock.clone()))
            .await
            .unwrap();
        let a = job("a", EnqueueOptions::new());
        let b = job("b", EnqueueOptions::new().after(a.id()));
        let c = job("c", EnqueueOptions::new().after(a.id()).after(b.id()));
        let (ia, ib, ic) = (a.id().to_owned(), b.id().to_owned(), c.id().to_owned());
        store.enqueue_batch(vec![a, b, c]).await.unwrap();
        let mut all = vec![
            (ia.clone(), ib.clone()),
            (ia.clone(), ic.clone()),
            (ib.clone(), ic.clone()),
        ];
        all.sort();
        assert_eq!(edges(&s).await, all);
        complete(&store, "a").await;
        complete(&store, "b").await;
        // b as dependent and as dependency, deleted with a's edge to c kept.
        let batch = store
            .act_on_jobs(BulkAction::Delete, std::slice::from_ref(&ib))
            .await;
        assert_eq!(batch.unwrap().changed, 1);
        assert_eq!(edges(&s).await, [(ia.clone(), ic.clone())]);
        let prune = PruneRequest {
            completed_older_than: Some(std::time::Duration::ZERO),
            failed_older_than: None,
            cancelled_older_than: None,
            batch_size: 100,
        };
        clock.advance(1);
        assert_eq!(store.prune(&prune).await.unwrap().deleted, 1);
        assert_eq!(edges(&s).await, []);
        assert_eq!(
            store.get_job(&ic).await.unwrap().unwrap().status,
            duraq_core::JobStatus::Queued
        );
        store.close().await.unwrap();
    }
}
