//! Replacing and cancelling a schedule key's owner inside the application's
//! transaction (`replace_scheduled_in`, `cancel_scheduled_in`): the key's
//! change commits with the application's rows or not at all, a refused
//! replacement leaves the transaction usable, and a running owner keeps
//! running. Every client runs the same statements through the same seam as
//! `enqueue_in` (`duraq_tests::app_clients` covers each client); this runs
//! them on tokio-postgres.

mod common;

use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::{
    CancelOutcome, EnqueueOptions, ErrorCode, JobStatus, NewJob, RunningOwner, ScheduleKey,
};
use serde_json::json;

use crate::common::{claim_of, open, raw_client, schema};

mod postgres {
    use super::*;

    fn reminder(day: i64) -> NewJob {
        let opts = EnqueueOptions::new().run_in(Duration::from_secs(3600));
        NewJob::new("trial_reminder", json!([day]), opts).unwrap()
    }

    async fn status(store: &duraq_store_postgres::PostgresStore, id: &str) -> JobStatus {
        store.get_job(id).await.unwrap().unwrap().status
    }

    #[tokio::test]
    async fn a_key_changes_owner_with_the_callers_transaction() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let key = ScheduleKey::new("trial:7").unwrap();
        let first = store
            .replace_scheduled(&key, reminder(1), RunningOwner::KeepRunning)
            .await
            .unwrap()
            .job_id;
        let mut client = raw_client().await;

        // Rolled back: the first owner stays, and the replacement is gone.
        let tx = client.transaction().await.unwrap();
        let rolled = store
            .replace_scheduled_in(&tx, &key, reminder(2))
            .await
            .unwrap();
        assert_eq!(rolled.previous_job_id.as_deref(), Some(first.as_str()));
        drop(tx);
        assert_eq!(status(&store, &first).await, JobStatus::Queued);
        assert!(store.get_job(&rolled.job_id).await.unwrap().is_none());

        // Committed, after a refused replacement (idempotency keys are not
        // for schedule keys) that left the transaction usable.
        let tx = client.transaction().await.unwrap();
        let keyed = NewJob::new(
            "trial_reminder",
            json!([3]),
            EnqueueOptions::new().idempotency_key("k"),
        )
        .unwrap();
        let refused = store
            .replace_scheduled_in(&tx, &key, keyed)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), ErrorCode::UnsupportedOption);
        let second = store
            .replace_scheduled_in(&tx, &key, reminder(2))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(status(&store, &first).await, JobStatus::Cancelled);
        assert_eq!(status(&store, &second.job_id).await, JobStatus::Queued);

        // Cancelled: rolled back, then committed.
        let tx = client.transaction().await.unwrap();
        let cancelled = store.cancel_scheduled_in(&tx, &key).await.unwrap();
        assert_eq!(cancelled.outcome, CancelOutcome::Cancelled);
        drop(tx);
        assert_eq!(status(&store, &second.job_id).await, JobStatus::Queued);
        let tx = client.transaction().await.unwrap();
        store.cancel_scheduled_in(&tx, &key).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(status(&store, &second.job_id).await, JobStatus::Cancelled);
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_running_owner_keeps_running_and_releases_the_key() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let key = ScheduleKey::new("export:1").unwrap();
        let job = NewJob::new("export", json!([1]), EnqueueOptions::new()).unwrap();
        let running = store
            .replace_scheduled(&key, job, RunningOwner::KeepRunning)
            .await
            .unwrap()
            .job_id;
        let claimed = store.claim(&claim_of("export")).await.unwrap();
        assert_eq!(claimed[0].id, running);
        let client = raw_client().await;
        client.batch_execute("BEGIN").await.unwrap();
        let cancelled = store.cancel_scheduled_in(&client, &key).await.unwrap();
        assert_eq!(cancelled.outcome, CancelOutcome::HandedOff);
        client.batch_execute("COMMIT").await.unwrap();
        assert_eq!(status(&store, &running).await, JobStatus::HandedOff);
        let owner = store.get_scheduled(&key, false).await.unwrap().current_job;
        assert!(owner.is_none(), "the key released");
        store.close().await.unwrap();
    }
}
