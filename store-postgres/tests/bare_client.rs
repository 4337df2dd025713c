//! Enqueueing on a bare `tokio_postgres::Client` (or a pooled
//! deadpool-postgres connection) that the application put in a transaction
//! with `BEGIN` itself: code that holds a shared `&Client` cannot call
//! `Client::transaction`, which needs `&mut`. The job commits and rolls back
//! with the application's rows; outside a transaction the call fails and
//! writes nothing.

mod common;

use duraq_core::prelude::*;
use duraq_core::{EnqueueOptions, ErrorCode, NewJob};
use serde_json::json;

use crate::common::{job, open, raw_client, schema};

mod postgres {
    use super::*;

    async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
        client.query_one(sql, &[]).await.unwrap().get(0)
    }

    #[tokio::test]
    async fn a_bare_client_enqueues_inside_the_transaction_it_began() {
        let s = schema();
        let store = open(&s).await.unwrap();
        let client = raw_client().await;
        let users = format!("{s}.users");
        client
            .batch_execute(&format!("CREATE TABLE {users} (email text NOT NULL)"))
            .await
            .unwrap();
        let insert = format!("INSERT INTO {users} (email) VALUES ('ada@example.com')");

        // Rolled back: neither the user nor the job.
        client
            .batch_execute(&format!("BEGIN; {insert}"))
            .await
            .unwrap();
        let rolled = store
            .enqueue_in(&client, job("send_welcome", EnqueueOptions::new()))
            .await
            .unwrap();
        client.batch_execute("ROLLBACK").await.unwrap();
        assert!(store.get_job(rolled.job_id()).await.unwrap().is_none());
        assert_eq!(
            count(&client, &format!("SELECT count(*) FROM {users}")).await,
            0
        );

        // Committed: both, and a refused enqueue between them leaves the
        // transaction usable.
        let keyed = || EnqueueOptions::new().idempotency_key("welcome-ada");
        client
            .batch_execute(&format!("BEGIN; {insert}"))
            .await
            .unwrap();
        let kept = store
            .enqueue_in(&client, job("send_welcome", keyed()))
            .await
            .unwrap();
        let other = NewJob::new("send_welcome", json!(["other"]), keyed()).unwrap();
        let refused = store.enqueue_in(&client, other).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::IdempotencyConflict);
        client.batch_execute("COMMIT").await.unwrap();
        assert!(store.get_job(kept.job_id()).await.unwrap().is_some());
        assert_eq!(
            count(&client, &format!("SELECT count(*) FROM {users}")).await,
            1
        );

        // Outside a transaction: refused, nothing written.
        let jobs = format!("SELECT count(*) FROM {s}.duraq_jobs");
        let before = count(&client, &jobs).await;
        let outside = store
            .enqueue_in(&client, job("send_welcome", EnqueueOptions::new()))
            .await;
        assert_eq!(outside.unwrap_err().code(), ErrorCode::UnsupportedOption);
        assert_eq!(count(&client, &jobs).await, before);
        store.close().await.unwrap();
    }
}
