//! Replacing and cancelling a schedule key's owner inside the application's
//! transaction: on rusqlite (`replace_scheduled_in_transaction`,
//! `cancel_scheduled_in_transaction`) and on sqlx (`replace_scheduled_in`),
//! which borrows the same handle. The key's change commits with the
//! application's rows or not at all; a refused replacement leaves the
//! transaction usable; outside a transaction the call is refused.

use std::time::Duration;

use duraq_core::prelude::*;
use duraq_core::{
    CancelOutcome, EnqueueOptions, ErrorCode, JobStatus, NewJob, RunningOwner, ScheduleKey,
};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::TransactionBehavior::Immediate;
use serde_json::json;

fn reminder(day: i64) -> NewJob {
    let opts = EnqueueOptions::new().run_in(Duration::from_secs(3600));
    NewJob::new("trial_reminder", json!([day]), opts).unwrap()
}

async fn status(store: &SqliteStore, id: &str) -> JobStatus {
    store.get_job(id).await.unwrap().unwrap().status
}

#[tokio::test]
async fn a_key_changes_owner_with_the_callers_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let key = ScheduleKey::new("trial:7").unwrap();
    let first = store
        .replace_scheduled(&key, reminder(1), RunningOwner::KeepRunning)
        .await
        .unwrap()
        .job_id;
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();

    // Rolled back: the first owner stays, the replacement is gone.
    let tx = conn.transaction_with_behavior(Immediate).unwrap();
    let rolled = store
        .replace_scheduled_in_transaction(&tx, &key, reminder(2))
        .unwrap();
    assert_eq!(rolled.previous_job_id.as_deref(), Some(first.as_str()));
    drop(tx);
    assert_eq!(status(&store, &first).await, JobStatus::Queued);
    assert!(store.get_job(&rolled.job_id).await.unwrap().is_none());

    // Committed, after a refused replacement that left it usable.
    let tx = conn.transaction_with_behavior(Immediate).unwrap();
    let opts = EnqueueOptions::new().idempotency_key("k");
    let keyed = NewJob::new("trial_reminder", json!([3]), opts).unwrap();
    let refused = store
        .replace_scheduled_in_transaction(&tx, &key, keyed)
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::UnsupportedOption);
    let second = store
        .replace_scheduled_in_transaction(&tx, &key, reminder(2))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(status(&store, &first).await, JobStatus::Cancelled);
    assert_eq!(status(&store, &second.job_id).await, JobStatus::Queued);

    // Cancelled: rolled back, then committed.
    let tx = conn.transaction_with_behavior(Immediate).unwrap();
    let cancelled = store.cancel_scheduled_in_transaction(&tx, &key).unwrap();
    assert_eq!(cancelled.outcome, CancelOutcome::Cancelled);
    drop(tx);
    assert_eq!(status(&store, &second.job_id).await, JobStatus::Queued);
    let tx = conn.transaction_with_behavior(Immediate).unwrap();
    store.cancel_scheduled_in_transaction(&tx, &key).unwrap();
    tx.commit().unwrap();
    assert_eq!(status(&store, &second.job_id).await, JobStatus::Cancelled);

    // Outside a transaction: refused, nothing written.
    let outside = store.replace_scheduled_in_transaction(&conn, &key, reminder(4));
    assert_eq!(outside.unwrap_err().code(), ErrorCode::UnsupportedOption);
    let owner = store.get_scheduled(&key, false).await.unwrap().current_job;
    assert!(owner.is_none());

    // On sqlx's connection to the same file.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let third = store
        .replace_scheduled_in(&mut *tx, &key, reminder(5))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(status(&store, &third.job_id).await, JobStatus::Queued);
    store.close().await.unwrap();
}
